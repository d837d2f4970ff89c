"""The passes of the differential and sanitizer stages: how the candidate's module is run on the cases.

Each pass is one sandboxed process with its own engine configuration, chosen so that between them every
path a production call can take is taken, and so that no run can be told from production by the kernel:

  release         the release build on every case, on several threads, with mid-sized and large outputs
                  streamed; runs a, b, c, a2 and raw (see runner.py), so cached, memoised, unwritten and
                  uninitialised results show. The large threshold cases get a and raw only.
  release-serial  the release build on every case, on one thread with streaming off (so every run of a
                  pointwise op and every row reaches the kernel in one call, however long), at a lower
                  instruction-set level (TS_ISA), with every input and output against a no-access page
                  (run g): reading or writing one element past either end faults.
  sanitize        ASan + UBSan on the shown and hidden cases up to SANITIZER_CASE_LIMIT elements, with
                  outputs allocated to the exact byte (the redzone starts right after them).

Every run's new memory is filled from a seed drawn for that run (raw: not at all), and before every run
the dead stack of every kernel thread is wiped, so nothing a kernel leaves behind survives to the next call.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .inputs import Case
from .runner import RUNS

SANITIZER_CASE_LIMIT = 1 << 15  # elements per case: sanitized runs stay affordable; larger ones run guarded
THREADS = 3  # several threads (odd: ranges do not split evenly); the machine's core count does not matter


def is_threshold(case: Case) -> bool:
    return case.id.startswith("t")


def _release_runs(case: Case) -> tuple[str, ...]:
    if is_threshold(case):
        return ("a", "raw")
    several = any(len(op.buffer) > 1 for op in case.operands)  # else value set c is value set a or b
    return ("a", "b", "c", "a2", "raw") if several else ("a", "b", "a2", "raw")


@dataclass(frozen=True)
class Pass:
    label: str
    variant: str  # the build (validators/build.py): release, sanitize or the CUDA one
    placement: str  # runner plan: pooled, exact or guard
    runs: Callable[[Case], tuple[str, ...]]
    takes: Callable[[Case], bool]
    env: Callable[[Any], dict[str, str]]  # the engine's configuration, from its limits

    def plan(self, device: str, parity: bool) -> dict[str, Any]:
        """The runner's plan: fresh fill seeds for every run (raw leaves memory as it comes)."""
        fills = {run: None if run == "raw" else secrets.randbits(64) for run in RUNS}
        return {"device": device, "parity": parity, "placement": self.placement, "fills": fills, "scrub": secrets.randbits(64)}


RELEASE = Pass(
    label="release",
    variant="release",
    placement="pooled",
    runs=_release_runs,
    takes=lambda case: True,
    # Outputs from 64 scratch pieces up stream, so the large and mid-sized cases take the streamed path.
    env=lambda limits: {"TS_NUM_THREADS": str(THREADS), "TS_STREAM_MIN_BYTES": str(64 * limits.stream_scratch_bytes)},
)
RELEASE_SERIAL = Pass(
    label="release-serial",
    variant="release",
    placement="guard",
    runs=lambda case: ("g",),
    takes=lambda case: True,
    env=lambda limits: {"TS_NUM_THREADS": "1", "TS_STREAM_MIN_BYTES": str(1 << 62), "TS_ISA": "avx2"},
)
SANITIZE = Pass(
    label="sanitize",
    variant="sanitize",
    placement="exact",
    runs=lambda case: ("a",),
    takes=lambda case: not is_threshold(case) and case.size <= SANITIZER_CASE_LIMIT,
    env=lambda limits: {"TS_NUM_THREADS": "2", "TS_STREAM_MIN_BYTES": str(8 * limits.stream_scratch_bytes)},
)


def cuda_pass(variant: str) -> Pass:
    """A CUDA candidate's run on the GPU: every case, the release pass's runs (placement is a CPU matter)."""
    return Pass(label=variant, variant=variant, placement="pooled", runs=_release_runs, takes=lambda case: True,
                env=lambda limits: {})  # fmt: skip
