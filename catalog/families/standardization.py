"""Standardization: each row along the last axis centred on its mean and scaled by 1 / sqrt(its biased
variance + eps), layer norm's core; or, given gradient rows g of the same shape, that map's vector-Jacobian
product rstd (g - mean(g) - n mean(g n)) with n the standardized row."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..cases import HIDDEN_DISTS, HIDDEN_LAYOUTS, S, CaseTemplate, beyond, odd, pick, random_shape, t
from ..dtypes import Promotion
from .base import FamilyDef

# Rows longer than this are handed to a kernel whole in the threshold cases (past a body's chunking).
LONG_STANDARDIZE_ROW = 1 << 13


def _shown(ctx: Any) -> list[CaseTemplate]:
    arity = len(ctx.names)

    def both(shape: tuple[int, ...], layouts: Any, dist: str, **kwargs: Any) -> CaseTemplate:
        return t([shape] * arity, layouts, dist, **kwargs)

    return [
        both((), "contiguous", "normal"),
        both((1,), "offset", "normal"),
        both((5,), "contiguous", "uniform", eps=0.1),
        both((7,), "strided", "heavy"),
        both((3, 4), "transposed", "normal"),
        both((3, 4), ("contiguous", "negative") if arity == 2 else "contiguous", "uniform", eps=0.0),
        both((2, 3, 4), "contiguous", "normal", eps=1e-3),
        both((2, 3, 4), "negative", "heavy"),
        both((2, 3, 4, 5), "permuted", "normal"),
        both((2, 3, 4, 5), "mixed", "uniform"),
        both((0, 3), "contiguous", "normal"),
        both((3, 0), "contiguous", "normal"),
        both((4, 1029), "offset", "normal"),
        both((1029, 917), "contiguous", "bulk"),
        both((5, 6), "expanded", "normal"),
        both((7, 9), "padded", "lognormal"),
        both((6, S), "contiguous", "specials"),
        both((S, 4), "strided", "specials"),
        both((6, 9), "offset", "large"),
        both((5, 7), "contiguous", "heavy", eps=1e-6),
        both((812,), "contiguous", "lognormal"),
        both((7, 1), "negative", "ties"),
        both((6, 33), "contiguous", "ties", eps=0.0),
        both((4, 64), "contiguous", "ascending"),
    ]


def _eps(rng: np.random.Generator) -> dict[str, float]:
    """The default or a drawn eps. Never 0 here: a row of equal values (a broadcast one) then has a variance
    that is only the rounding of its mean, which two honest sums round differently (the shown cases give 0
    on rows that vary)."""
    if rng.random() < 0.3:
        return {}
    return {"eps": float(pick(rng, (1e-12, 1e-6, 1e-3, 0.5, 2.0)))}


def _hidden(ctx: Any, rng: np.random.Generator) -> list[CaseTemplate]:
    arity = len(ctx.names)
    result = []
    for i in range(9):
        shape = (odd(rng, 3, 3000),) if i < 2 else random_shape(rng, max_rank=4, zero=0.1)
        layouts = tuple(pick(rng, HIDDEN_LAYOUTS) for _ in range(arity))
        result.append(t([shape] * arity, layouts, pick(rng, HIDDEN_DISTS), **_eps(rng)))
    shape = (odd(rng, 101, 301), odd(rng, 101, 301))
    result.append(t([shape] * arity, pick(rng, ("contiguous", "transposed")), "normal", **_eps(rng)))
    return result


def _threshold(ctx: Any, rng: np.random.Generator, limits: Any) -> list[CaseTemplate]:
    arity = len(ctx.names)
    rows = max(2, limits.row_grain // 61) + int(rng.integers(3, 9))  # more rows than one thread takes
    return [
        t([(rows, 61)] * arity, "contiguous", pick(rng, ("normal", "uniform"))),
        t([(int(rng.integers(3, 8)), beyond(rng, LONG_STANDARDIZE_ROW))] * arity, "contiguous", "normal"),
    ]


def _term_magnitudes(arrays: Sequence[np.ndarray], kwargs: dict[str, Any]) -> np.ndarray:
    """Per result element, the magnitude of the terms its float64 value is made of: an honest kernel's
    rounding error grows with them, not with a result that cancels to near zero. The map: rstd (|x| +
    mean |x|), what x - mean is subtracted from (the mean is off by rounding in proportion to mean |x|).
    Its gradient: rstd (|g| + mean |g| + (|n| + 1) mean |g n|)."""
    eps = float(kwargs.get("eps", 1e-5))
    shape = np.shape(arrays[0])
    if math.prod(shape) == 0:
        return np.zeros(shape)  # no rows (np.mean warns of empty ones)
    with np.errstate(all="ignore"):
        *grads, x = (np.asarray(a, dtype=np.float64).reshape(shape or (1,)) for a in arrays)  # a scalar: one row
        mean = np.mean(x, axis=-1, keepdims=True)
        centered = x - mean
        rstd = 1 / np.sqrt(np.mean(centered * centered, axis=-1, keepdims=True) + eps)
        if not grads:
            magnitudes = rstd * (np.abs(x) + np.mean(np.abs(x), axis=-1, keepdims=True))
        else:
            g, n = grads[0], centered * rstd
            gn = np.mean(np.abs(g * n), axis=-1, keepdims=True)
            magnitudes = rstd * (np.abs(g) + np.mean(np.abs(g), axis=-1, keepdims=True) + (np.abs(n) + 1) * gn)
    return magnitudes.reshape(shape)


FAMILY = FamilyDef(
    name="standardization",
    doc="each row along the last axis centred on its mean and scaled by 1 / sqrt(var + eps) (layer norm's "
        "rows), or that map's gradient given rows g",
    arity=(1, 2),
    arguments="/, *, float eps=0.00001",
    promotions=(Promotion.float,),
    required_fields=("output",),
    cpp_enum="ts::Family::Standardization",
    engine_call="ts::python::standardize(*op, {tensors}, eps)",
    # float32 rows are summed in double: x - mean then keeps the digits the float64 reference has
    accumulator=(("float16", "float"), ("bfloat16", "float"), ("float32", "double")),
    contract=(
        ("cpu", "rows x cols, out and x (and g, for the gradient; else null) contiguous row-major; each row on "
                "its own: the mean, the biased variance of x - mean, rstd = 1 / sqrt(variance + eps), then the "
                "op's output per element"),
        ("cuda", "the body of `output(g, x, row_mean, row_rstd, g_mean, gn_mean)`: one output element from its "
                 "inputs (g is 0 for the map itself) and its row's mean and rstd of x, mean of g and mean of "
                 "g (x - row_mean) row_rstd, which tensorsmith/cuda/standardize.cuh computes"),
    ),  # fmt: skip
    # Judged against the magnitude of each result's terms (_term_magnitudes), as sums are.
    tolerances=(("float64", (1e-12, 1e-300)), ("float32", (2e-6, 1e-38)), ("float16", (2e-3, 6e-8)),
                ("bfloat16", (1.6e-2, 1e-38))),  # fmt: skip
    reassociates=True,
    # its means sum the row: special values and magnitudes whose sums overflow in one order and not another
    # stay out of its cases, as out of the sums'
    sums=frozenset({Promotion.float}),
    term_magnitudes=_term_magnitudes,
    shown_cases=_shown,
    hidden_cases=_hidden,
    threshold_cases=_threshold,
)
