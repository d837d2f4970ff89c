"""The memory-bandwidth bound a benchmark run measures for itself.

Two probes, on one buffer far larger than the caches, each timed as the median of several runs:
  * `c-threads`: a small C helper (compiled here with the system's C compiler, loaded with ctypes) copying
    the buffer with one thread per core, each on its own contiguous slice;
  * `numpy-copy`: np.copyto of the same buffer (one thread).
The bound is the faster of the two, in GB/s of bytes moved (bytes read + bytes written, what a pointwise op's
GB/s counts too). The C probe is skipped, and the output says so, when no C compiler is found.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

C_SOURCE = r"""
#include <pthread.h>
#include <stdint.h>
#include <string.h>

struct slice { char* dst; const char* src; size_t n; };

static void* copy_slice(void* arg) {
  struct slice* s = (struct slice*)arg;
  memcpy(s->dst, s->src, s->n);
  return 0;
}

int parallel_copy(char* dst, const char* src, size_t n, int threads) {
  pthread_t ids[64];
  struct slice slices[64];
  if (threads < 1 || threads > 64) return -1;
  size_t chunk = (n / threads + 63) / 64 * 64;
  int started = 0;
  for (int t = 0; t < threads; ++t) {
    size_t begin = (size_t)t * chunk, end = begin + chunk < n ? begin + chunk : n;
    if (begin >= end) break;
    slices[t] = (struct slice){dst + begin, src + begin, end - begin};
    if (pthread_create(&ids[t], 0, copy_slice, &slices[t]) != 0) return -1;
    ++started;
  }
  for (int t = 0; t < started; ++t) pthread_join(ids[t], 0);
  return 0;
}
"""


@dataclass(frozen=True)
class Bound:
    gbps: float  # the bound: the faster probe
    method: str  # which probe gave it
    probes: dict[str, float]  # every probe that ran, GB/s
    notes: tuple[str, ...]  # probes that could not run, and why
    buffer_bytes: int

    def describe(self) -> str:
        probes = ", ".join(f"{name} {gbps:.1f} GB/s" for name, gbps in self.probes.items())
        return (f"bandwidth bound {self.gbps:.1f} GB/s ({self.method}; copy of {self.buffer_bytes >> 20} MiB, read + write "
                f"counted; probes: {probes})")


def measure(buffer_bytes: int = 256 << 20, repeats: int = 7, threads: int | None = None) -> Bound:
    threads = threads or os.cpu_count() or 1
    src = np.ones(buffer_bytes, dtype=np.uint8)
    dst = np.zeros_like(src)
    moved = 2 * buffer_bytes
    probes: dict[str, float] = {}
    notes: list[str] = []

    probes["numpy-copy"] = moved / _median_seconds(lambda: np.copyto(dst, src), repeats) / 1e9
    with tempfile.TemporaryDirectory(prefix="ts-bench-") as tmp:
        library, why = _compile_helper(Path(tmp))
        if library is None:
            notes.append(f"c-threads probe skipped: {why}")
        else:
            copy = library.parallel_copy
            copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            copy.restype = ctypes.c_int
            if copy(dst.ctypes.data, src.ctypes.data, buffer_bytes, threads) != 0:
                notes.append("c-threads probe failed: pthread_create refused")
            else:
                seconds = _median_seconds(lambda: copy(dst.ctypes.data, src.ctypes.data, buffer_bytes, threads), repeats)
                probes[f"c-threads({threads})"] = moved / seconds / 1e9
    method = max(probes, key=probes.__getitem__)
    return Bound(probes[method], method, probes, tuple(notes), buffer_bytes)


def _compile_helper(tmp: Path) -> tuple[ctypes.CDLL | None, str]:
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None, "no C compiler (set CC or install gcc)"
    source, library = tmp / "bandwidth.c", tmp / "bandwidth.so"
    source.write_text(C_SOURCE)
    result = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-pthread", str(source), "-o", str(library)],
                            capture_output=True, text=True)  # fmt: skip
    if result.returncode != 0:
        return None, f"{compiler} failed: {result.stderr.strip()[:200]}"
    return ctypes.CDLL(str(library)), ""


def _median_seconds(fn, repeats: int) -> float:
    fn()  # first touch of the pages
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)
