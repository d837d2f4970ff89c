"""Which committed kernels `tsgen validate --changed-since REV` judges.

A kernel is judged when REV's MANIFEST.json does not record its present Gate.identity as accepted: its
translation unit, spec, op table, the gate or the runtime changed since, or REV predates the record. The
identity is recomputed here from the working tree, never read from the working tree's manifest, which an
author can edit; REV's manifest is the trusted side (REV passed CI). A kernel whose own part
(Gate.kernel_identity) REV recorded as it is now changed only through what every kernel shares, the gate or
the runtime: `--shared-sample K` judges K of those per family and device (drawn with the salt) instead of
all, so a runtime change costs a CI run the same however large the catalog grows; the scheduled CI job
judges the whole catalog. `--sample N` adds N of the unchanged kernels, drawn with the gate's secret salt so
no author can know which will be re-judged under fresh hidden cases. `--shard K/N` keeps the kernels of one
of N shards (a CI matrix without a cluster): each kernel's shard follows from its name alone, so N machines
that select the same kernels judge each once between them.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .manifest import OutputRecord

K = TypeVar("K")


SHARED_CHANGE = "the gate or the runtime changed, not the kernel"


@dataclass(frozen=True)
class Selection:
    judged: list[tuple[object, str]]  # (kernel, why it is judged), in the given order
    unchanged: int  # kernels left out: REV accepted them exactly as they are
    shared_left: int = 0  # kernels left out that changed only through the gate or the runtime (--shared-sample)


def changed_since(kernels: Sequence[K], key: Callable[[K], tuple[str, str]], identity: Callable[[K], str],
                  base: dict[tuple[str, str], OutputRecord], sample: int, salt: bytes,
                  kernel_identity: Callable[[K], str] | None = None, group: Callable[[K], str] = lambda k: "the catalog",
                  shared_sample: int | None = None) -> Selection:  # fmt: skip
    """The kernels to judge, in the given order: every one whose (op, device) `key` REV's `base` records with
    another identity (or none), and `sample` of the others. With `shared_sample` K, of the kernels whose own
    part (`kernel_identity`) REV recorded as it is now, only K per `group` are judged."""
    why: dict[int, str] = {}  # by position in `kernels`
    unchanged, shared = [], []
    for i, kernel in enumerate(kernels):
        record = base.get(key(kernel))
        if record is None:
            why[i] = "new since the base"
        elif record.judged_sha256 is None:
            why[i] = "the base's manifest records no judged identity"
        elif record.judged_sha256 == identity(kernel):
            unchanged.append(i)
        elif kernel_identity is not None and record.kernel_sha256 is not None and record.kernel_sha256 == kernel_identity(kernel):
            shared.append(i)
        else:
            why[i] = "changed since the base (kernel, spec, op table, gate or runtime)"
    left = []  # shared changes not drawn: they join the unchanged ones --sample draws from
    if shared_sample is None:
        why |= dict.fromkeys(shared, SHARED_CHANGE)
    else:
        groups: dict[str, list[int]] = {}
        for i in shared:
            groups.setdefault(group(kernels[i]), []).append(i)
        for name, members in sorted(groups.items()):
            drawn = set(_draw(members, shared_sample, salt + name.encode()))
            why |= {i: f"{SHARED_CHANGE}: drawn for {name}" for i in drawn}
            left += [i for i in members if i not in drawn]
    for i in _draw(sorted(unchanged + left), sample, salt):
        why[i] = "unchanged, drawn for a re-judgement under fresh hidden cases" if i in unchanged else f"{SHARED_CHANGE}: drawn"
    judged = [(kernels[i], why[i]) for i in sorted(why)]
    return Selection(judged, len(unchanged) - sum(i in why for i in unchanged), sum(i not in why for i in left))


def _draw(positions: list[int], n: int, salt: bytes) -> list[int]:
    """n of `positions`, chosen by the secret salt (one machine draws the same ones each time)."""
    rng = random.Random(hashlib.sha256(b"tsgen validate --sample\0" + salt).digest())
    return rng.sample(positions, min(n, len(positions)))


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` (1 <= K <= N) as (K, N); ValueError naming the form otherwise."""
    k, sep, n = text.partition("/")
    if not (sep and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise ValueError(f"--shard takes K/N with 1 <= K <= N (3/4: the third of four shards), not {text!r}")
    return int(k), int(n)


def in_shard(key: tuple[str, str], shard: tuple[int, int]) -> bool:
    """Whether the kernel (op, device) belongs to shard K of N: by a hash of its name, so the same kernel is in
    the same shard on every machine and in every selection."""
    k, n = shard
    digest = hashlib.sha256(f"{key[0]}.{key[1]}".encode()).digest()
    return int.from_bytes(digest[:8], "little") % n == k - 1
