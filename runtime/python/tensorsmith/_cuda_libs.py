"""Preloads cuBLAS from the nvidia-cublas wheel, when it is installed, for a tensorsmith built with CUDA.

The runtime opens cuBLAS by its soname (libcublas.so.<CUDA major>) at the first float matmul on a GPU
(runtime/src/cuda/blas.cpp); a library already loaded under that soname is the one it gets, so loading the
wheel's copy here makes the wheel work without LD_LIBRARY_PATH. Without the wheel nothing is loaded: a system
cuBLAS is found by the loader's usual search, and when there is none the first GPU matmul says how to get it.
"""

from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path
from typing import Any


def preload_cublas(build_info: dict[str, Any]) -> ctypes.CDLL | None:
    if not build_info["cuda"]:
        return None
    library = cublas_from_wheel(build_info["cuda_runtime_version"].split(".")[0])
    return None if library is None else ctypes.CDLL(str(library), mode=ctypes.RTLD_LOCAL)


def cublas_from_wheel(major: str) -> Path | None:
    """The nvidia-cublas wheel's libcublas.so.<major>, where that wheel is installed. The acceptance gate
    (validators/gate.py) finds it here too, for the kernels it runs on a GPU."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        library = Path(root) / f"cu{major}" / "lib" / f"libcublas.so.{major}"
        if library.exists():
            return library
    return None
