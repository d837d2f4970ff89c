"""The Array API's data type functions: astype, can_cast, finfo, iinfo, isdtype, result_type.

Promotion is the runtime's (ts.promote_types, numpy's table; NEP 50: a Python scalar is weak, it takes the
other operand's dtype), so these answer as the binary ops promote. Limits come from numpy (ml_dtypes for
bfloat16). The tensors' own conversion is Tensor.astype.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as _np

from tensorsmith import _C

_SIGNED = ("int8", "int16", "int32", "int64")
_UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
_REAL_FLOATING = ("float16", "bfloat16", "float32", "float64")
_COMPLEX_FLOATING = ("complex64", "complex128")
# isdtype's kinds (the standard's names) -> the dtypes of each
_KINDS = {
    "bool": ("bool",),
    "signed integer": _SIGNED,
    "unsigned integer": _UNSIGNED,
    "integral": _SIGNED + _UNSIGNED,
    "real floating": _REAL_FLOATING,
    "complex floating": _COMPLEX_FLOATING,
    "numeric": _SIGNED + _UNSIGNED + _REAL_FLOATING + _COMPLEX_FLOATING,
}


def _dtype_of(value: object, what: str) -> _C.DType:
    """A DType, or a tensor's dtype; anything else is a TypeError naming the argument."""
    if isinstance(value, _C.DType):
        return value
    if isinstance(value, _C.Tensor):
        return value.dtype
    raise TypeError(f"{what} must be a tensorsmith dtype or tensor, not {type(value).__name__}")


def _numpy(dtype: _C.DType) -> _np.dtype:
    return _np.dtype(_ml_dtypes().bfloat16 if dtype == _C.bfloat16 else dtype.name)


def _ml_dtypes():  # noqa: ANN202 - the module
    """ml_dtypes (numpy's bfloat16), imported on first use: importing it takes about 0.6 s (it registers its
    numpy loops), eight times the rest of `import tensorsmith`, and only bfloat16 needs it."""
    import ml_dtypes  # noqa: PLC0415

    return ml_dtypes


def astype(x: _C.Tensor, dtype: _C.DType, /, *, copy: bool = True, device: _C.Device | str | None = None) -> _C.Tensor:
    """x converted to `dtype` (and moved to `device`); with copy=False, x itself when nothing changes."""
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"astype: x must be a tensorsmith tensor, not {type(x).__name__}")
    return x.astype(dtype, copy=copy, device=device)


# astype(tensor, dtype) with nothing recording gradients runs in C (runtime/src/python/fast_calls.cpp); every
# other call, and one that raises, comes to the function above.
astype = _C._fast_astype(astype)


def result_type(*arrays_and_dtypes: object) -> _C.DType:
    """numpy's result_type of these operands, which the runtime's binary ops give two of: dtypes and tensors
    promote as ts.promote_types does, Python bool, int, float and complex scalars are weak (NEP 50): they take
    that dtype unless it cannot hold their kind (an int with bool gives int64, a float with an integer float64,
    a complex with float32 complex64)."""
    if not arrays_and_dtypes:
        raise ValueError("result_type needs at least one dtype or tensor")
    strong, weak = [], []
    for i, value in enumerate(arrays_and_dtypes):
        if isinstance(value, _C.Tensor):  # first: the common case, and a tensor is no scalar
            strong.append(value.dtype)
        elif isinstance(value, (bool, int, float, complex)):
            weak.append(_weak_rank(value))
        else:
            strong.append(_dtype_of(value, f"result_type: argument {i}"))
    if not strong:
        raise ValueError("result_type needs at least one dtype or tensor besides Python scalars")
    return _promoted(tuple(strong), tuple(weak))


# Per weak kind (_weak_rank), the one value that stands for all its values: NEP 50 promotes by kind, not value.
_WEAK_KINDS = (False, 0, 0.0, 0j)


