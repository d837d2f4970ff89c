"""Tensorsmith: a tensor runtime whose kernels are generated from op specs.

The public API lives in the native module ``tensorsmith._C`` (the hand-written
tensor, dtype and interop bindings plus the generated ops); it is re-exported
here whole, so newly generated ops need no edit to this file.
"""

import math as _math

from tensorsmith._blas import load_openblas as _load_openblas

_openblas = _load_openblas()  # before _C, which links it

from tensorsmith import _C  # noqa: E402
from tensorsmith._C import *  # noqa: E402, F403
from tensorsmith._cuda_libs import preload_cublas as _preload_cublas  # noqa: E402

_cublas = _preload_cublas(_C.build_info())  # None unless built with CUDA and the nvidia-cublas wheel is installed

from tensorsmith._data_types import astype, can_cast, finfo, iinfo, isdtype, result_type  # noqa: E402
from tensorsmith._namespace_info import __array_namespace_info__  # noqa: E402
from tensorsmith import random  # noqa: E402  (ts.random.Generator)
from tensorsmith import autograd  # noqa: E402
from tensorsmith.autograd import enable_grad, no_grad, set_grad_enabled  # noqa: E402
from tensorsmith.autograd import _gradient_at  # noqa: E402, F401  (the derivative helpers' at_index finds it here)
from tensorsmith import nn, optim  # noqa: E402

# The Array API's constants (newaxis indexes as None does).
e = _math.e
pi = _math.pi
inf = _math.inf
nan = _math.nan
newaxis = None

__all__ = [name for name in dir(_C) if not name.startswith("_")] + [
    "__array_namespace_info__", "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    "e", "pi", "inf", "nan", "newaxis", "random", "autograd", "no_grad", "enable_grad", "set_grad_enabled", "nn", "optim",
]  # fmt: skip
__array_api_version__ = "2024.12"


def __getattr__(name: str) -> str:
    """__version__, read from the installed package's metadata when first asked for: importlib.metadata takes
    about a quarter of `import tensorsmith`."""
    if name == "__version__":
        from importlib.metadata import version  # noqa: PLC0415

        globals()["__version__"] = version("tensorsmith")
        return globals()["__version__"]
    raise AttributeError(f"module 'tensorsmith' has no attribute {name!r}")
