"""Composite ops (specs with `implementation:`, the core's own functions): every example call of every
spec against its numpy reference, on two dtypes, and the generated binding, doc and stub."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorsmith as ts
from tensorsmith_forge.catalog.model import CompositeSpec, load_catalog

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(ROOT)
CALLS = [(spec, i) for spec in CATALOG.composites for i in range(len(spec.examples))]
# Each example in float32 and int64, and in complex128 where the composite's dtypes hold it.
CASES = [(spec, i, dtype) for spec, i in CALLS for dtype in ("float32", "int64", "complex128") if dtype in spec.dtypes]
# Composites that add up terms in an order of their own (numpy's is pairwise), or call ops whose formulas are
# not the reference's (gelu's sigmoid): float results within these relative tolerances (of the element, or of
# the largest result); every other composite gives numpy's values exactly.
ROUNDED = {name: {"float32": 2e-6, "float64": 1e-13, "complex128": 1e-13} for name in ("var", "std", "vecdot", "tensordot", "layer_norm", "gelu")}


def _values(rng: np.random.Generator, shape: Any, dtype: str) -> np.ndarray:
    """Random values of a magnitude about 100 in `dtype` (complex: both parts)."""
    values = rng.standard_normal(shape) * 100
    if dtype.startswith("complex"):
        values = values + 1j * rng.standard_normal(shape) * 100
    return values.astype(dtype)


def _call(spec: CompositeSpec, example: int, dtype: str, rng: np.random.Generator) -> tuple[list, dict, list]:
    """(positional, keyword) arguments for tensorsmith and the reference's arguments, in signature order."""
    values = dict(spec.examples[example])
    positional, keywords, reference = [], {}, []
    for arg in spec.signature.arguments:
        if arg.name not in values:
            reference.append(arg.default_value)
            continue
        value: Any = values[arg.name]
        if arg.type.is_tensor_list or arg.kind == "variadic":
            arrays = [_values(rng, shape, dtype) for shape in value]
            value, ref = [ts.asarray(a) for a in arrays], arrays
        elif arg.type.is_tensor and arg.type.dtype_constraint:  # counts and indices: small non-negative integers
            array = rng.integers(0, 4, value).astype(np.int64)
            value, ref = ts.asarray(array), array
        elif arg.type.is_tensor:
            array = _values(rng, value, dtype)
            value, ref = ts.asarray(array), array
        else:
            ref = value
        if arg.kind == "variadic":
            positional.extend(value)
        else:
            (positional.append(value) if arg.kind == "positional" else keywords.__setitem__(arg.name, value))
        reference.append(ref)
    return positional, keywords, reference


def _results(spec: CompositeSpec, got: Any, expected: Any) -> list[tuple[Any, np.ndarray]]:
    """(tensorsmith result, numpy result) pairs: one, or one per element of a list or tuple return."""
    returns = str(spec.signature.returns)
    if returns == "Tensor":
        return [(got, np.asarray(expected))]
    assert isinstance(got, list if returns == "Tensor[]" else tuple), f"{spec.name} returns {type(got).__name__}"
    assert len(got) == len(expected)
    return [(g, np.asarray(e)) for g, e in zip(got, expected)]


def test_the_catalog_has_composites() -> None:
    names = {spec.name for spec in CATALOG.composites}
    assert {"reshape", "permute_dims", "squeeze", "broadcast_to", "zeros", "full_like", "concat", "roll"} <= names  # guards against a parser that finds none


@pytest.mark.parametrize(("spec", "example", "dtype"), CASES, ids=[f"{s.name}-{i}-{d}" for s, i, d in CASES])
def test_composite_matches_numpy(spec: CompositeSpec, example: int, dtype: str) -> None:
    rng = np.random.default_rng(example)
    positional, keywords, reference = _call(spec, example, dtype, rng)
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # var of fewer elements than its correction: inf/nan
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = spec.reference.compile([a.name for a in spec.signature.arguments])(*reference)
    got = getattr(ts, spec.name)(*positional, **keywords)
    for tensor, want in _results(spec, got, expected):
        assert isinstance(tensor, ts.Tensor)
        result = np.asarray(tensor)
        assert (result.dtype, result.shape) == (want.dtype, want.shape)
        if "uninitialized" in spec.tags:  # empty(): contents are unspecified, only dtype and shape are the op's
            continue
        if result.dtype.kind in "fc" and spec.name in ROUNDED:
            # relative to the largest result too: an element that cancels to near 0 keeps its terms' error
            rtol = ROUNDED[spec.name][result.dtype.name]
            finite = np.abs(want[np.isfinite(want)])
            scale = float(finite.max()) if finite.size else 0.0
            np.testing.assert_allclose(result, want, rtol=rtol, atol=rtol * scale)
        else:
            np.testing.assert_array_equal(result, want)


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
    assert ts.full(3, 1j).dtype == ts.complex128 and ts.full(3, 1j).tolist() == [1j] * 3
    with pytest.raises(TypeError, match="shape"):
        ts.zeros("23")
    with pytest.raises(ValueError):
        ts.zeros(3, device="tpu")
    out = ts.full((2, 2), 1.5)
    out[0, 0] = 4.0  # a new, writeable tensor
    assert np.asarray(out).tolist() == [[4.0, 1.5], [1.5, 1.5]]


