"""Loads the OpenBLAS that tensorsmith._C links (from the scipy-openblas64 wheel) before _C is imported.

_C also carries an rpath to the wheel's lib/ beside it in site-packages; loading the library first makes the
import work wherever pip put the wheel. RTLD_LOCAL (unlike `import scipy_openblas64`, which loads it globally)
keeps its symbols out of the global namespace, so numpy and others keep the BLAS they were built with.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from pathlib import Path

# OpenBLAS starts threads of its own at load and, each time one is woken, it polls for work for about 2**28 cycles
# (0.1 s) before it sleeps. tensorsmith's GEMMs never run on them (runtime/src/core/blas.cpp hands OpenBLAS's jobs
# to the engines' pool as a gang), so a polling one only takes a core from a gang's job, which the others wait
# for: on 2 cores most 128x128 float32 products stalled for a scheduler slice (4 ms instead of 40 us). They are
# told to sleep at once (2**4 cycles, the least OpenBLAS takes) unless the environment says otherwise; the variable
# is set only while the library loads, which is when OpenBLAS reads it, so numpy's OpenBLAS and child processes
# keep their own.
THREAD_TIMEOUT = "OPENBLAS_THREAD_TIMEOUT"
QUIET_THREADS = "4"


def load_openblas() -> ctypes.CDLL:
    spec = importlib.util.find_spec("scipy_openblas64")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("tensorsmith needs the scipy-openblas64 package (its BLAS): pip install scipy-openblas64")
    lib_dir = Path(next(iter(spec.submodule_search_locations))) / "lib"
    libraries = sorted(lib_dir.glob("libscipy_openblas64_*.so*"))
    if not libraries:
        raise ImportError(f"scipy-openblas64 is installed but {lib_dir} holds no libscipy_openblas64_*.so")
    given = os.environ.get(THREAD_TIMEOUT)
    if given is None:
        os.environ[THREAD_TIMEOUT] = QUIET_THREADS
    try:
        return ctypes.CDLL(str(libraries[0]), mode=ctypes.RTLD_LOCAL)
    finally:
        if given is None:
            del os.environ[THREAD_TIMEOUT]
