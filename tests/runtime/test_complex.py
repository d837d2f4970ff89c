"""complex64 and complex128: storage, promotion (dtypes and Python scalars), numpy, buffer and DLPack exchange,
conversions, and the complex ops' answers against numpy on values chosen by hand (special values, branch
cuts, overflow on the way to a product).

The catalog-wide differential tests (test_ops_differential.py) run every op that declares a complex dtype on
the gate's inputs; these are the behaviours around the kernels.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorsmith as ts
from tensorsmith_forge.catalog.dtypes import COMPLEX, COMPLEX_PART, DTYPES
from tensorsmith_forge.catalog.model import load_catalog
from tensorsmith_forge.validators.inputs import special_values
from tests.helpers import ROOT

CATALOG = load_catalog(ROOT)
COMPLEX_OPS = sorted(spec.name for spec in CATALOG.ops if "complex64" in spec.dtypes)


def values(dtype: str) -> np.ndarray:
    """Every pair of a few special parts: zeros of both signs, infinities, NaN, huge and ordinary values."""
    part = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e30, 3.0e-3], dtype=np.float64)
    z = np.empty(part.size**2, dtype=dtype)
    z.real, z.imag = np.repeat(part, part.size), np.tile(part, part.size)
    return z


def same(got: ts.Tensor, want: np.ndarray, rtol: float) -> None:
    """Same dtype and shape; each part within rtol of |want|, NaN where NaN, infinities exact."""
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        finite = np.isfinite(w)
        np.testing.assert_array_equal(g[~finite & ~np.isnan(w)], w[~finite & ~np.isnan(w)])
        with np.errstate(all="ignore"):
            scale = np.where(np.isfinite(np.abs(want)), np.abs(want), 0.0)[finite]
        assert np.all(np.abs(g[finite] - w[finite]) <= rtol * scale + 1e-300), (g[finite], w[finite])


# ---- dtypes and promotion ---------------------------------------------------------------------------------


def test_complex_dtypes_exist_with_numpy_names_and_sizes() -> None:
    for name, size in (("complex64", 8), ("complex128", 16)):
        dtype = getattr(ts, name)
        assert dtype.name == name and dtype.itemsize == size and ts.dtype(np.dtype(name)) == dtype
        assert ts.isdtype(dtype, "complex floating") and ts.isdtype(dtype, "numeric")
        assert not ts.isdtype(dtype, "real floating")
    info = ts.__array_namespace_info__()
    assert info.default_dtypes()["complex floating"] == ts.complex128
    assert set(info.dtypes(kind="complex floating")) == {"complex64", "complex128"}


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", COMPLEX)
def test_promotion_with_complex_matches_numpy(a: str, b: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = np.add(np.ones(2, a), np.ones(2, b)).dtype.name
    assert ts.promote_types(ts.dtype(a), ts.dtype(b)) == ts.dtype(expected), (a, b)
    assert ts.result_type(ts.dtype(a), ts.dtype(b)) == ts.dtype(expected), (a, b)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float16", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("scalar", [1j, 2.5 - 1j, complex("inf")])
def test_python_complex_scalars_are_weak(dtype: str, scalar: complex) -> None:
    """NEP 50: a complex scalar keeps a float tensor's precision (float32 + 1j is complex64), an integer or
    bool tensor gets complex128; a complex tensor keeps its dtype."""
    x = np.array([1, 0, 3], dtype=dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = x + scalar
    got = ts.asarray(x) + scalar
    assert got.dtype == ts.dtype(want.dtype.name)
    same(got, want, 1e-6)
    assert ts.result_type(ts.asarray(x), scalar) == ts.dtype(want.dtype.name)


def test_real_and_float_scalars_with_a_complex_tensor_keep_its_dtype() -> None:
    z = ts.asarray(np.array([1 + 2j, -3j], dtype=np.complex64))
    for scalar in (2, 2.5, True):
        assert (z * scalar).dtype == ts.complex64 and (scalar - z).dtype == ts.complex64


# ---- exchange and conversion ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", COMPLEX)
def test_numpy_buffer_and_dlpack_round_trips_keep_every_bit(dtype: str) -> None:
    z = values(dtype).reshape(9, 9)[:, ::2]
    t = ts.asarray(z)
    assert t.dtype == ts.dtype(dtype) and t.shape == z.shape
    np.testing.assert_array_equal(np.ascontiguousarray(t).view(np.uint8), np.ascontiguousarray(z).view(np.uint8))
    view = memoryview(ts.asarray(np.ascontiguousarray(z)))
    assert view.format == ("Zf" if dtype == "complex64" else "Zd") and view.itemsize == np.dtype(dtype).itemsize
    np.testing.assert_array_equal(np.asarray(view), np.asarray(t))
    np.testing.assert_array_equal(np.from_dlpack(t), z)
    back = ts.from_dlpack(np.ascontiguousarray(z))
    assert back.dtype == ts.dtype(dtype)
    np.testing.assert_array_equal(np.asarray(back), z)


def test_python_complex_values_make_complex128_tensors() -> None:
    t = ts.asarray([1 + 2j, 3.5, -1j])
    assert t.dtype == ts.complex128 and t.tolist() == [1 + 2j, 3.5 + 0j, -1j]
    assert ts.full((2,), 1 - 1j).dtype == ts.complex128
    assert ts.full((2,), 2, dtype=ts.complex64).tolist() == [2 + 0j, 2 + 0j]
    assert complex(ts.asarray(1.5 - 2j)) == 1.5 - 2j and ts.asarray(3j).item() == 3j
    with pytest.raises(TypeError):
        float(ts.asarray(1 + 1j))
    with pytest.raises(TypeError):
        int(ts.asarray(1 + 1j))
    with pytest.raises(TypeError, match="arange: stop must be a Python bool, int or float, not complex"):
        ts.arange(1j)


@pytest.mark.parametrize("source", ["bool", "int8", "uint64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("target", COMPLEX)
def test_astype_to_complex_matches_numpy(source: str, target: str) -> None:
    x = ts.asarray(np.array([0, 1, 3], dtype="float64")).astype(ts.dtype(source))
    want = np.asarray(x).astype(target)
    np.testing.assert_array_equal(np.asarray(x.astype(ts.dtype(target))), want)


@pytest.mark.parametrize("target", ["bool", "int32", "uint8", "float16", "float32", "float64"])
def test_astype_from_complex_keeps_the_real_part_as_numpy(target: str) -> None:
    z = np.array([1.5 + 2j, -0.0 + 0j, 0 + 1j, 250.7 - 3j], dtype=np.complex128)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's ComplexWarning: the imaginary part is discarded
        want = z.astype(target)
    np.testing.assert_array_equal(np.asarray(ts.asarray(z).astype(ts.dtype(target))), want)


def test_inplace_complex_result_into_a_real_tensor_is_refused() -> None:
    x = ts.asarray(np.ones(3, dtype=np.float64))
    with pytest.raises(TypeError, match="same_kind"):
        x += 1j
    z = ts.asarray(np.ones(3, dtype=np.complex128))
    z += 2.0
    assert z.tolist() == [3 + 0j] * 3


# ---- ops ------------------------------------------------------------------------------------------------------


def test_complex_ops_cover_arithmetic_transcendental_and_reductions() -> None:
    expected = {"abs", "add", "subtract", "multiply", "divide", "negative", "positive", "square", "reciprocal", "sign",
                "conj", "real", "imag", "equal", "not_equal", "isnan", "isinf", "isfinite", "sqrt", "exp", "log", "sin",
                "expm1", "log1p", "log2", "log10", "pow",
                "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "where", "sum",
                "prod", "mean", "matmul", "cumulative_sum", "cumulative_prod", "all", "any"}  # fmt: skip
    assert expected <= set(COMPLEX_OPS)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide"])
def test_binary_arithmetic_on_special_values_matches_numpy(name: str, dtype: str) -> None:
    z = values(dtype)
    a, b = np.meshgrid(z, z)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
    same(getattr(ts, name)(ts.asarray(a), ts.asarray(b)), want, 2e-6 if dtype == "complex64" else 1e-13)


def test_complex64_product_does_not_overflow_on_the_way() -> None:
    """numpy fuses each part's multiply-add: (3e38 - inf j)(1 + 2j) has imaginary part -inf, not NaN."""
    a = np.array([3e38 - np.inf * 1j, 2 - np.inf * 1j], dtype=np.complex64)
    b = np.array([1 + 2j, 1 + 3e38j], dtype=np.complex64)
    with np.errstate(all="ignore"):
        want = a * b
    same(ts.asarray(a) * ts.asarray(b), want, 0.0)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", ["abs", "real", "imag"])