@functools.lru_cache(maxsize=4096)
def _promoted(strong: tuple[_C.DType, ...], weak_ranks: tuple[int, ...]) -> _C.DType:
    """result_type of these dtypes and weak scalars (by _weak_rank: the values themselves would be equal keys,
    0 == 0.0 == 0j), remembered: asking numpy took 5 us a call."""
    weak = [_WEAK_KINDS[rank] for rank in weak_ranks]
    if _C.bfloat16 not in strong:  # numpy's n-ary result_type is not a fold of pairs: int8, uint8, float16 -> float16
        return getattr(_C, _np.result_type(*(_numpy(d) for d in strong), *weak).name)
    dtype = functools.reduce(_C.promote_types, strong)  # with bfloat16, which numpy cannot promote: pairwise
    for scalar in sorted(weak, key=_weak_rank):
        if isinstance(scalar, complex) and not isdtype(dtype, "complex floating"):
            # a real float keeps its precision (float32 + 1j is complex64), anything else is complex128
            dtype = _C.promote_types(dtype, _C.complex64) if isdtype(dtype, "real floating") else _C.complex128
        elif isinstance(scalar, float) and not isdtype(dtype, ("real floating", "complex floating")):
            dtype = _C.float64
        elif not isinstance(scalar, bool) and isinstance(scalar, int) and dtype == _C.bool:
            dtype = _C.int64
    return dtype


def _weak_rank(scalar: object) -> int:
    return 0 if isinstance(scalar, bool) else 1 if isinstance(scalar, int) else 2 if isinstance(scalar, float) else 3


def can_cast(from_: object, to: _C.DType, /) -> bool:
    """Whether `from_` (a dtype or tensor) converts to `to` without loss by the promotion rules: `to` is
    what the two promote to (numpy's "safe" casting)."""
    source, target = _dtype_of(from_, "can_cast: from_"), _dtype_of(to, "can_cast: to")
    return _C.promote_types(source, target) == target


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's name
    """Machine limits of a real floating dtype."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: _C.DType


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801 - the standard's name
    """Machine limits of an integer dtype."""

    bits: int
    max: int
    min: int
    dtype: _C.DType


def finfo(type: object, /) -> finfo_object:  # noqa: A002 - the standard's parameter name
    return _finfo(_dtype_of(type, "finfo: type"))


@functools.lru_cache(maxsize=None)
def _finfo(dtype: _C.DType) -> finfo_object:
    """finfo of a dtype, made once (numpy's finfo and the conversions took 1.8 us a call)."""
    if dtype.name in _COMPLEX_FLOATING:  # a complex dtype's limits are its parts' (the standard's and numpy's)
        dtype = _C.float32 if dtype == _C.complex64 else _C.float64
    if dtype.name not in _REAL_FLOATING:
        raise TypeError(f"finfo: {dtype.name} is not a floating dtype")
    info = (_ml_dtypes().finfo if dtype == _C.bfloat16 else _np.finfo)(_numpy(dtype))
    return finfo_object(int(info.bits), float(info.eps), float(info.max), float(info.min), float(info.smallest_normal), dtype)


def iinfo(type: object, /) -> iinfo_object:  # noqa: A002 - the standard's parameter name
    return _iinfo(_dtype_of(type, "iinfo: type"))


@functools.lru_cache(maxsize=None)
def _iinfo(dtype: _C.DType) -> iinfo_object:
    """iinfo of a dtype, made once."""
    if dtype.name not in _KINDS["integral"]:
        raise TypeError(f"iinfo: {dtype.name} is not an integer dtype")
    info = _np.iinfo(_numpy(dtype))
    return iinfo_object(int(info.bits), int(info.max), int(info.min), dtype)


def isdtype(dtype: _C.DType, kind: object) -> bool:
    """Whether `dtype` is `kind`: a dtype, one of the standard's kind names ('bool', 'signed integer',
    'unsigned integer', 'integral', 'real floating', 'complex floating', 'numeric'), or a tuple of them."""
    if not isinstance(dtype, _C.DType):
        raise TypeError(f"isdtype: dtype must be a tensorsmith dtype, not {type(dtype).__name__}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, _C.DType):
        return dtype == kind
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r} (kinds: {', '.join(map(repr, _KINDS))})")
        return dtype.name in _KINDS[kind]
    raise TypeError(f"isdtype: kind must be a dtype, a kind name or a tuple of them, not {type(kind).__name__}")
