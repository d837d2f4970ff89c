"""Update: an optimizer's step. Every tensor but the last is state (the parameter first, then its moments)
updated in place, element by element, from the last (the gradient) and the op's own float arguments: one pass
over memory per parameter tensor where the same step in array ops takes a dozen."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..cases import HIDDEN_DISTS, HIDDEN_LAYOUTS, LARGE_RUN, S, CaseTemplate, beyond, odd, pick, random_shape, t
from ..dtypes import Promotion
from .base import FamilyDef

# The values a case gives the op's float arguments (learning rates, betas, eps, weight decay, bias corrections
# all lie among them): a shown case takes them in turn, a hidden one draws them. Not 0: a reference may divide by
# one (lr / bias_correction1), which Python's floats refuse where numpy's arrays give inf.
SCALAR_VALUES = (0.9, 0.999, 1e-3, 1e-8, 0.01, 0.5, 0.1, 1.0, 1e-5, 2.0, 0.25)


def scalar_names(ctx: Any) -> list[str]:
    """The op's own float arguments, in its signature's order."""
    return [a.name for a in ctx.spec.signature.arguments if a.kind == "keyword"]


def _turns(ctx: Any, start: int) -> dict[str, float]:
    names = scalar_names(ctx)
    return {name: SCALAR_VALUES[(start + i) % len(SCALAR_VALUES)] for i, name in enumerate(names)}


def _drawn(ctx: Any, rng: np.random.Generator) -> dict[str, float]:
    return {name: float(pick(rng, SCALAR_VALUES)) for name in scalar_names(ctx)}


def _shown(ctx: Any) -> list[CaseTemplate]:
    arity = len(ctx.names)

    def same(k: int, shape: tuple[int, ...], layouts: Any, dist: str) -> CaseTemplate:
        return t([shape] * arity, layouts, dist, **_turns(ctx, k))

    shapes_and_layouts: list[tuple[tuple[int, ...], Any, str]] = [
        ((), "contiguous", "normal"),
        ((0,), "contiguous", "normal"),
        ((1,), "offset", "uniform"),
        ((7,), "strided", "normal"),
        ((20,), "negative", "heavy"),
        ((812,), "contiguous", "lognormal"),
        ((4099,), "offset", "normal"),
        ((517, 917), "contiguous", "bulk"),  # beyond a thread's share, four operands of it
        ((3, 5), "transposed", "uniform"),
        ((5, 7), "padded", "lognormal"),
        ((4, 6), "expanded", "normal"),
        ((2, 3, 4, 5), "permuted", "heavy"),
        ((3, 4, 5), "mixed", "normal"),
        ((S,), "contiguous", "specials"),
        ((3, S), "strided", "specials"),
        ((64,), "offset", "large"),
        ((6, 7), "contiguous", "ties"),
    ]
    return [same(k, shape, layouts, dist) for k, (shape, layouts, dist) in enumerate(shapes_and_layouts)]


def _hidden(ctx: Any, rng: np.random.Generator) -> list[CaseTemplate]:
    arity = len(ctx.names)
    result = []
    for i in range(8):
        shape = (odd(rng, 3, 6000),) if i < 3 else random_shape(rng, max_rank=4, zero=0.1)
        layouts = tuple(pick(rng, HIDDEN_LAYOUTS) for _ in range(arity))
        result.append(t([shape] * arity, layouts, pick(rng, HIDDEN_DISTS), **_drawn(ctx, rng)))
    return result


def _threshold(ctx: Any, rng: np.random.Generator, limits: Any) -> list[CaseTemplate]:
    n = beyond(rng, max(LARGE_RUN, 2 * limits.pointwise_grain))
    return [t([(n,)] * len(ctx.names), "contiguous", pick(rng, ("uniform", "normal")), **_drawn(ctx, rng))]


def _term_magnitudes(arrays: Sequence[np.ndarray], kwargs: dict[str, Any]) -> np.ndarray:
    """Per element of the stacked new state, the largest magnitude among the operands at that element: a step
    that cancels (p - lr m / denominator with the two terms close) leaves a result far below the terms, and an
    honest kernel's rounding error is relative to them."""
    with np.errstate(all="ignore"):
        largest = np.fmax.reduce([np.abs(np.asarray(a, dtype=np.float64)) for a in arrays])
    return np.broadcast_to(largest, (len(arrays) - 1, *np.shape(largest)))


FAMILY = FamilyDef(
    name="update",
    doc="an optimizer's step: the state tensors (parameter first) updated in place, elementwise, from the last "
        "tensor (the gradient) and the op's float arguments",
    arity=(2, 3, 4),
    arguments="/, *",  # then the op's own float arguments (own_scalars)
    own_scalars=True,
    promotions=(Promotion.float,),
    required_fields=("update",),
    assigned_fields=("update",),
    cpp_enum="ts::Family::Update",
    engine_call="ts::python::update(*op, {{{handles}}}, {{{labels}}}, {{{scalars}}})",
    # every dtype steps in double. In float (PyTorch's way, three times faster for AdamW's division and square root:
    # 0.5 against 1.7 ns an element on one AVX2 core) a moment that cancels (b2 v + (1 - b2) g^2 with v < 0, which
    # the gate draws) loses its digits, and the step divided by its square root is off by 7e-5 of itself
    accumulator=(("float16", "double"), ("bfloat16", "double"), ("float32", "double")),
    contract=(
        ("cpu", "n elements, each tensor contiguous: data[0..states) the state (parameter first), updated in "
                "place, data[states] the gradient, read only; scalars[] the op's float arguments in order"),
        ("cuda", "the body of `apply(state, grad, scalars)`: one element's state values (in acc_t, parameter "
                 "first) updated in place from its gradient; the machinery loads and stores them"),
    ),  # fmt: skip
    # The step in double rounded once to the dtype: an ulp or two of the larger of the result and the largest
    # operand at the element (_term_magnitudes); float64: the step's own roundings, a few dozen at most.
    tolerances=(("float64", (1e-14, 1e-300)), ("float32", (3e-7, 1e-44)), ("float16", (2e-3, 6e-8)),
                ("bfloat16", (1.6e-2, 1e-40))),  # fmt: skip
    term_magnitudes=_term_magnitudes,
    shown_cases=_shown,
    hidden_cases=_hidden,
    threshold_cases=_threshold,
)