def test_parts_and_magnitude_have_the_real_dtype(name: str, dtype: str) -> None:
    z = values(dtype)
    got = np.asarray(getattr(ts, name)(ts.asarray(z)))
    want = getattr(np, name)(z)
    assert got.dtype == want.dtype
    if name == "abs":  # within an ulp of |z| in complex128 (numpy's own hypotf is an ulp off at times, as are we)
        np.testing.assert_array_max_ulp(got, np.abs(z.astype(np.complex128)).astype(want.dtype), maxulp=1)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["sign", "reciprocal", "conj", "negative", "square", "isnan", "isinf", "isfinite"])
def test_unary_ops_on_special_values_match_numpy_loops(name: str) -> None:
    z = values("complex128")
    with np.errstate(all="ignore"):
        want = getattr(np, name)(z)
    got = getattr(ts, name)(ts.asarray(z))
    if want.dtype == np.bool_:
        np.testing.assert_array_equal(np.asarray(got), want)
    else:
        same(got, want, 1e-15)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", ["sqrt", "exp", "log", "sin", "cos", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh"])
def test_branch_cuts_and_special_values_of_the_c_library_functions(name: str, dtype: str) -> None:
    """Both sides of every branch cut (signed zero parts on the real and imaginary axes), and C99's special
    values, as numpy's (the C library's) complex functions give them."""
    cuts = np.array([2 + 0j, 2 - 0j, -2 + 0j, complex(-2, -0.0), 0.5j, complex(-0.0, 2), complex(0.0, -2), 0j], dtype=dtype)
    z = np.concatenate([cuts, values(dtype)])
    with np.errstate(all="ignore"):
        want = getattr(np, {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
                            "atanh": "arctanh"}.get(name, name))(z)  # fmt: skip
    got = getattr(ts, name)(ts.asarray(z))
    same(got, want, 4e-6 if dtype == "complex64" else 1e-14)


