"""Scan: the running fold of the elements along one axis (cumulative sums and products), with the op's
identity and combine; include_initial starts each line with the identity."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cases import S, CaseTemplate, HIDDEN_DISTS, HIDDEN_LAYOUTS, beyond, odd, pick, random_shape, t
from ..dtypes import Promotion
from .base import FamilyDef
from .reduction import SUM_TOLERANCES

_SHOWN = [
    t([()], "contiguous", "normal", axis=None, include_initial=False),
    t([()], "offset", "normal", axis=-1, include_initial=True),
    t([(0,)], "contiguous", "normal", axis=None, include_initial=False),
    t([(0,)], "contiguous", "normal", axis=0, include_initial=True),
    t([(1,)], "negative", "uniform", axis=0, include_initial=False),
    t([(7,)], "strided", "normal", axis=None, include_initial=True),
    t([(7,)], "negative", "uniform", axis=-1, include_initial=False),
    t([(812,)], "contiguous", "heavy", axis=None, include_initial=False),
    t([(4099,)], "offset", "lognormal", axis=0, include_initial=True),
    t([(1029, 917)], "contiguous", "bulk", axis=1, include_initial=False),
    t([(1029, 917)], "contiguous", "bulk", axis=0, include_initial=True),
    t([(3, 4)], "transposed", "uniform", axis=0, include_initial=True),
    t([(3, 4)], "contiguous", "normal", axis=0, include_initial=False),
    t([(3, 4)], "padded", "normal", axis=1, include_initial=True),
    t([(5, 6)], "expanded", "normal", axis=0, include_initial=False),
    t([(5, 6)], "expanded", "normal", axis=1, include_initial=True),
    t([(2, 3, 4)], "negative", "heavy", axis=1, include_initial=False),
    t([(2, 3, 4)], "permuted", "normal", axis=-3, include_initial=True),
    t([(2, 3, 4)], "contiguous", "uniform", axis=2, include_initial=False),
    t([(2, 0, 3)], "contiguous", "normal", axis=1, include_initial=True),
    t([(2, 0, 3)], "strided", "normal", axis=0, include_initial=False),
    t([(2, 3, 4, 5)], "mixed", "normal", axis=2, include_initial=False),
    t([(6, S)], "contiguous", "specials", axis=1, include_initial=False),
    t([(S, 5)], "strided", "specials", axis=0, include_initial=True),
    t([(S,)], "negative", "specials", axis=None, include_initial=False),
    t([(8, 9)], "transposed", "large", axis=0, include_initial=False),
    t([(5, 7)], "contiguous", "ties", axis=1, include_initial=False),
    t([(4099,)], "contiguous", "ascending", axis=None, include_initial=False),
    t([(812,)], "negative", "descending", axis=0, include_initial=True),
    t([(9, 29)], "strided", "ascending", axis=1, include_initial=False),
]


def _axis(rng: np.random.Generator, rank: int) -> int | None:
    """An axis of `rank` (None only where numpy allows it: 0-d and 1-D), negative sometimes."""
    if rank <= 1 and rng.random() < 0.4:
        return None
    axis = int(rng.integers(max(rank, 1)))
    return axis - max(rank, 1) if rng.random() < 0.4 else axis


def _hidden(ctx: Any, rng: np.random.Generator) -> list[CaseTemplate]:
    result = []
    for i in range(9):
        shape = (odd(rng, 3, 6000),) if i < 2 else random_shape(rng, max_rank=4, zero=0.15)
        result.append(t([shape], pick(rng, HIDDEN_LAYOUTS), pick(rng, HIDDEN_DISTS), axis=_axis(rng, len(shape)),
                         include_initial=bool(rng.random() < 0.5)))  # fmt: skip
    shape = (odd(rng, 101, 301), odd(rng, 101, 301))
    result.append(t([shape], pick(rng, ("contiguous", "transposed", "offset")), pick(rng, ("bulk", "uniform")),
                     axis=int(rng.integers(2)), include_initial=bool(rng.random() < 0.5)))  # fmt: skip
    return result


def _threshold(ctx: Any, rng: np.random.Generator, limits: Any) -> list[CaseTemplate]:
    dist = pick(rng, ("uniform", "normal")) if ctx.order_sensitive else pick(rng, ("mixed", "uniform", "ties"))
    tiled = beyond(rng, limits.scan_tile)  # more adjacent columns than one call scans: cut into tiles
    rows = beyond(rng, limits.scan_grain // 64)  # many short rows, split over threads in blocks
    return [
        t([(int(rng.integers(3, 9)), tiled)], "contiguous", dist, axis=0, include_initial=bool(rng.random() < 0.5)),
        t([(3, int(rng.integers(5, 40)), tiled)], "contiguous", dist, axis=1, include_initial=False),
        t([(rows, 67)], "contiguous", dist, axis=-1, include_initial=bool(rng.random() < 0.5)),
        t([(beyond(rng, 4 * limits.scan_grain),)], "offset", dist, axis=None, include_initial=False),
    ]


FAMILY = FamilyDef(
    name="scan",
    doc="the running fold of the elements along one axis, with the op's identity and combine",
    arity=(1,),
    arguments="/, *, int? axis=None, [ScalarType? dtype=None], bool include_initial=False",
    promotions=(Promotion.reduce_sum,),
    required_fields=("identity", "combine"),
    cpp_enum="ts::Family::Scan",
    engine_call="ts::python::scan(*op, {tensors}[0], ts::python::axis_arg(axis), include_initial, {dtype})",
    contract=(
        ("cpu", "the body of `combine(acc, x)`: fold the next element x (as acc_t) into the running value acc; "
                "the runtime (tensorsmith/scan_lines.h) runs it along every line in order"),
        ("cuda", "the body of `combine(acc, x)`: fold x (an element or a partial result of later elements, as "
                 "acc_t) into acc; it must be associative, since warps and blocks scan in a tree"),
    ),  # fmt: skip
    tolerances=SUM_TOLERANCES,
    reassociates=True,
    sums=frozenset({Promotion.reduce_sum}),
    shown_cases=lambda ctx: _SHOWN,
    hidden_cases=_hidden,
    threshold_cases=_threshold,
)