@pytest.mark.parametrize("dtype", [d.name for d in ts.__array_namespace_info__().dtypes().values()] + ["float16", "bfloat16"])
def test_fills_of_every_dtype_are_numpys(dtype: str) -> None:
    """zeros and ones (which cast 0 and 1 from int64 without numpy's asarray), full, and a value assigned over
    a strided view: numpy's values, dtype and signs of zero, on sizes that run the fill on threads."""
    import ml_dtypes  # noqa: F401 - numpy's name for bfloat16

    for shape in [(), (3,), (5, 40000)]:
        for make, value in ((ts.zeros, 0), (ts.ones, 1)):
            t = make(shape, dtype=dtype)
            assert t.dtype == ts.dtype(dtype) and t.shape == shape
            np.testing.assert_array_equal(np.asarray(t), np.full(shape, value, dtype=dtype), strict=True)
    value = True if dtype == "bool" else 3
    for shape in [(0,), (1,), (7,), (33, 17), (8193,)]:  # small ones are filled by doubling copies, not the engine
        for t, expected in ((ts.full(shape, value, dtype=dtype), np.full(shape, value, dtype=dtype)),
                            (ts.zeros(shape, dtype=dtype), np.zeros(shape, dtype=dtype))):  # fmt: skip
            np.testing.assert_array_equal(np.asarray(t), expected, strict=True)
    if ts.isdtype(ts.dtype(dtype), "real floating"):
        for size in (5, 70000):
            assert not np.signbit(np.asarray(ts.zeros((size,), dtype=dtype))).any()
            assert np.signbit(np.asarray(ts.full((size,), -0.0, dtype=dtype))).all()
    x = ts.zeros((300, 301), dtype=dtype)
    x[::2, 1::3] = 1
    expected = np.zeros((300, 301), dtype=dtype)
    expected[::2, 1::3] = 1
    np.testing.assert_array_equal(np.asarray(x), expected, strict=True)


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

    class Pieces:  # a sequence by __getitem__ alone: no len() to size anything by
        def __getitem__(self, i: int) -> ts.Tensor:
            if i < 2:
                return a
            raise IndexError(i)

    assert np.asarray(ts.concat(Pieces())).tolist() == [[0, 1], [2, 3], [0, 1], [2, 3]]
    with pytest.raises(ValueError, match="repeated axis"):
        ts.flip(a, axis=(0, 0))
    x = ts.asarray(np.arange(6.0).reshape(2, 3))
    flipped = ts.flip(x)
    assert flipped.strides == (-24, -8)  # a view, as numpy's
    with pytest.raises(ValueError, match="same length"):
        ts.roll(x, (1, 2), axis=0)


@pytest.mark.parametrize("dtype", ["bool", "int8", "float32", "float64", "complex64"])
def test_concat_gives_numpys_bytes_for_any_pieces_axis_and_size(dtype: str) -> None:
    # Contiguous pieces of the result's dtype are copied as bytes, row after row of blocks, split between threads
    # anywhere in a row (sizes up to ~10 parallel grains); a strided or promoted piece takes the copy engine.
    rng = np.random.default_rng(sum(map(ord, dtype)))
    for trial in range(40):
        ndim = int(rng.integers(1, 4))
        axis = int(rng.integers(-ndim, ndim))
        shape = [int(rng.integers(1, 6)) for _ in range(ndim)]
        shape[-1] = int(rng.choice([1, 7, 3001, 40000]))
        widths = [int(w) for w in rng.choice([0, 1, 2, 5, 64], size=int(rng.integers(1, 6)))]
        pieces = []
        for w in widths:
            piece_shape = list(shape)
            piece_shape[axis] = w
            pieces.append((rng.standard_normal(piece_shape) * 3).astype(dtype))
        tensors = [ts.asarray(p) for p in pieces]
        if trial % 4 == 3:  # a strided view among contiguous pieces
            wide = rng.standard_normal([2 * n if d == len(shape) - 1 else n for d, n in enumerate(pieces[0].shape)]).astype(dtype)
            pieces[0], tensors[0] = wide[..., ::2], ts.asarray(wide)[..., ::2]
        for axis_arg in (axis, None):
            np.testing.assert_array_equal(np.asarray(ts.concat(tensors, axis=axis_arg)),
                                          np.concatenate(pieces, axis=axis_arg), strict=True)  # fmt: skip
    promoted = ts.concat([ts.asarray(np.arange(70000, dtype=np.int16)), ts.asarray(np.ones(3, dtype=dtype))])
    np.testing.assert_array_equal(np.asarray(promoted), np.concatenate([np.arange(70000, dtype=np.int16), np.ones(3, dtype=dtype)]),
                                  strict=True)  # fmt: skip


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


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float16", "float32", "float64"])
def test_triangles_and_eye_keep_the_dtype_and_match_numpy(dtype: str) -> None:
    a = (np.arange(60) - 30).astype(dtype).reshape(3, 4, 5)
    for k in (-2, 0, 1, 4):
        np.testing.assert_array_equal(np.asarray(ts.tril(ts.asarray(a), k=k)), np.tril(a, k=k))
        np.testing.assert_array_equal(np.asarray(ts.triu(ts.asarray(a), k=k)), np.triu(a, k=k))
        assert ts.tril(ts.asarray(a), k=k).dtype == ts.dtype(dtype)
    got = ts.eye(4, 6, k=-1, dtype=dtype)
    assert got.dtype == ts.dtype(dtype) and np.array_equal(np.asarray(got), np.eye(4, 6, k=-1, dtype=dtype))


