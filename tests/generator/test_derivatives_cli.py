"""The derivative formulas through tsgen: `tsgen ops` lists them, and regen refuses a catalog whose formula
disagrees with finite differences of its reference, before it writes anything."""

from __future__ import annotations

import json
from pathlib import Path


def test_ops_lists_the_formulas(pristine_checkout: Path, tsgen) -> None:
    result = tsgen(pristine_checkout, "ops", "--json")
    rows = {row["op"]: row for row in json.loads(result.stdout)}
    assert rows["tanh"]["derivatives"] == {"x": "grad * (1 - result * result)"}
    assert rows["where"]["derivatives"]["condition"] is None
    assert rows["argmax"]["derivatives"] == "none"
    assert rows["reshape"]["derivatives"] == {"x": "reshape(grad, x.shape)"}  # composites too
    assert any(row["derivatives"] == "missing" for row in rows.values())
    text = tsgen(pristine_checkout, "ops").stdout
    assert "  tanh: d/dx = grad * (1 - result * result)" in text
    assert "derivatives: " in text and "ops with formulas" in text


def test_regen_refuses_a_wrong_formula_and_writes_nothing(checkout: Path, tsgen, hash_tree) -> None:
    before = hash_tree(checkout / "generated")
    spec = checkout / "specs" / "tanh.yaml"
    text = spec.read_text(encoding="utf-8")
    spec.write_text(text.replace("grad * (1 - result * result)", "grad * (1 + result * result)"), encoding="utf-8")
    line = next(i for i, row in enumerate(text.splitlines(), start=1) if row.strip().startswith("x:"))
    result = tsgen(checkout, "regen", "--no-build")
    assert result.returncode != 0
    assert f"rejected derivative: specs/tanh.yaml:{line}: derivative of x: at x" in result.stdout
    assert "disagree with finite differences" in result.stderr
    assert hash_tree(checkout / "generated") == before