NUMPY_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh"}


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", ["sqrt", "exp", "log", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan",
                                  "asinh", "acosh", "atanh"])  # fmt: skip
def test_c_library_functions_over_every_special_pair_and_magnitude(name: str, dtype: str) -> None:
    """Every pair of the gate's special parts (subnormals, the largest float, signalling and negative NaNs)
    and parts of every magnitude: overflow and underflow on the way (libcu++'s asinh(0.5 + 1e300j) is inf,
    its sqrt of a subnormal pair loses it) must not show. complex64 against complex128 rounded, as the gate."""
    part = COMPLEX_PART[dtype]
    specials = special_values(CATALOG.op(name), dtype)
    rng = np.random.default_rng(12)
    top = np.log10(float(np.finfo(part).max))
    magnitudes = (10.0 ** rng.uniform(-top, top, (2, 4096)) * rng.choice([-1.0, 1.0], (2, 4096))).astype(part)
    drawn = np.empty(4096, dtype=dtype)
    drawn.real, drawn.imag = magnitudes
    z = np.concatenate([specials, drawn])
    got = getattr(ts, name)(ts.asarray(z))
    same(got, widened(NUMPY_NAMES.get(name, name), z), 4e-6 if dtype == "complex64" else 1e-14)


def widened(name: str, *args: np.ndarray) -> np.ndarray:
    """numpy's function on the inputs in complex128, rounded to their dtype: what complex64 is judged against
    (numpy's own complex64 loops lose parts to intermediate overflow: (1e30 + 1e30j) ** 2)."""
    with np.errstate(all="ignore"):
        return getattr(np, name)(*(a.astype(np.complex128) for a in args)).astype(args[0].dtype)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", ["log1p", "log2", "log10"])
def test_numpy_formulas_of_log1p_log2_log10(name: str, dtype: str) -> None:
    """numpy's own complex loops (not the C library's): log|1 + z| + i arg(1 + z), log z scaled; special values
    included. Small arguments keep log1p's accuracy relative to |z|."""
    tiny = np.array([1e-5 + 2e-5j, -3e-4 - 1e-6j, 1e-12j, 2e-7], dtype=dtype)
    z = np.concatenate([values(dtype), tiny])
    same(getattr(ts, name)(ts.asarray(z)), widened(name, z), 4e-6 if dtype == "complex64" else 1e-14)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_expm1_is_numpys_formula_and_the_standards_special_values(dtype: str) -> None:
    z = values(dtype)
    finite = np.isfinite(z)
    got = np.asarray(ts.expm1(ts.asarray(z)))
    same(ts.asarray(got[finite]), widened("expm1", z[finite]), 4e-6 if dtype == "complex64" else 1e-14)
    with np.errstate(all="ignore"):  # elsewhere C99's exp(z) - 1, not numpy's NaN-making formula
        same(ts.asarray(got[~finite]), (np.exp(z[~finite].astype(np.complex128)) - 1).astype(dtype), 0.0)
    inf, nan = np.inf, np.nan
    standard = {complex(inf, 0.0): complex(inf, 0.0), complex(-inf, inf): complex(-1.0, 0.0),
                complex(-inf, nan): complex(-1.0, 0.0), complex(nan, 0.0): complex(nan, 0.0),
                complex(0.0, 0.0): complex(0.0, 0.0), complex(2.0, inf): complex(nan, nan)}  # fmt: skip
    args = np.array(list(standard), dtype=dtype)
    got = np.asarray(ts.expm1(ts.asarray(args)))
    want = np.array(list(standard.values()), dtype=dtype)
    np.testing.assert_array_equal(got.real, want.real)  # NaN where NaN
    np.testing.assert_array_equal(np.abs(got.imag), np.abs(want.imag))  # the standard leaves the zero's sign open


