"""Normalization: each row along one axis rescaled from its maximum and sum of exponentials (softmax)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cases import S, CaseTemplate, HIDDEN_DISTS, HIDDEN_LAYOUTS, LONG_SOFTMAX_ROW, beyond, odd, pick, random_shape, t
from ..dtypes import Promotion
from .base import FamilyDef

_SHOWN = [
    t([()], "contiguous", "normal", axis=-1),
    t([(1,)], "offset", "normal", axis=-1),
    t([(5,)], "contiguous", "uniform", axis=0),
    t([(7,)], "strided", "heavy", axis=-1),
    t([(3, 4)], "transposed", "normal", axis=-1),
    t([(3, 4)], "contiguous", "uniform", axis=0),
    t([(2, 3, 4)], "contiguous", "normal", axis=1),
    t([(2, 3, 4)], "negative", "heavy", axis=-3),
    t([(2, 3, 4, 5)], "permuted", "normal", axis=2),
    t([(2, 3, 4, 5)], "mixed", "uniform", axis=-1),
    t([(0, 3)], "contiguous", "normal", axis=-1),
    t([(3, 0)], "contiguous", "normal", axis=-1),
    t([(3, 0)], "strided", "normal", axis=0),
    t([(4, 1029)], "offset", "normal", axis=-1),
    t([(1029, 917)], "contiguous", "bulk", axis=0),
    t([(5, 6)], "expanded", "normal", axis=1),
    t([(5, 6)], "expanded", "uniform", axis=0),
    t([(7, 9)], "padded", "lognormal", axis=-1),
    t([(6, S)], "contiguous", "specials", axis=-1),
    t([(S, 4)], "strided", "specials", axis=0),
    t([(6, 9)], "offset", "large", axis=-1),
    t([(5, 7)], "contiguous", "heavy", axis=-1),
    t([(812,)], "contiguous", "lognormal", axis=0),
    t([(7, 1)], "negative", "ties", axis=-1),
]


def _hidden(ctx: Any, rng: np.random.Generator) -> list[CaseTemplate]:
    result = []
    for i in range(9):
        shape = (odd(rng, 3, 3000),) if i < 2 else random_shape(rng, max_rank=4, zero=0.1)
        axis = int(rng.integers(len(shape)))
        axis = axis - len(shape) if rng.random() < 0.5 else axis
        result.append(t([shape], pick(rng, HIDDEN_LAYOUTS), pick(rng, HIDDEN_DISTS), axis=axis))
    shape = (odd(rng, 101, 301), odd(rng, 101, 301))
    result.append(t([shape], pick(rng, ("contiguous", "transposed")), "normal", axis=int(rng.integers(-2, 2))))
    return result


def _threshold(ctx: Any, rng: np.random.Generator, limits: Any) -> list[CaseTemplate]:
    rows = max(2, limits.row_grain // LONG_SOFTMAX_ROW) + int(rng.integers(3, 9))
    return [
        t([(rows, beyond(rng, LONG_SOFTMAX_ROW))], "contiguous", pick(rng, ("normal", "uniform")), axis=-1),
        t([(beyond(rng, LONG_SOFTMAX_ROW // 2), int(rng.integers(3, 8)))], "contiguous", "normal", axis=0),
    ]


FAMILY = FamilyDef(
    name="normalization",
    doc="each row along one axis normalised on its own from its maximum and its sum of exp(x - max)",
    arity=(1,),
    arguments="/, *, int axis=-1",
    promotions=(Promotion.float,),
    required_fields=("output",),
    cpp_enum="ts::Family::Normalization",
    engine_call="ts::python::normalize(*op, {tensors}[0], axis)",
    accumulator=(("float16", "float"), ("bfloat16", "float")),
    contract=(
        ("cpu", "rows x cols, input and output contiguous row-major; each row normalised on its own"),
        ("cuda", "the body of `output(x, row_max, row_sum)`: one output element from its input and its "
                 "row's maximum and sum of exp(x - row_max)"),
    ),  # fmt: skip
    # Every probability, however small, is judged relative to itself (a probability flushed to zero is 100%
    # wrong even at 1e-13); the absolute part only covers subnormal results (4 units of the smallest
    # subnormal). float64 is held to double precision (exp computed in float is 6e-8 off).
    tolerances=(("float64", (1e-12, 2e-323)), ("float32", (1e-5, 5.6e-45)), ("float16", (2e-3, 2.4e-7)),
                ("bfloat16", (1.6e-2, 3.7e-40))),  # fmt: skip
    reassociates=True,
    shown_cases=lambda ctx: _SHOWN,
    hidden_cases=_hidden,
    threshold_cases=_threshold,
)
