"""Index reduction: the int64 index of the best element along one axis (or of all)."""

from __future__ import annotations

from ..cases import S, t
from ..dtypes import Promotion
from .base import FamilyDef
from .reduction import hidden_reduction, threshold_reduction

_SHOWN = [
    t([()], "contiguous", "normal", axis=None, keepdims=False),
    t([()], "offset", "normal", axis=0, keepdims=True),
    t([(0,)], "contiguous", "normal", axis=None, keepdims=False),
    t([(1,)], "negative", "uniform", axis=0, keepdims=False),
    t([(7,)], "strided", "normal", axis=0, keepdims=False),
    t([(7,)], "negative", "uniform", axis=-1, keepdims=True),
    t([(812,)], "contiguous", "heavy", axis=None, keepdims=False),
    t([(4099,)], "offset", "lognormal", axis=0, keepdims=True),
    t([(1029, 917)], "contiguous", "bulk", axis=1, keepdims=False),
    t([(3, 4)], "transposed", "uniform", axis=None, keepdims=True),
    t([(3, 4)], "contiguous", "normal", axis=0, keepdims=False),
    t([(3, 4)], "padded", "normal", axis=1, keepdims=True),
    t([(5, 6)], "expanded", "ties", axis=0, keepdims=False),
    t([(5, 6)], "expanded", "ties", axis=1, keepdims=True),
    t([(2, 3, 4)], "negative", "heavy", axis=1, keepdims=False),
    t([(2, 3, 4)], "permuted", "normal", axis=-3, keepdims=True),
    t([(2, 0, 3)], "contiguous", "normal", axis=1, keepdims=False),
    t([(2, 0, 3)], "strided", "normal", axis=0, keepdims=True),
    t([(2, 3, 4, 5)], "mixed", "normal", axis=2, keepdims=False),
    t([(6, S)], "contiguous", "specials", axis=1, keepdims=False),
    t([(S, 5)], "strided", "specials", axis=0, keepdims=True),
    t([(S, 3)], "negative", "specials", axis=None, keepdims=False),
    t([(8, 9)], "transposed", "large", axis=0, keepdims=True),
    t([(5, 7)], "contiguous", "ties", axis=1, keepdims=False),
    t([(5, 7)], "negative", "ties", axis=None, keepdims=False),
    t([(4, 9)], "strided", "ties", axis=0, keepdims=True),
    t([(4099,)], "contiguous", "ascending", axis=None, keepdims=False),
    t([(812,)], "negative", "descending", axis=0, keepdims=True),
    t([(9, 29)], "strided", "ascending", axis=1, keepdims=False),
]


FAMILY = FamilyDef(
    name="index_reduction",
    doc="the int64 index of the best element along one axis, or of all (the first of ties)",
    arity=(1,),
    arguments="/, *, int? axis=None, bool keepdims=False",
    promotions=(Promotion.reduce_index,),
    required_fields=("better",),
    cpp_enum="ts::Family::IndexReduction",
    engine_call="ts::python::index_reduce(*op, {tensors}[0], ts::python::axis_arg(axis), keepdims)",
    contract=(
        ("cpu", "for each of n_outer rows, write the int64 index of the best of n_reduce elements (first wins)"),
        ("cuda", "the body of `better(x, best)`: whether x beats best (ties keep the first index)"),
    ),
    folds=True,
    shown_cases=lambda ctx: _SHOWN,
    hidden_cases=lambda ctx, rng: hidden_reduction(rng, single=True),
    threshold_cases=threshold_reduction,
)
