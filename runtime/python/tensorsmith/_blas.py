"""Loads the OpenBLAS that tensorsmith._C links (from the scipy-openblas64 wheel) before _C is imported.

_C also carries an rpath to the wheel's lib/ beside it in site-packages; loading the library first makes the
import work wherever pip put the wheel. RTLD_LOCAL (unlike `import scipy_openblas64`, which loads it globally)
keeps its symbols out of the global namespace, so numpy and others keep the BLAS they were built with.
"""

from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path


def load_openblas() -> ctypes.CDLL:
    spec = importlib.util.find_spec("scipy_openblas64")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("tensorsmith needs the scipy-openblas64 package (its BLAS): pip install scipy-openblas64")
    lib_dir = Path(next(iter(spec.submodule_search_locations))) / "lib"
    libraries = sorted(lib_dir.glob("libscipy_openblas64_*.so*"))
    if not libraries:
        raise ImportError(f"scipy-openblas64 is installed but {lib_dir} holds no libscipy_openblas64_*.so")
    return ctypes.CDLL(str(libraries[0]), mode=ctypes.RTLD_LOCAL)
