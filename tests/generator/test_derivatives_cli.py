"""The derivative formulas through tsgen: `tsgen ops` lists them, and regen refuses a catalog whose formula
disagrees with finite differences of its reference, before it writes anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_ops_lists_the_formulas(pristine_checkout: Path, tsgen) -> None:
    result = tsgen(pristine_checkout, "ops", "--json")
    rows = {row["op"]: row for row in json.loads(result.stdout)}
    assert rows["tanh"]["derivatives"] == {"x": "grad * conjugate(1 - result * result)", "result": "x_t * (1 - result * result)"}
    assert rows["where"]["derivatives"]["condition"] is None
    assert rows["argmax"]["derivatives"] == "none"
    assert rows["reshape"]["derivatives"] == {"x": "reshape(grad, x.shape)", "result": "reshape(x_t, shape)"}  # composites too
    assert any(row["derivatives"] == "missing" for row in rows.values())
    text = tsgen(pristine_checkout, "ops").stdout
    assert "  tanh: d/dx = grad * conjugate(1 - result * result)" in text
    assert "  tanh: J u = x_t * (1 - result * result)" in text  # the forward formula
    assert "derivatives: " in text and "ops with formulas" in text and "forward formulas (Jacobian-vector products" in text


@pytest.mark.parametrize(
    ("op", "right", "wrong", "entry"),
    [
        ("tanh", "grad * conjugate(1 - result * result)", "grad * conjugate(1 + result * result)", "x"),
        ("multiply", "x1_t * x2 + x1 * x2_t", "x1_t * x2 + x1 * x1_t", "result"),  # a forward formula
    ],
)
def test_regen_refuses_a_wrong_formula_and_writes_nothing(checkout: Path, tsgen, hash_tree, op, right, wrong, entry) -> None:
    before = hash_tree(checkout / "generated")
    spec = checkout / "specs" / f"{op}.yaml"
    text = spec.read_text(encoding="utf-8")
    spec.write_text(text.replace(right, wrong), encoding="utf-8")
    line = next(i for i, row in enumerate(text.splitlines(), start=1) if row.strip().startswith(f"{entry}:"))
    result = tsgen(checkout, "regen", "--no-build")
    assert result.returncode != 0
    assert f"rejected derivative: specs/{op}.yaml:{line}: derivative of {entry}: at {entry}" in result.stdout
    assert "disagree with finite differences" in result.stderr
    assert hash_tree(checkout / "generated") == before


def test_a_call_several_formulas_make_is_computed_once_when_one_of_them_is_wanted() -> None:
    from tensorsmith_forge.generator.dest import shared_calls

    formulas, shared = shared_calls(["norm_grads(grad, x, w)[0]", "norm_grads(grad, x, w)[1]", "grad"])
    assert formulas == ["_shared_0[0]", "_shared_0[1]", "grad"]  # the third is left verbatim
    assert shared == [("_shared_0", "norm_grads(grad, x, w)", (0, 1))]
    # The largest shared call first; a call inside it is computed inside it, and hoisted on its own only where
    # two formulas make it outside the larger one.
    formulas, shared = shared_calls(["f(g(x)) + g(x)", "f(g(x)) * 2", "h(g(x))", "grad * k(x)"])
    assert formulas == ["_shared_0 + _shared_1", "_shared_0 * 2", "h(_shared_1)", "grad * k(x)"]
    assert shared == [("_shared_0", "f(g(x))", (0, 1)), ("_shared_1", "g(x)", (0, 2))]
    assert shared_calls(["a(x) * grad", "b(x) * grad"]) == (["a(x) * grad", "b(x) * grad"], [])


def test_layer_norms_backward_flattens_x_once_for_both_gradients() -> None:
    # specs/layer_norm.yaml's x and weight formulas both call rows_of(x, normalized_shape): the generated backward
    # calls it once when either gradient (or both) is wanted, and not at all for bias alone; the x formula's
    # own rows_of(grad * weight, ...) is one more call, made only when x's gradient is wanted.
    import numpy as np

    import tensorsmith as ts
    from tensorsmith import _derivatives

    calls = []
    original = _derivatives.rows_of

    def counted(*args):
        calls.append(1)
        return original(*args)

    rng = np.random.default_rng(3)
    _derivatives.rows_of = counted
    try:
        for wants in [(True, True, True), (True, False, False), (False, True, False), (False, False, True)]:
            x, w, b = (ts.asarray(rng.standard_normal(shape)) for shape in [(4, 6), (6,), (6,)])
            for t, want in zip((x, w, b), wants):
                t.requires_grad = want
            calls.clear()
            ts.sum(ts.nn.functional.layer_norm(x, (6,), w, b) ** 2.0).backward()
            assert len(calls) == (1 if wants[0] or wants[1] else 0) + (1 if wants[0] else 0), wants
            assert all((t.grad is not None) == want for t, want in zip((x, w, b), wants))
    finally:
        _derivatives.rows_of = original