@pytest.mark.parametrize("dtype", COMPLEX)
def test_pow_follows_numpys_integer_powers_and_cpow(dtype: str) -> None:
    """numpy's npy_cpow: z ** 0 is 1; 0 ** w is 0 or NaN by w's real part; integer exponents below 100 multiply
    (the schoolbook product, whose infinities and NaNs numpy shows), others go to cpow."""
    z = values(dtype)
    exponents = np.array([0, 1, 2, 3, 4, -1, -2, -7, 99, 100, 0.5, -2.5, 1j, 2 + 0.5j, -3j, np.inf, np.nan], dtype=dtype)
    base, exponent = np.meshgrid(z, np.concatenate([exponents, z]))
    got = ts.pow(ts.asarray(base), ts.asarray(exponent))
    same(got, widened("power", base, exponent), 2e-5 if dtype == "complex64" else 1e-12)
    t = ts.asarray(z[:9])  # Python scalars: weak, the tensor's dtype
    assert (t**2).dtype == t.dtype and (t ** (1 + 1j)).dtype == t.dtype and (2 ** t).dtype == t.dtype
    same(t ** (1 + 1j), widened("power", z[:9], np.full(9, 1 + 1j, dtype=dtype)), 2e-5 if dtype == "complex64" else 1e-12)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_reductions_and_matmul_match_numpy(dtype: str) -> None:
    rng = np.random.default_rng(7)
    z = (rng.standard_normal((40, 50)) + 1j * rng.standard_normal((40, 50))).astype(dtype)
    tol = 1e-5 if dtype == "complex64" else 1e-12
    t = ts.asarray(z)
    same(ts.sum(t, axis=1), z.sum(axis=1), tol)
    same(ts.prod(t[:, :6], axis=0), z[:, :6].prod(axis=0), tol)
    same(ts.mean(t), np.asarray(z.mean()), tol)
    same(ts.cumulative_sum(t, axis=0), np.cumulative_sum(z, axis=0), tol)
    same(ts.matmul(t, t.mT), z @ z.T, tol * 10)
    same(t @ ts.conj(t).mT, z @ z.conj().T, tol * 10)
    assert bool(ts.all(t)) == bool(np.all(z)) and bool(ts.any(t * 0)) is False


def test_long_complex_mean_keeps_the_imaginary_part() -> None:
    """A few long rows take the engine's chunked mean, which combines chunk means in complex128."""
    z = np.full((2, 50000), 1 + 3j, dtype=np.complex64)
    z[1] *= -2j
    same(ts.mean(ts.asarray(z), axis=1), z.mean(axis=1), 1e-6)


def test_comparisons_that_complex_numbers_lack_are_refused() -> None:
    z = ts.asarray(np.array([1 + 1j], dtype=np.complex64))
    for name in ("less", "maximum", "floor", "argmax"):
        with pytest.raises((TypeError, NotImplementedError)):
            getattr(ts, name)(z, z) if name in ("less", "maximum") else getattr(ts, name)(z)


def test_manipulation_and_indexing_move_complex_values_unchanged() -> None:
    """Composites and views copy elements whatever their dtype: complex values come through bit for bit."""
    z = values("complex64").reshape(9, 9)
    t = ts.asarray(z)

    def bitwise(got, want) -> None:
        got, want = np.ascontiguousarray(np.asarray(got)), np.ascontiguousarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))

    bitwise(ts.concat([t, t[:2]]), np.concatenate([z, z[:2]]))
    bitwise(ts.stack([t[0], t[1]], axis=1), np.stack([z[0], z[1]], axis=1))
    bitwise(ts.reshape(t.mT, (3, 27)), np.reshape(z.T, (3, 27)))
    bitwise(ts.flip(ts.roll(t, 2, axis=1), axis=0), np.flip(np.roll(z, 2, axis=1), axis=0))
    bitwise(ts.take(t, ts.asarray([4, 0, 4]), axis=1), np.take(z, [4, 0, 4], axis=1))
    bitwise(t[[1, 3]], z[[1, 3]])
    mask = np.isfinite(z.real)
    bitwise(t[ts.asarray(mask)], z[mask])
    bitwise(ts.where(ts.asarray(mask), t, ts.conj(t)), np.where(mask, z, np.conj(z)))
    copy = ts.asarray(z.copy())
    copy[2:4, 1] = 5 - 2j
    assert copy[3, 1].item() == 5 - 2j and copy[4, 1].item() == complex(z[4, 1])
