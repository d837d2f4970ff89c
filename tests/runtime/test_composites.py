"""Composite ops (specs with `implementation:`, the core's own functions): every example call of every
spec against its numpy reference, on two dtypes, and the generated binding, doc and stub."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorsmith as ts
from tensorsmith_forge.catalog.model import CompositeSpec, load_catalog

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(ROOT)
CALLS = [(spec, i) for spec in CATALOG.composites for i in range(len(spec.examples))]


def _call(spec: CompositeSpec, example: int, dtype: str, rng: np.random.Generator) -> tuple[list, dict, list]:
    """(positional, keyword) arguments for tensorsmith and the reference's arguments, in signature order."""
    values = dict(spec.examples[example])
    positional, keywords, reference = [], {}, []
    for arg in spec.signature.arguments:
        if arg.name not in values:
            reference.append(arg.default_value)
            continue
        value: Any = values[arg.name]
        if arg.type.is_tensor:
            array = (rng.standard_normal(value) * 100).astype(dtype)
            value, ref = ts.asarray(array), array
        else:
            ref = value
        (positional.append(value) if arg.kind == "positional" else keywords.__setitem__(arg.name, value))
        reference.append(ref)
    return positional, keywords, reference


def test_the_catalog_has_composites() -> None:
    names = {spec.name for spec in CATALOG.composites}
    assert {"reshape", "permute_dims", "squeeze", "broadcast_to"} <= names  # guards against a parser that finds none


@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize(("spec", "example"), CALLS, ids=[f"{s.name}-{i}" for s, i in CALLS])
def test_composite_matches_numpy(spec: CompositeSpec, example: int, dtype: str) -> None:
    rng = np.random.default_rng(example)
    positional, keywords, reference = _call(spec, example, dtype, rng)
    expected = np.asarray(spec.reference.compile([a.name for a in spec.signature.arguments])(*reference))
    got = getattr(ts, spec.name)(*positional, **keywords)
    assert isinstance(got, ts.Tensor)
    result = np.asarray(got)
    assert (result.dtype, result.shape) == (expected.dtype, expected.shape)
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("spec", CATALOG.composites, ids=lambda s: s.name)
def test_composite_binding_follows_its_spec(spec: CompositeSpec) -> None:
    fn = getattr(ts, spec.name)
    assert spec.doc in fn.__doc__
    stub = (ROOT / "generated" / "python" / "_C.pyi").read_text(encoding="utf-8")
    assert f"def {spec.name}(" in stub
    positional = [a for a in spec.signature.arguments if a.kind == "positional"]
    if positional:  # positional-only arguments cannot be passed by name
        with pytest.raises(TypeError):
            fn(**{a.name: None for a in positional})


def test_composite_argument_errors_name_the_argument() -> None:
    x = ts.asarray(np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(TypeError, match="copy"):
        ts.reshape(x, (3, 2), copy="yes")
    with pytest.raises(ValueError, match=r"copy=False"):
        ts.reshape(x.T, (6,), copy=False)
    with pytest.raises(TypeError, match="shape"):
        ts.broadcast_to(x, "23")