@pytest.mark.parametrize(("args", "kwargs"), [
    ((0, 1, 0.1), {}), ((1.0, -1.0, -0.3), {}), ((-5, 5, 0.5), {"dtype": "float32"}), ((7,), {"dtype": "float16"}),
    ((0, 300, 7), {"dtype": "uint8"}), ((2**40, 2**40 + 5), {}), ((True,), {}), ((0.0, 1.0, 1e-3), {}),
    ((0.1, 1.0, 1e10), {"dtype": "float16"}), ((0.5, 5, 1), {"dtype": "int8"}), ((2.9, 9, 2.5), {"dtype": "int32"}),
    ((255, 256), {"dtype": "uint8"}), ((-1, -5), {"dtype": "uint8"}), ((5, -1, -1), {"dtype": "uint8"}),
])  # fmt: skip
def test_arange_matches_numpy_bit_for_bit(args: tuple, kwargs: dict) -> None:
    got, want = ts.arange(*args, **kwargs), np.arange(*args, **kwargs)
    assert np.asarray(got).dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("num", [0, 1, 2, 3, 50, 101])
@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize(("start", "stop"), [(0, 1), (-7.3, 2.9), (5, -5), (1e-308, 3e-308), (2, 2)])
def test_linspace_matches_numpy_bit_for_bit(start: float, stop: float, num: int, endpoint: bool) -> None:
    want = np.linspace(start, stop, num, endpoint=endpoint)
    np.testing.assert_array_equal(np.asarray(ts.linspace(start, stop, num, endpoint=endpoint)), want)
    np.testing.assert_array_equal(np.asarray(ts.linspace(start, stop, num, endpoint=endpoint, dtype=ts.int64)),
                                  np.linspace(start, stop, num, endpoint=endpoint, dtype=np.int64))  # fmt: skip


@pytest.mark.parametrize("args", [(-1, 0), (-7.25, 3), (255, 257)])
def test_arange_refuses_what_its_integer_dtype_cannot_hold_as_numpy(args: tuple) -> None:
    with pytest.raises(OverflowError) as numpy_error:
        np.arange(*args, dtype=np.uint8)
    with pytest.raises(OverflowError, match="out of bounds for uint8") as ts_error:
        ts.arange(*args, dtype=ts.uint8)
    assert str(ts_error.value) == str(numpy_error.value)


def test_range_function_errors() -> None:
    with pytest.raises(ValueError, match="step must not be 0"):
        ts.arange(0, 5, 0)
    with pytest.raises(TypeError, match=r"arange: stop must be a Python bool, int or float, not str"):
        ts.arange(0, "5")
    with pytest.raises(TypeError, match="arange: stop must be a Python bool, int or float, not complex"):
        ts.arange(1j)
    with pytest.raises(ValueError, match="at most 2 elements"):
        ts.arange(3, dtype=ts.bool)
    with pytest.raises(ValueError, match="NaN"):
        ts.arange(0.0, float("nan"))
    with pytest.raises(ValueError, match="num must be non-negative"):
        ts.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="endpoint"):
        ts.linspace(0, 1, 3, endpoint=1)
    with pytest.raises(ValueError, match="negative dimensions"):
        ts.eye(-1)
    with pytest.raises(ValueError, match="tril: x must have at least 2 dimensions, not 1"):
        ts.tril(ts.asarray([1.0, 2.0]))
    with pytest.raises(TypeError):
        ts.triu(ts.asarray(np.ones((2, 2))), k=1.5)
