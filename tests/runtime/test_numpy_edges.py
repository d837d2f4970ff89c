"""Edges where the runtime must answer as numpy does: domain errors raised before any kernel runs, the sign
of zero where maximum and minimum tie, sigmoid down to the subnormals, and TS_ISA."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import tensorsmith as ts

INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def numpy_error(fn):
    try:
        fn()
    except ValueError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("dtype", INTS)
def test_integer_pow_with_a_negative_exponent_raises_as_numpy(dtype: str) -> None:
    base = np.array([2, 3, 1], dtype=dtype)
    exponents = np.array([1, -1, 2], dtype="int64" if dtype.startswith("u") else dtype)
    want = numpy_error(lambda: np.power(base, exponents))
    if want is None:  # uint64 ** int64 is float64 in numpy: no integer domain
        np.testing.assert_array_equal(np.asarray(ts.pow(ts.asarray(base), ts.asarray(exponents))), np.power(base, exponents))
        return
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        ts.pow(ts.asarray(base), ts.asarray(exponents))
    out = ts.asarray(np.zeros(3, dtype=np.result_type(base, exponents)))
    with pytest.raises(ValueError):
        ts.pow(ts.asarray(base), ts.asarray(exponents), out=out)
    assert (np.asarray(out) == 0).all()  # refused before anything was written


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_the_domain_sees_exactly_the_exponents_a_view_holds(dtype: str) -> None:
    # The check reads a contiguous input in place and copies any other layout first: a negative exponent counts
    # wherever the view holds it (the last of 100003, a strided or transposed or offset view) and nowhere else.
    info = np.iinfo(dtype)
    exponents = np.full(100003, 2, dtype=dtype)
    exponents[-1] = -1
    base = ts.asarray(np.full(100003, 3, dtype=dtype))
    with pytest.raises(ValueError, match="negative integer powers"):
        ts.pow(base, ts.asarray(exponents))
    skipping = np.full(100003, 2, dtype=dtype)
    skipping[1::2] = info.min  # only odd positions are negative: the even view never sees them
    t = ts.asarray(skipping)
    np.testing.assert_array_equal(np.asarray(ts.pow(base[::2], t[::2])), np.power(np.full(50002, 3, dtype=dtype), skipping[::2]))
    with pytest.raises(ValueError):
        ts.pow(base[1::2], t[1::2])
    matrix = np.full((301, 7), info.max, dtype=dtype)  # the largest exponent is inside [0, inf)
    matrix[300, 6] = -1
    m = ts.asarray(matrix)
    np.testing.assert_array_equal(np.asarray(ts.pow(ts.asarray(np.ones((7, 300), dtype=dtype)), m.T[:, :300])),
                                  np.ones((7, 300), dtype=dtype))
    with pytest.raises(ValueError):
        ts.pow(ts.asarray(np.ones((7, 301), dtype=dtype)), m.T)
    with pytest.raises(ValueError):
        ts.pow(ts.asarray(np.ones(7, dtype=dtype)), m[300])  # a row view at an offset


def test_the_domain_is_checked_on_the_values_the_kernel_would_see() -> None:
    assert numpy_error(lambda: np.power(2, -1)) is not None
    with pytest.raises(ValueError, match="negative integer powers"):
        ts.pow(2, -1)
    with pytest.raises(ValueError):
        ts.asarray(np.arange(4, dtype=np.int32)) ** -2
    with pytest.raises(ValueError):  # broadcast: one negative exponent anywhere is enough
        ts.pow(ts.asarray(np.ones((3, 4), dtype=np.int16)), ts.asarray(np.array([0, 1, -3, 2], dtype=np.int16)))
    # A float kernel has no such domain: numpy computes it
    for got, want in ((ts.pow(ts.asarray(np.array([2.0, 4.0])), -1), np.power(np.array([2.0, 4.0]), -1)),
                      (ts.pow(ts.asarray(np.array([2, 4], dtype=np.int8)), -0.5), np.power(np.array([2, 4], np.int8), -0.5))):
        np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(ts.pow(ts.asarray(np.array([3], np.int8)), 0)), np.power(np.array([3], np.int8), 0))
    assert np.asarray(ts.pow(ts.asarray(np.zeros(0, np.int32)), ts.asarray(np.zeros(0, np.int32)))).size == 0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_maximum_and_minimum_of_equal_zeros_are_numpys(dtype: str) -> None:
    a = np.array([-0.0, 0.0, -0.0, 0.0], dtype=dtype)
    b = np.array([0.0, -0.0, -0.0, 0.0], dtype=dtype)
    for name in ("maximum", "minimum"):
        got = np.asarray(getattr(ts, name)(ts.asarray(a), ts.asarray(b)))
        want = getattr(np, name)(a, b)
        assert (np.signbit(got) == np.signbit(want)).all(), (name, got, want)
    for row in ([-0.0, 0.0], [0.0, -0.0], [-0.0, -0.0], [0.0, 0.0, -0.0]):
        x = np.array(row, dtype=dtype)
        for name in ("max", "min"):
            got, want = np.asarray(getattr(ts, name)(ts.asarray(x))), getattr(np, name)(x)
            assert np.signbit(got) == np.signbit(want), (name, row, got, want)
    relu = np.asarray(ts.relu(ts.asarray(np.array([-0.0, 0.0], dtype=dtype))))
    assert not np.signbit(relu).any()  # max(x, 0): numpy's maximum gives the second of equals


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_keeps_results_down_to_the_subnormals(dtype: str) -> None:
    x = np.array([-100.0, -90.0, -30.0, 0.0, 30.0, 100.0, -np.inf, np.inf, np.nan, -0.0], dtype=dtype)
    got = np.asarray(ts.sigmoid(ts.asarray(x)))
    with np.errstate(all="ignore"):
        exact = (1.0 / (1.0 + np.exp(-x.astype(np.longdouble)))).astype(dtype)
    np.testing.assert_allclose(got, exact, rtol=4 * np.finfo(dtype).eps, atol=0)
    if dtype == "float32":
        assert got[0] > 0 and got[1] > 0  # 1 / (1 + e**100) underflowed to 0 in float


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env}, check=False)  # fmt: skip


def test_ts_isa_caps_the_instruction_set_level_and_results_do_not_change() -> None:
    code = ("import hashlib, numpy as np, tensorsmith as ts\n"
            "x = np.linspace(-20, 20, 100003, dtype=np.float32)\n"
            "z = ts.asarray((x + 1j * x[::-1]).astype(np.complex64))\n"  # std::fma: an instruction or libm's call
            "digest = lambda t: hashlib.sha256(np.asarray(t).tobytes()).hexdigest()\n"
            "print(digest(ts.exp(ts.asarray(x))), np.asarray(ts.sum(ts.asarray(x))), digest(z * z), digest(ts.prod(z[:40] / 20)))")  # fmt: skip
    results = {level: _run(code, TS_ISA=level) for level in ("baseline", "avx2", "avx512")}
    for level, result in results.items():
        assert result.returncode == 0, (level, result.stderr[-2000:])
    assert len({r.stdout for r in results.values()}) == 1
    bad = _run("import tensorsmith", TS_ISA="sse9")
    assert bad.returncode != 0 and "TS_ISA must be baseline, avx2 or avx512, got 'sse9'" in bad.stderr


INTEGER_POW_PROGRAM = """
import numpy as np, tensorsmith as ts
rng = np.random.default_rng(5)
for dtype in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"):
    info = np.iinfo(dtype)
    base = rng.integers(max(info.min, -9), min(info.max, 9), 1001, dtype=dtype, endpoint=True)
    exponent = rng.integers(0, 40, 1001, dtype=dtype)
    assert np.array_equal(np.asarray(ts.pow(ts.asarray(base), ts.asarray(exponent))), np.power(base, exponent)), dtype
    for k in (0, 3, 15, 16, 17):  # loop-invariant exponents (the broadcast loop)
        k = np.array(k, dtype=dtype)
        assert np.array_equal(np.asarray(ts.asarray(base) ** ts.asarray(k)), np.power(base, k)), (dtype, k)
print("ok")
"""


@pytest.mark.parametrize("level", ["baseline", "avx2", "avx512"])
def test_integer_pow_agrees_with_numpy_at_every_instruction_set_level(level: str) -> None:
    # Each level vectorises the fixed steps its own way (tensorsmith/isa.h); TS_ISA caps the level (a machine
    # below it runs its own best, which another parameter covers).
    result = _run(INTEGER_POW_PROGRAM, TS_ISA=level)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr[-2000:]
