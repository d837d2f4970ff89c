"""Contraction: batched matrix products, C = A @ B."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cases import CaseTemplate, HIDDEN_DISTS, LONG_K, beyond, broadcast_partner, layouts, odd, pick, random_shape, t
from ..dtypes import Promotion
from .base import FamilyDef
from .reduction import SUM_TOLERANCES

_SHOWN = [
    t([(3,), (3,)], "contiguous", "normal"),
    t([(1,), (1,)], "offset", "uniform"),
    t([(2, 3), (3,)], "contiguous", "normal"),
    t([(3,), (3, 4)], ("negative", "strided"), "normal"),
    t([(2, 3), (3, 4)], "transposed", "uniform"),
    t([(5, 2, 3), (3, 4)], "contiguous", "heavy"),
    t([(2, 1, 2, 3), (4, 3, 2)], ("strided", "permuted"), "normal"),
    t([(3, 1, 4, 5), (2, 5, 3)], "mixed", "normal"),
    t([(2, 0), (0, 3)], "contiguous", "normal"),
    t([(0, 3), (3, 2)], "contiguous", "normal"),
    t([(4, 0, 3), (3, 2)], "strided", "normal"),
    t([(1, 70), (70, 130)], "contiguous", "uniform"),
    t([(67, 129), (129, 65)], "contiguous", "normal"),
    t([(7, 5), (5, 9)], "strided", "lognormal"),
    t([(6, 5), (5, 7)], "negative", "normal"),
    t([(3, 4, 5), (5, 6)], ("expanded", "contiguous"), "normal"),
    t([(4, 5), (2, 5, 6)], ("contiguous", "expanded"), "uniform"),
    t([(4, 5), (5, 6)], "padded", "heavy"),
    t([(2, 3, 4, 5), (5, 3)], ("permuted", "offset"), "normal"),
    t([(5, 6), (6, 4)], "contiguous", "specials"),
    t([(4, 6), (6, 5)], ("transposed", "strided"), "specials"),
    t([(9, 11), (11, 8)], "contiguous", "ties"),
    t([(), (3,)], "contiguous", "normal"),
    t([(3,), (4,)], "contiguous", "normal"),
]


def _hidden(ctx: Any, rng: np.random.Generator) -> list[CaseTemplate]:
    result = []
    for i in range(9):
        m, k, n = (int(rng.integers(1, 34)) for _ in range(3))
        if i == 0:
            k = 0 if rng.random() < 0.5 else k
        batch = random_shape(rng, max_rank=2, budget=12) if rng.random() < 0.5 else ()
        other = broadcast_partner(rng, batch)
        a, b = batch + (m, k), other + (k, n)
        if i == 1:
            a = (k,)
        if i == 2:
            b = (k,)
        if rng.random() < 0.5:
            a, b = (other + (m, k), batch + (k, n)) if len(a) > 1 and len(b) > 1 else (a, b)
        result.append(t([a, b], layouts(rng, 2), pick(rng, HIDDEN_DISTS)))
    m, k, n = (odd(rng, 41, 141) for _ in range(3))
    result.append(t([(m, k), (k, n)], layouts(rng, 2), "normal"))
    return result


def _threshold(ctx: Any, rng: np.random.Generator, limits: Any) -> list[CaseTemplate]:
    del limits  # the contraction engine hands the kernel whole matrices
    m, n = (int(rng.integers(20, 60)) * 2 + 1 for _ in range(2))
    k = beyond(rng, LONG_K)
    big = (beyond(rng, 512), beyond(rng, 64), beyond(rng, 512))
    return [
        t([(m, k), (k, n)], "contiguous", "normal"),
        t([(big[0], big[1]), (big[1], big[2])], ("contiguous", "transposed"), "uniform"),
    ]


FAMILY = FamilyDef(
    name="contraction",
    doc="batched matrix products, C = A @ B, over broadcast batch dimensions",
    arity=(2,),
    arguments="/",
    promotions=(Promotion.binary,),
    required_fields=(),
    cpp_enum="ts::Family::Contraction",
    engine_call="[&] {{ const auto t = {tensors}; return ts::python::contract(*op, t[0], t[1]); }}()",
    # float16/bfloat16 accumulate in float, float32 and float64 in double
    accumulator=(("float16", "float"), ("bfloat16", "float"), ("float32", "double"), ("float64", "double")),
    contract=(
        ("cpu", "batched C = A (m x k) @ B (k x n); C contiguous row-major; A[b][i, p] at a + b * a_batch_stride + "
                "i * a_row_stride + p * a_col_stride, B likewise, strides in elements (batch strides may be 0); each "
                "of A and B is row-major (col_stride 1) or column-major (row_stride 1, a transposed view)"),
        ("cuda", "the body of `tile(args, b, row0, col0)`: the kTile x kTile tile of C[b] at (row0, col0), with "
                 "A and B laid out as on the CPU, "
                 "computed by a kTile x kTile thread block (__shared__ and __syncthreads() allowed)"),
    ),  # fmt: skip
    tolerances=SUM_TOLERANCES,
    reassociates=True,
    sums=frozenset({Promotion.binary}),
    shown_cases=lambda ctx: _SHOWN,
    hidden_cases=_hidden,
    threshold_cases=_threshold,
)
