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
        elif arg.type.is_tensor_list:
            arrays = [(rng.standard_normal(shape) * 100).astype(dtype) for shape in value]
            value, ref = [ts.asarray(a) for a in arrays], arrays
        else:
            ref = value
        (positional.append(value) if arg.kind == "positional" else keywords.__setitem__(arg.name, value))
        reference.append(ref)
    return positional, keywords, reference


def test_the_catalog_has_composites() -> None:
    names = {spec.name for spec in CATALOG.composites}
    assert {"reshape", "permute_dims", "squeeze", "broadcast_to", "zeros", "full_like", "concat", "roll"} <= names  # guards against a parser that finds none


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
    if "uninitialized" not in spec.tags:  # empty(): contents are unspecified, only dtype and shape are the op's
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


def test_creation_defaults_and_errors_follow_numpy() -> None:
    assert ts.zeros((2, 3)).dtype == ts.float64 and ts.full(2, 7).dtype == ts.int64 and ts.full(2, True).dtype == ts.bool
    x = ts.asarray(np.arange(6, dtype=np.int16).reshape(2, 3))
    assert ts.full_like(x, 2.7).dtype == ts.int16 and np.asarray(ts.full_like(x, 2.7)).tolist() == [[2, 2, 2]] * 2
    assert ts.ones_like(x, dtype="float32").dtype == ts.float32 and ts.zeros_like(x).device == x.device
    with pytest.raises(OverflowError):
        ts.full(3, 300, dtype=ts.int8)  # numpy 2: Python integer 300 out of bounds for int8
    with pytest.raises(TypeError, match="fill_value"):
        ts.full(3, "7")
    with pytest.raises(TypeError, match="complex"):
        ts.full(3, 1j)
    with pytest.raises(TypeError, match="shape"):
        ts.zeros("23")
    with pytest.raises(ValueError):
        ts.zeros(3, device="tpu")
    out = ts.full((2, 2), 1.5)
    out[0, 0] = 4.0  # a new, writeable tensor
    assert np.asarray(out).tolist() == [[4.0, 1.5], [1.5, 1.5]]


def test_joining_promotes_and_checks_like_numpy() -> None:
    a = ts.asarray(np.arange(4, dtype=np.int8).reshape(2, 2))
    b = ts.asarray(np.full((2, 1), 0.5, dtype=np.float32))
    joined = ts.concat([a, b], axis=1)
    assert joined.dtype == ts.float32 and np.asarray(joined).tolist() == [[0, 1, 0.5], [2, 3, 0.5]]
    assert ts.stack((a, a)).shape == (2, 2, 2)
    with pytest.raises(ValueError, match="differ outside axis"):
        ts.concat([a, b], axis=0)
    with pytest.raises(ValueError, match="same shape"):
        ts.stack([a, b])
    with pytest.raises(TypeError, match="hold Tensors"):
        ts.concat([a, [[1, 2]]])
    with pytest.raises(ValueError, match="at least one"):
        ts.concat([])
    with pytest.raises(ValueError, match="repeated axis"):
        ts.flip(a, axis=(0, 0))
    x = ts.asarray(np.arange(6.0).reshape(2, 3))
    flipped = ts.flip(x)
    assert flipped.strides == (-24, -8)  # a view, as numpy's
    with pytest.raises(ValueError, match="same length"):
        ts.roll(x, (1, 2), axis=0)


def test_composite_argument_errors_name_the_argument() -> None:
    x = ts.asarray(np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(TypeError, match="copy"):
        ts.reshape(x, (3, 2), copy="yes")
    with pytest.raises(ValueError, match=r"copy=False"):
        ts.reshape(x.T, (6,), copy=False)
    with pytest.raises(TypeError, match="shape"):
        ts.broadcast_to(x, "23")


@pytest.mark.skipif(not ts.cuda.is_available(), reason="needs a CUDA device (this machine has none)")
def test_creation_on_a_cuda_device() -> None:
    z = ts.full((3, 2), 2.5, dtype=ts.float32, device="cuda")
    assert z.device.type == "cuda" and np.asarray(z.cpu()).tolist() == [[2.5, 2.5]] * 3
    like = ts.ones_like(z)
    assert like.device == z.device and np.asarray(like.cpu()).sum() == 6
    assert ts.zeros_like(z, device="cpu").device.type == "cpu"
