"""The vocabulary a family's gate case tables are written in: a case template (shapes, layouts, value
distribution, keyword arguments) before the gate gives it values, and the random draws hidden and
threshold templates are made of. validators/inputs.py turns templates into cases."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

S = -1  # in a template shape: as many elements as the dtype's special-value set has

# What hidden templates draw from (repeats weigh a choice).
HIDDEN_LAYOUTS = ("contiguous", "offset", "transposed", "permuted", "strided", "negative", "padded", "expanded",
                  "mixed", "mixed", "strided", "negative")  # fmt: skip
HIDDEN_DISTS = ("normal", "uniform", "heavy", "lognormal", "mixed", "mixed", "specials", "large", "ties", "ascending",
                "descending")  # fmt: skip

# Large cases reach past the sizes a kernel could single out: more than 2**20 elements in one kernel call,
# rows longer than 2**17 handed over whole, softmax rows beyond 2**15, matmul's k beyond 2**11. The engine
# decides what a call holds (chunks, pieces, thread ranges), so the shapes derive from its limits and the
# gate runs them on one thread with streaming off (every run in one call) as well as split and streamed.
LARGE_RUN = 1 << 21  # pointwise elements in one call, at least
LONG_ROW = 1 << 17  # reduced elements in one row handed to the kernel whole, at least
LONG_SOFTMAX_ROW = 1 << 15
LONG_K = 1 << 11


@dataclass(frozen=True)
class CaseTemplate:
    shapes: tuple[tuple[int, ...], ...]
    layouts: tuple[str, ...]
    dist: str
    kwargs: tuple[tuple[str, Any], ...] = ()
    inside_domain: bool = True  # False: values ignore the spec's domain, so the engine must raise


def t(shapes, layouts, dist, **kwargs) -> CaseTemplate:
    """A template: one shape per tensor input, one layout for all or one each, a distribution, kwargs."""
    layouts = (layouts,) * len(shapes) if isinstance(layouts, str) else tuple(layouts)
    return CaseTemplate(tuple(tuple(s) for s in shapes), layouts, dist, tuple(kwargs.items()))


def odd(rng: np.random.Generator, low: int, high: int) -> int:
    return int(rng.integers(low // 2, high // 2)) * 2 + 1


def random_shape(rng: np.random.Generator, max_rank: int = 5, budget: int = 4000, zero: float = 0.0) -> tuple:
    rank = int(rng.integers(1, max_rank + 1))
    dims = [int(rng.choice([1, 2, 3, 4, 5, 6, 7, 9, 11, 13])) for _ in range(rank)]
    while math.prod(dims) > budget:
        dims[int(np.argmax(dims))] //= 2
    if zero and rng.random() < zero:
        dims[int(rng.integers(rank))] = 0
    return tuple(dims)


def broadcast_partner(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts against `shape`: a suffix of it, some dims set to 1."""
    drop = int(rng.integers(0, len(shape) + 1))
    return tuple(1 if rng.random() < 0.3 else n for n in shape[drop:])


def pick(rng: np.random.Generator, options: Sequence[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


def layouts(rng: np.random.Generator, count: int) -> tuple[str, ...]:
    return tuple(pick(rng, HIDDEN_LAYOUTS) for _ in range(count))


def random_axes(rng: np.random.Generator, rank: int, single: bool) -> Any:
    roll = rng.random()
    if roll < 0.2 or rank == 0:
        return None
    if single or roll < 0.5:
        axis = int(rng.integers(rank))
        return axis - rank if rng.random() < 0.4 else axis
    count = int(rng.integers(0, rank + 1))
    axes = [int(a) for a in rng.permutation(rank)[:count]]
    return tuple(a - rank if rng.random() < 0.3 else a for a in axes)


def beyond(rng: np.random.Generator, at_least: int) -> int:
    """An odd extent a little past `at_least` (at most a sixteenth more; never a power of two or a multiple
    of a vector width)."""
    return at_least + 2 * int(rng.integers(1, max(2, at_least // 32))) + 1
