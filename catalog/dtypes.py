"""Dtype names and classes a spec may name, and the promotion kinds (how an op's result dtype follows
from its inputs'); the C++ and numpy mapping of each lives in generator/api.py."""

from __future__ import annotations

from enum import Enum

DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
    "float16", "bfloat16", "complex64", "complex128",
)  # fmt: skip  (the runtime's DType order: the 16-bit floats and complex came last)
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
FLOATING = ("float32", "float64", "float16", "bfloat16")  # real floating
COMPLEX = ("complex64", "complex128")
COMPLEX_PART = {"complex64": "float32", "complex128": "float64"}  # the real dtype of a complex dtype's two parts
HALF = ("float16", "bfloat16")  # stored in 16 bits, computed in float
# The Array API's dtype categories: `real` is its "real-valued" (integers and real floats), `numeric` includes
# complex. An op that supports complex numbers names `complex`, `numeric` or `all`.
DTYPE_CLASSES: dict[str, tuple[str, ...]] = {
    "all": DTYPES,
    "numeric": SIGNED + UNSIGNED + FLOATING + COMPLEX,
    "real": SIGNED + UNSIGNED + FLOATING,
    "integer": SIGNED + UNSIGNED,
    "signed": SIGNED,
    "unsigned": UNSIGNED,
    "floating": FLOATING,
    "complex": COMPLEX,
    "bool": ("bool",),
}


class Promotion(Enum):
    same = "same"
    real_valued = "real_valued"  # same, but complex inputs give their parts' real dtype (abs, real, imag)
    float = "float"
    binary = "binary"
    binary_float = "binary_float"
    comparison = "comparison"
    logical = "logical"
    where = "where"
    reduce_same = "reduce_same"
    reduce_sum = "reduce_sum"
    reduce_mean = "reduce_mean"
    reduce_index = "reduce_index"
    reduce_bool = "reduce_bool"


# How many tensor inputs each promotion kind can relate.
PROMOTION_ARITY: dict[Promotion, tuple[int, ...]] = {
    Promotion.same: (1,), Promotion.real_valued: (1,), Promotion.float: (1, 2, 3, 4), Promotion.binary: (1, 2, 3), Promotion.binary_float: (2,),
    Promotion.comparison: (1, 2), Promotion.logical: (1, 2), Promotion.where: (3,), Promotion.reduce_same: (1,),
    Promotion.reduce_sum: (1,), Promotion.reduce_mean: (1,), Promotion.reduce_index: (1,),
    Promotion.reduce_bool: (1,),
}  # fmt: skip
