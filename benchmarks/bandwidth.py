"""The memory-bandwidth bound a benchmark run measures for itself.

Probes on buffers far larger than the caches, each timed as the median of several runs:
  * `c-threads`: a small C helper (compiled here with the system's C compiler, loaded with ctypes) copying
    between buffers of its own (2 MiB-aligned, advised onto huge pages, as the runtime's large blocks are) with
    one thread per core, each on its own contiguous slice: once with memcpy and, on x86, once with
    non-temporal stores (`c-threads(N), streamed`), which do not read the destination's lines before
    filling them, as the runtime's large outputs do not;
  * `numpy-copy`: np.copyto between two numpy arrays (one thread).
The bound is the fastest probe, in GB/s of bytes moved (bytes read + bytes written, what a pointwise op's
GB/s counts too). The C probes are skipped, and the output says so, when no C compiler is found.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

C_SOURCE = r"""
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* A buffer on huge pages where the kernel grants them (numpy's arrays are not, here). */
char* huge_buffer(size_t n) {
  void* p = 0;
  if (posix_memalign(&p, (size_t)2 << 20, n) != 0) return 0;
#ifdef MADV_HUGEPAGE
  madvise(p, n, MADV_HUGEPAGE);
#endif
  memset(p, 1, n);
  return (char*)p;
}

void free_buffer(char* p) { free(p); }

struct slice { char* dst; const char* src; size_t n; int streamed; };

/* Non-temporal stores where the ISA has them: a plain store reads each line before it fills it, so a copy
   that streams moves a third less than memcpy's bytes through memory (the runtime streams large outputs). */
static int stream_slice(struct slice* s) {
#ifdef __SSE2__
  size_t i = 0;
  if ((uintptr_t)s->dst % 16 != 0) return 0;
  for (; i + 16 <= s->n; i += 16) {
    _mm_stream_si128((__m128i*)(s->dst + i), _mm_loadu_si128((const __m128i*)(s->src + i)));
  }
  memcpy(s->dst + i, s->src + i, s->n - i);
  _mm_sfence();
  return 1;
#else
  (void)s;
  return 0;
#endif
}

static void* copy_slice(void* arg) {
  struct slice* s = (struct slice*)arg;
  if (!s->streamed || !stream_slice(s)) memcpy(s->dst, s->src, s->n);
  return 0;
}

/* Whether parallel_copy(..., streamed=1) really streams here. */
int can_stream(void) {
#ifdef __SSE2__
  return 1;
#else
  return 0;
#endif
}

int parallel_copy(char* dst, const char* src, size_t n, int threads, int streamed) {
  pthread_t ids[64];
  struct slice slices[64];
  if (threads < 1 || threads > 64) return -1;
  size_t chunk = (n / threads + 63) / 64 * 64;
  int started = 0;
  for (int t = 0; t < threads; ++t) {
    size_t begin = (size_t)t * chunk, end = begin + chunk < n ? begin + chunk : n;
    if (begin >= end) break;
    slices[t] = (struct slice){dst + begin, src + begin, end - begin, streamed};
    if (pthread_create(&ids[t], 0, copy_slice, &slices[t]) != 0) return -1;
    ++started;
  }
  for (int t = 0; t < started; ++t) pthread_join(ids[t], 0);
  return 0;
}
"""


class CopyProbe:
    """One probe, its buffers kept, ready to run again: on a shared machine the bound drifts (the same copy
    measured 57 and 100 GB/s minutes apart), so the benchmark re-measures it beside each case that goes to DRAM."""

    def __init__(self, name: str, run: Callable[[], None], buffer_bytes: int, release: Callable[[], None] | None = None):
        self.name, self.buffer_bytes = name, buffer_bytes
        self._run, self._release = run, release

    def __call__(self) -> None:
        self._run()

    def gbps(self, seconds: float) -> float:
        """GB/s of one copy that took `seconds` (read + write counted)."""
        return 2 * self.buffer_bytes / seconds / 1e9

    def close(self) -> None:
        if self._release is not None:
            self._release()
            self._release = None

    def __del__(self) -> None:
        self.close()


@dataclass(frozen=True)
class Bound:
    gbps: float  # the bound: the faster probe
    method: str  # which probe gave it
    probes: dict[str, float]  # every probe that ran, GB/s
    notes: tuple[str, ...]  # probes that could not run, and why
    buffer_bytes: int
    probe: CopyProbe | None = field(default=None, compare=False, repr=False)  # the fastest, to run again

    def describe(self) -> str:
        probes = ", ".join(f"{name} {gbps:.1f} GB/s" for name, gbps in self.probes.items())
        return (f"bandwidth bound {self.gbps:.1f} GB/s ({self.method}; copy of {self.buffer_bytes >> 20} MiB, read + write "
                f"counted; probes: {probes})")


def measure(buffer_bytes: int = 256 << 20, repeats: int = 7, threads: int | None = None) -> Bound:
    threads = threads or os.cpu_count() or 1
    src = np.ones(buffer_bytes, dtype=np.uint8)
    dst = np.zeros_like(src)
    candidates = [CopyProbe("numpy-copy", lambda: np.copyto(dst, src), buffer_bytes)]
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ts-bench-") as tmp:
        library, why = _compile_helper(Path(tmp))  # stays loaded once its file is gone
    if library is None:
        notes.append(f"c-threads probe skipped: {why}")
    else:
        for streamed in (False, True) if library.can_stream() else (False,):
            name = f"c-threads({threads}){', streamed' if streamed else ''}"
            probe, why = _c_threads_probe(library, name, buffer_bytes, threads, streamed)
            if probe is None:
                notes.append(f"{name} probe failed: {why}")
            else:
                candidates.append(probe)
    probes = {probe.name: probe.gbps(_median_seconds(probe, repeats)) for probe in candidates}
    fastest = max(candidates, key=lambda probe: probes[probe.name])
    for probe in candidates:
        if probe is not fastest:
            probe.close()
    return Bound(probes[fastest.name], fastest.name, probes, tuple(notes), buffer_bytes, fastest)


def _c_threads_probe(library: ctypes.CDLL, name: str, buffer_bytes: int, threads: int,
                     streamed: bool) -> tuple[CopyProbe | None, str]:
    library.huge_buffer.argtypes = [ctypes.c_size_t]
    library.huge_buffer.restype = ctypes.c_void_p
    library.free_buffer.argtypes = [ctypes.c_void_p]
    library.parallel_copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
    library.parallel_copy.restype = ctypes.c_int
    src, dst = library.huge_buffer(buffer_bytes), library.huge_buffer(buffer_bytes)

    def release() -> None:
        for buffer in (src, dst):
            if buffer:
                library.free_buffer(buffer)

    if not src or not dst:
        release()
        return None, f"could not allocate 2 x {buffer_bytes >> 20} MiB"
    if library.parallel_copy(dst, src, buffer_bytes, threads, streamed) != 0:
        release()
        return None, "pthread_create refused"
    return CopyProbe(name, lambda: library.parallel_copy(dst, src, buffer_bytes, threads, streamed), buffer_bytes, release), ""


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
