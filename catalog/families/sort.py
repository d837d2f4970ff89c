"""Sort: each line along one axis in order (stable; descending keeps ties in order too), as the sorted
values (sort) or the positions they came from (argsort). The kernel's body is the comparator; the runtime's
stable sorts are the loop around it (tensorsmith/sort_rows.h): on the CPU, rows of real numbers by keys in
numpy's order (tensorsmith/radix_sort.h: short rows of 32- and 64-bit keys by a sorting network in AVX2 or
AVX-512 registers, tensorsmith/sort_network.h; rows from 128 elements, 512 for 64-bit types, by a radix
sort), each result checked pair by pair with the comparator; other rows and those where the comparator
disagrees by a sample sort into ordered buckets placed by rank; a branch-free merge sort for complex values,
short rows and CUDA."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cases import S, CaseTemplate, HIDDEN_LAYOUTS, odd, pick, random_shape, t
from ..dtypes import Promotion
from .base import FamilyDef

# Ties and special values decide a sort's correctness (stability, where NaN and -0.0 go); ordinary data
# reaches the radix passes, bucket splits and merge passes.
_DISTS = ("ties", "ties", "specials", "normal", "uniform", "mixed", "heavy", "ascending", "descending")

_SHOWN = [
    t([(0,)], "contiguous", "normal", axis=-1, descending=False),
    t([(1,)], "negative", "uniform", axis=0, descending=True),
    t([(7,)], "strided", "ties", axis=-1, descending=False),
    t([(7,)], "negative", "ties", axis=0, descending=True),
    t([(17,)], "contiguous", "normal", axis=-1, descending=False),
    t([(812,)], "contiguous", "ties", axis=-1, descending=False),
    t([(812,)], "offset", "ties", axis=-1, descending=True),
    t([(4099,)], "offset", "lognormal", axis=0, descending=False),
    t([(3, 4)], "transposed", "uniform", axis=0, descending=False),
    t([(3, 4)], "contiguous", "ties", axis=1, descending=True),
    t([(3, 4)], "padded", "normal", axis=-1, descending=False),
    t([(5, 6)], "expanded", "ties", axis=0, descending=False),
    t([(5, 6)], "expanded", "normal", axis=1, descending=True),
    t([(2, 3, 4)], "negative", "heavy", axis=1, descending=False),
    t([(2, 3, 4)], "permuted", "ties", axis=-3, descending=True),
    t([(2, 0, 3)], "contiguous", "normal", axis=1, descending=False),
    t([(2, 0, 3)], "strided", "normal", axis=0, descending=True),
    t([(2, 3, 4, 5)], "mixed", "ties", axis=2, descending=False),
    t([(6, S)], "contiguous", "specials", axis=1, descending=False),
    t([(6, S)], "contiguous", "specials", axis=1, descending=True),
    t([(S, 5)], "strided", "specials", axis=0, descending=False),
    t([(S,)], "negative", "specials", axis=0, descending=True),
    t([(8, 9)], "transposed", "large", axis=0, descending=False),
    t([(4099,)], "contiguous", "ascending", axis=-1, descending=False),
    t([(4099,)], "contiguous", "ascending", axis=-1, descending=True),
    t([(812,)], "negative", "descending", axis=0, descending=False),
    t([(9, 29)], "strided", "descending", axis=1, descending=True),
    t([(1029, 917)], "contiguous", "bulk", axis=1, descending=False),
]


def _hidden(ctx: Any, rng: np.random.Generator) -> list[CaseTemplate]:
    result = []
    for i in range(9):
        shape = (odd(rng, 3, 6000),) if i < 2 else random_shape(rng, max_rank=4, zero=0.15) or (odd(rng, 3, 99),)
        axis = int(rng.integers(len(shape)))
        result.append(t([shape], pick(rng, HIDDEN_LAYOUTS), pick(rng, _DISTS), axis=axis - len(shape) if rng.random() < 0.4 else axis,
                        descending=bool(rng.random() < 0.5)))  # fmt: skip
    return result


def _threshold(ctx: Any, rng: np.random.Generator, limits: Any) -> list[CaseTemplate]:
    rows = limits.sort_grain // 61 + int(rng.integers(3, 40))  # more rows than one thread takes
    return [
        t([(rows, 61)], "contiguous", pick(rng, ("ties", "uniform")), axis=1, descending=bool(rng.random() < 0.5)),
        t([(odd(rng, 1 << 15, 1 << 16),)], "offset", pick(rng, ("ties", "normal")), axis=0, descending=bool(rng.random() < 0.5)),
    ]


FAMILY = FamilyDef(
    name="sort",
    doc="each line along one axis in stable order, as values (sort) or source positions (argsort)",
    arity=(1,),
    arguments="/, *, int axis=-1, bool descending=False, bool stable=True",
    promotions=(Promotion.reduce_same, Promotion.reduce_index),
    required_fields=(),
    cpp_enum="ts::Family::Sort",
    engine_call="ts::python::sort(*op, {tensors}[0], axis, descending, stable)",
    contract=(
        ("cpu", "the body of `less(a, b)` (compute_t): whether a goes before b in ascending order, a strict weak "
                "order; the runtime sorts each row stably by it, branch-free, so combine comparisons with `|` and "
                "`&` rather than `||` and `&&` (a short circuit becomes a branch that mispredicts on every other "
                "element and halves the sort's speed)"),
        ("cuda", "the body of `less(a, b)` (compute_t): whether a goes before b in ascending order, a strict weak "
                 "order; the runtime sorts each row stably by it"),
    ),  # fmt: skip
    tolerances=(("float16", (0.0, 0.0)), ("bfloat16", (0.0, 0.0)), ("float32", (0.0, 0.0)), ("float64", (0.0, 0.0))),
    shown_cases=lambda ctx: _SHOWN,
    hidden_cases=_hidden,
    threshold_cases=_threshold,
)
