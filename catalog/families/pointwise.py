"""Pointwise: one output element from the same element of each (broadcast) input, a functor."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cases import HIDDEN_DISTS, LARGE_RUN, S, CaseTemplate, beyond, broadcast_partner, layouts, odd, pick, random_shape, t
from ..dtypes import Promotion
from .base import FamilyDef

_SHOWN: dict[int, list[CaseTemplate]] = {
    1: [
        t([()], "contiguous", "normal"),
        t([()], "offset", "specials"),
        t([(0,)], "contiguous", "normal"),
        t([(1, 0, 3)], "strided", "normal"),
        t([(1,)], "negative", "uniform"),
        t([(7,)], "strided", "normal"),
        t([(20,)], "negative", "uniform"),
        t([(812,)], "contiguous", "heavy"),
        t([(4099,)], "offset", "lognormal"),
        t([(1029, 917)], "contiguous", "bulk"),
        t([(3, 5)], "transposed", "uniform"),
        t([(5, 7)], "padded", "lognormal"),
        t([(4, 6)], "expanded", "normal"),
        t([(2, 3, 4, 5)], "permuted", "heavy"),
        t([(2, 3, 1, 4, 3)], "mixed", "normal"),
        t([(3, 4, 5)], "negative", "heavy"),
        t([(S,)], "contiguous", "specials"),
        t([(3, S)], "strided", "specials"),
        t([(64,)], "offset", "large"),
        t([(9, 11)], "transposed", "large"),
    ],
    2: [
        t([(), ()], "contiguous", "normal"),
        t([(), ()], "offset", "specials"),
        t([(0,), (0,)], "contiguous", "normal"),
        t([(1, 0, 3), (3,)], ("strided", "contiguous"), "normal"),
        t([(7,), (7,)], ("strided", "negative"), "normal"),
        t([(20,), ()], ("contiguous", "offset"), "uniform"),
        t([(), (20,)], ("offset", "negative"), "heavy"),
        t([(812,), (812,)], "contiguous", "heavy"),
        t([(4099,), (1,)], "offset", "lognormal"),
        t([(1029, 917), (1029, 917)], "contiguous", "bulk"),
        t([(3, 1), (1, 4)], "contiguous", "uniform"),
        t([(3, 5), (3, 5)], "transposed", "normal"),
        t([(5, 7), (5, 7)], ("padded", "expanded"), "lognormal"),
        t([(2, 3, 4), (4,)], ("permuted", "strided"), "normal"),
        t([(4,), (2, 3, 4)], ("negative", "mixed"), "uniform"),
        t([(2, 1, 4, 3), (5, 1, 3)], "strided", "heavy"),
        t([(2, 3, 4, 5), (2, 3, 4, 5)], ("permuted", "mixed"), "normal"),
        t([(4, 6), (4, 6)], "expanded", "normal"),
        t([(3, 4, 5), (3, 4, 5)], "negative", "heavy"),
        t([(S, 1), (1, S)], "contiguous", "specials"),
        t([(S, 1), (1, S)], ("strided", "negative"), "specials"),
        t([(64,), (64,)], "offset", "large"),
        t([(9, 11), (11,)], ("transposed", "contiguous"), "large"),
        t([(6, 7), (6, 7)], "contiguous", "ties"),
    ],
    3: [
        t([(), (), ()], "contiguous", "normal"),
        t([(), (), ()], "offset", "specials"),
        t([(0,), (0,), (0,)], "contiguous", "normal"),
        t([(1, 0, 3), (3,), (2, 1, 1)], "strided", "normal"),
        t([(7,), (7,), (7,)], ("strided", "negative", "offset"), "normal"),
        t([(20,), (), (20,)], ("contiguous", "offset", "negative"), "uniform"),
        t([(812,), (812,), (812,)], "contiguous", "heavy"),
        t([(4099,), (4099,), (1,)], "offset", "lognormal"),
        t([(1029, 917), (1029, 917), (1029, 917)], "contiguous", "bulk"),
        t([(3, 1), (1, 4), (3, 4)], "contiguous", "uniform"),
        t([(3, 5), (3, 5), (3, 5)], "transposed", "normal"),
        t([(5, 7), (5, 7), (5, 7)], ("padded", "expanded", "mixed"), "lognormal"),
        t([(2, 3, 4), (4,), ()], ("permuted", "strided", "contiguous"), "normal"),
        t([(4,), (2, 3, 4), (3, 1)], ("negative", "mixed", "expanded"), "uniform"),
        t([(2, 3, 4, 5), (2, 1, 4, 5), (5,)], ("permuted", "strided", "negative"), "heavy"),
        t([(S, S), (S, 1), (1, S)], "contiguous", "specials"),
        t([(S, S), (S, 1), (1, S)], ("negative", "strided", "transposed"), "specials"),
        t([(64,), (64,), (64,)], "offset", "large"),
        t([(6, 7), (6, 7), (6, 7)], "contiguous", "ties"),
    ],
}


def _shown(ctx: Any) -> list[CaseTemplate]:
    return _SHOWN[len(ctx.names)]


def _hidden(ctx: Any, rng: np.random.Generator) -> list[CaseTemplate]:
    arity = len(ctx.names)
    result = []

    def add(out_shape: tuple[int, ...], dist: str | None = None) -> None:
        shapes = [out_shape] + [broadcast_partner(rng, out_shape) for _ in range(arity - 1)]
        order = rng.permutation(arity)  # the full shape is not always the first operand
        shapes = [shapes[i] for i in order]
        result.append(t(shapes, layouts(rng, arity), dist or pick(rng, HIDDEN_DISTS)))

    for _ in range(3):
        add((odd(rng, 3, 6000),))
    for _ in range(3):
        add(random_shape(rng, max_rank=5))
    add(random_shape(rng, max_rank=3, zero=1.0))
    add((), dist="mixed")
    add(random_shape(rng, max_rank=3), dist="mixed")
    add((odd(rng, 101, 301), odd(rng, 101, 301)), dist=pick(rng, ("bulk", "uniform", "mixed")))
    return result


def _threshold(ctx: Any, rng: np.random.Generator, limits: Any) -> list[CaseTemplate]:
    n = beyond(rng, max(LARGE_RUN, 2 * limits.pointwise_grain))
    return [t([(n,)] * len(ctx.names), "contiguous", pick(rng, ("uniform", "mixed", "normal")))]


FAMILY = FamilyDef(
    name="pointwise",
    doc="one output element from the same element of each (broadcast) input",
    arity=(1, 2, 3),
    arguments="/",
    promotions=(Promotion.same, Promotion.real_valued, Promotion.float, Promotion.binary, Promotion.binary_float,
                Promotion.comparison, Promotion.logical, Promotion.where),  # fmt: skip
    required_fields=("expr",),
    # fast_when (a predicate on each element's inputs) and fast_expr (equal to expr wherever it holds, cheaper):
    # the CPU template runs fast_expr over contiguous blocks whose every element meets fast_when
    optional_fields=("fast_when", "fast_expr"),
    field_defaults=(("fast_when", ""), ("fast_expr", "")),
    field_pairs=(("fast_when", "fast_expr"),),
    judged_in_ulps=True,
    checks_domain=True,
    cpp_enum="ts::Family::Pointwise",
    engine_call="ts::python::pointwise_into(*op, {tensors}, out)",
    takes_out=True,
    fast_calls=True,
    contract=(
        ("cpu", "one run of n elements: data[0] is the output, data[1..] the inputs; strides are in bytes "
                "and may be 0 (broadcast) or anything else (views)"),
        ("cuda", "the body of `apply`, one element: return the output for the given input values (already "
                 "converted to compute_t); the machinery handles indexing, broadcasting and vector loads"),
    ),  # fmt: skip
    shown_cases=_shown,
    hidden_cases=_hidden,
    threshold_cases=_threshold,
)
