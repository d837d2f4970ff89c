"""Reduction: fold the elements over some axes with identity, combine and finalize."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cases import S, CaseTemplate, HIDDEN_DISTS, HIDDEN_LAYOUTS, LONG_ROW, beyond, odd, pick, random_axes, random_shape, t
from ..dtypes import Promotion
from .base import FamilyDef

# Sums are judged against the magnitude of their terms (the gate's Expected.scale), so the absolute part can
# shrink to nothing for float32 and float64, and float64's relative part to double precision: an honest
# float64 sum of millions of terms stays within 1e-12 of sum |x| (a sum kept in float errs by 1e-7 of it).
SUM_TOLERANCES = (("float64", (1e-11, 1e-300)), ("float32", (1.3e-6, 1e-30)))

_SHOWN = [
    t([()], "contiguous", "normal", axis=None, keepdims=False),
    t([()], "offset", "normal", axis=(), keepdims=True),
    t([(0,)], "contiguous", "normal", axis=None, keepdims=False),
    t([(0,)], "contiguous", "normal", axis=0, keepdims=True),
    t([(1,)], "negative", "uniform", axis=0, keepdims=False),
    t([(7,)], "strided", "normal", axis=0, keepdims=False),
    t([(7,)], "negative", "uniform", axis=-1, keepdims=True),
    t([(812,)], "contiguous", "heavy", axis=None, keepdims=False),
    t([(4099,)], "offset", "lognormal", axis=0, keepdims=True),
    t([(1029, 917)], "contiguous", "bulk", axis=1, keepdims=False),
    t([(3, 4)], "transposed", "uniform", axis=None, keepdims=True),
    t([(3, 4)], "contiguous", "normal", axis=0, keepdims=False),
    t([(3, 4)], "padded", "normal", axis=1, keepdims=True),
    t([(5, 6)], "expanded", "normal", axis=0, keepdims=False),
    t([(2, 3, 4)], "contiguous", "normal", axis=(0, 2), keepdims=False),
    t([(2, 3, 4)], "strided", "uniform", axis=(1, 2), keepdims=True),
    t([(2, 3, 4)], "negative", "heavy", axis=(2, 0), keepdims=False),
    t([(2, 3, 4)], "permuted", "normal", axis=(-1, -3), keepdims=True),
    t([(2, 3, 4)], "contiguous", "normal", axis=(), keepdims=False),
    t([(2, 0, 3)], "contiguous", "normal", axis=1, keepdims=False),
    t([(2, 0, 3)], "strided", "normal", axis=(0, 2), keepdims=True),
    t([(2, 3, 4, 5)], "mixed", "normal", axis=(1, 3), keepdims=False),
    t([(2, 3, 4, 5)], "permuted", "uniform", axis=(0, 1, 2, 3), keepdims=True),
    t([(4, 1, 3)], "contiguous", "normal", axis=(0, 1, 2), keepdims=False),
    t([(6, S)], "contiguous", "specials", axis=1, keepdims=False),
    t([(S, 5)], "strided", "specials", axis=None, keepdims=False),
    t([(8, 9)], "transposed", "large", axis=0, keepdims=True),
    t([(5, 7)], "contiguous", "ties", axis=1, keepdims=False),
    t([(4099,)], "contiguous", "ascending", axis=None, keepdims=False),
    t([(812,)], "negative", "descending", axis=0, keepdims=True),
    t([(9, 29)], "strided", "ascending", axis=1, keepdims=False),
]


# all and any: their answer is decided by zeros, which the other distributions hold few of. Mostly zeros (any
# must find the rare nonzero; a row of zeros of both signs is false) and mostly nonzero (all must find the
# rare zero, wherever in the row it is).
_SHOWN_ZEROS = [
    t([(9, 29)], "contiguous", "zeros", axis=1, keepdims=False),
    t([(9, 29)], "contiguous", "few_zeros", axis=1, keepdims=False),
    t([(7, 5, 3)], "strided", "zeros", axis=(0, 2), keepdims=True),
    t([(7, 5, 3)], "negative", "few_zeros", axis=(0, 2), keepdims=True),
    t([(4099,)], "offset", "few_zeros", axis=None, keepdims=False),
    t([(3, 4099)], "transposed", "zeros", axis=0, keepdims=False),
    t([(3, 4099)], "transposed", "few_zeros", axis=0, keepdims=False),
    t([(5, 6)], "expanded", "zeros", axis=1, keepdims=False),
]


def _decided_by_zeros(ctx: Any) -> bool:
    return ctx.spec.promotion is Promotion.reduce_bool


def hidden_reduction(rng: np.random.Generator, single: bool, dists: tuple[str, ...] = HIDDEN_DISTS) -> list[CaseTemplate]:
    """Hidden templates over drawn axes (`single`: one axis or None, as index reductions take)."""
    result = []
    for i in range(9):
        shape = (odd(rng, 3, 6000),) if i < 2 else random_shape(rng, max_rank=4, zero=0.15)
        dist = pick(rng, dists)
        result.append(t([shape], pick(rng, HIDDEN_LAYOUTS), dist, axis=random_axes(rng, len(shape), single),
                         keepdims=bool(rng.random() < 0.5)))  # fmt: skip
    shape = (odd(rng, 101, 301), odd(rng, 101, 301))
    result.append(t([shape], pick(rng, ("contiguous", "transposed", "offset")), pick(rng, ("bulk", "uniform")),
                     axis=random_axes(rng, 2, single), keepdims=bool(rng.random() < 0.5)))  # fmt: skip
    return result


def threshold_reduction(ctx: Any, rng: np.random.Generator, limits: Any) -> list[CaseTemplate]:
    dist = pick(rng, ("uniform", "normal")) if ctx.order_sensitive else pick(rng, ("mixed", "uniform", "ties"))
    whole_rows = limits.split_max_rows + 1  # more rows than the engine splits: each long row reaches the kernel whole
    long_row = beyond(rng, max(LONG_ROW, 2 * limits.split_chunk))
    split_rows = int(rng.integers(1, limits.split_max_rows + 1))  # few long rows: split into chunks and merged
    split_row = beyond(rng, 3 * limits.split_chunk)
    outer = beyond(rng, 4096)  # many outputs side by side, reduced over an outer axis
    return [
        t([(whole_rows, long_row)], "contiguous", dist, axis=-1, keepdims=bool(rng.random() < 0.5)),
        t([(split_rows, split_row)], "contiguous", dist, axis=1, keepdims=False),
        t([(split_row,)], "offset", dist, axis=None, keepdims=False),
        t([(beyond(rng, 128), outer)], "contiguous", dist, axis=0, keepdims=False),
        # few adjacent outputs over a long outer axis: a device splits the axis over blocks
        t([(beyond(rng, 1 << 14), int(rng.integers(3, 40)))], "contiguous", dist, axis=0, keepdims=False),
    ]


FAMILY = FamilyDef(
    name="reduction",
    doc="fold the elements over some axes with the op's identity, combine and finalize",
    arity=(1,),
    arguments="/, *, int[]? axis=None, [ScalarType? dtype=None], bool keepdims=False",
    promotions=(Promotion.reduce_same, Promotion.reduce_sum, Promotion.reduce_mean, Promotion.reduce_bool),
    required_fields=("combine",),
    optional_fields=("identity", "finalize"),
    field_defaults=(("identity", ""), ("finalize", "acc")),
    cpp_enum="ts::Family::Reduction",
    engine_call="ts::python::reduce(*op, {tensors}[0], ts::python::axes_arg(axis), keepdims, {dtype})",
    numpy_method_keywords=True,
    accumulator=(("float16", "float"), ("bfloat16", "float")),  # max/min are exact; sums say their own accumulator (api.kernel_types)
    contract=(
        ("cpu", "for each of n_outer rows, fold n_reduce elements (strides in bytes) with the op's identity, "
                "combine and finalize, and write one output element"),
        ("cuda", "the body of `combine(acc, x)`: fold x (an element or another thread's partial result, as "
                 "acc_t) into acc; it must be associative, since threads, warps and blocks fold in a tree"),
    ),  # fmt: skip
    tolerances=SUM_TOLERANCES,
    reassociates=True,
    sums=frozenset({Promotion.reduce_sum, Promotion.reduce_mean}),
    folds=True,
    shown_cases=lambda ctx: _SHOWN + (_SHOWN_ZEROS if _decided_by_zeros(ctx) else []),
    hidden_cases=lambda ctx, rng: hidden_reduction(
        rng, single=False, dists=HIDDEN_DISTS + ("zeros", "few_zeros") * 3 if _decided_by_zeros(ctx) else HIDDEN_DISTS),
    threshold_cases=threshold_reduction,
)
