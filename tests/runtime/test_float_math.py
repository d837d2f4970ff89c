"""float32 tanh, expm1, log, log1p, sin, cos, erf, atan, atan2 and pow, and float64 exp, log, expm1, log1p, tanh, pow,
atan and atan2:
tensorsmith/scalar_ops.h's branch-free, vectorisable forms (and integer pow's wrap-around).
Each is within its bound of the exact value (float64's result) over the range and densely where the formula
switches (tanh at |x| = 0.625; expm1 where the reduction's n leaves 0 and at 80; log at m = sqrt(2) and near
1; log1p at u = 2 and near 0 and -1; sin and cos at pi/4, next to multiples of pi/2, and up to the largest
floats, whose reduction needs 2/pi's bits far past the point; pow over bases and exponents of every scale, to
the ends of the float range), and exact at the specials. float32 floor_divide and remainder are numpy's float64
ones rounded once, bit for bit, where their fast path (no fmod) ends too."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import tensorsmith as ts

TINY = float(np.finfo(np.float32).smallest_subnormal)


def ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


def every_float(low: float, high: float) -> np.ndarray:
    """Every float32 in [low, high), both positive."""
    return np.arange(np.float32(low).view(np.uint32), np.float32(high).view(np.uint32), dtype=np.uint32).view(np.float32)


def magnitudes(rng: np.random.Generator, low_exp: float, high_exp: float, n: int = 1 << 19) -> np.ndarray:
    return (2.0 ** rng.uniform(low_exp, high_exp, n)).astype(np.float32)


def _tanh_inputs(rng):
    x = np.concatenate([every_float(0.6, 0.65), magnitudes(rng, -30, 3.5), rng.uniform(0, 10, 1 << 19)])
    return np.concatenate([x, -x])


def _expm1_inputs(rng):
    x = np.concatenate([every_float(0.34, 0.36), every_float(1.02, 1.06), every_float(79.9, 80.1), magnitudes(rng, -30, 6.47)])
    return np.concatenate([x, -x[x < 31]])


def _log_inputs(rng):
    return np.concatenate([every_float(1.40, 1.43), every_float(0.70, 0.71), every_float(0.999, 1.001),
                           magnitudes(rng, -149, 128), rng.uniform(0, 4, 1 << 19).astype(np.float32)])


def _log1p_inputs(rng):
    x = np.concatenate([every_float(0.99, 1.01), magnitudes(rng, -40, 60), every_float(1e-8, 2e-8)])
    near_minus_one = -1 + every_float(1e-7, 1e-3)
    return np.concatenate([x, -x[x < 1], near_minus_one.astype(np.float32)])


def _near_multiples_of_half_pi(k: np.ndarray) -> np.ndarray:
    """The floats nearest k pi/2 and their neighbours: where a reduction cancels most."""
    multiples = (k * (np.pi / 2)).astype(np.float32)
    return np.concatenate([np.nextafter(multiples, np.float32(0)), multiples, np.nextafter(multiples, np.float32(np.inf))])


def _trig_inputs(rng):
    # By magnitude up to FLT_MAX, around the switch at pi/4, around multiples of pi/2 near 0 and far out, and around
    # 2**20, where contiguous blocks switch from the Cody-Waite reduction to the exact one.
    x = np.concatenate([magnitudes(rng, -30, 127.9), every_float(0.78, 0.79), every_float(1.5705, 1.5711),
                        _near_multiples_of_half_pi(np.arange(1, 2000)),
                        _near_multiples_of_half_pi(rng.integers(2000, 700_000, 20_000)),
                        every_float(2**20 - 64, 2**20 + 128), rng.uniform(-100, 100, 1 << 18).astype(np.float32)])
    return np.concatenate([x, -x])


def _erf_inputs(rng):
    # By magnitude, densely near 0 and where the polynomial's range ends (|x| = 4, where erf rounds to 1).
    x = np.concatenate([magnitudes(rng, -40, 3), every_float(3.9, 4.1), every_float(0.5, 0.501), rng.uniform(0, 6, 1 << 19)])
    return np.concatenate([x, -x])


def _atan_inputs(rng):
    # By magnitude (atan(x) ~ x and ~ pi/2 - 1/x at the ends), densely at tan(pi/8) and at 1 (where it switches).
    x = np.concatenate([magnitudes(rng, -149, 128), every_float(0.414, 0.4143), every_float(0.9999, 1.0001),
                        every_float(2.4141, 2.4144), rng.uniform(0, 10, 1 << 19)])
    return np.concatenate([x, -x])


def _erf64(x: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.erf, 1, 1)(x).astype(np.float64)


CASES = {  # op: (ts function, float64 reference, inputs, most ulps from the exact value)
    "tanh": (ts.tanh, np.tanh, _tanh_inputs, 1.5),
    "expm1": (ts.expm1, np.expm1, _expm1_inputs, 2.0),
    "log": (ts.log, np.log, _log_inputs, 1.5),
    "log1p": (ts.log1p, np.log1p, _log1p_inputs, 2.0),
    "sin": (ts.sin, np.sin, _trig_inputs, 0.6),
    "cos": (ts.cos, np.cos, _trig_inputs, 0.6),
    "erf": (ts.erf, _erf64, _erf_inputs, 0.6),
    "atan": (ts.atan, np.arctan, _atan_inputs, 0.5001),
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_float32_is_within_its_ulp_bound(op: str) -> None:
    fn, reference, inputs, bound = CASES[op]
    x = inputs(np.random.default_rng(5)).astype(np.float32)
    got = np.asarray(fn(ts.asarray(x)))
    assert got.dtype == np.float32
    exact = reference(x.astype(np.float64))
    finite = np.isfinite(exact) & (np.abs(exact) < float(np.finfo(np.float32).max))
    assert finite.mean() > 0.99
    err = ulps(got[finite], exact[finite])
    assert err.max() <= bound, f"{op}({x[finite][err.argmax()]!r}): {err.max():.2f} ulp"


@pytest.mark.parametrize("op", ["sin", "cos"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_sin_and_cos_are_the_same_wherever_an_element_sits(op: str, dtype: str) -> None:
    # Contiguous blocks of elements all below 2**20 take the Cody-Waite reduction (the spec's fast_expr), the rest
    # the exact one; an element's result must not depend on which its block took: the same bits alone, among
    # neighbours of any size, and in a strided run (which always takes the exact form).
    fn = getattr(ts, op)
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.standard_normal(1 << 16) * 10, rng.uniform(-(2.0**20), 2.0**20, 1 << 16),
                        _near_multiples_of_half_pi(rng.integers(1, 667_000, 1 << 14)), every_float(2**20 - 64, 2**20)])
    x = x[np.abs(x) <= float(np.finfo(dtype).max)]
    x = rng.permutation(x.astype(dtype))[: (x.size // 256) * 256 - 7]  # not whole blocks
    assert np.isfinite(x).all() and np.abs(x.astype(np.float64)).max() < 2.0**20
    whole = np.asarray(fn(ts.asarray(x)))
    mixed = x.copy()
    mixed[::256] = np.inf if dtype == "float16" else 3e38  # every block then holds an element beyond 2**20
    among_large = np.asarray(fn(ts.asarray(mixed)))
    strided = np.asarray(fn(ts.asarray(np.repeat(x, 2))[::2]))
    keep = np.ones(x.size, bool)
    keep[::256] = False
    assert whole[keep].tobytes() == among_large[keep].tobytes()
    assert whole.tobytes() == strided.tobytes()
    one_by_one = np.array([np.asarray(fn(ts.asarray(v))) for v in x[:300]], dtype=dtype)
    assert one_by_one.tobytes() == whole[:300].tobytes()


def test_tanh_is_odd_bit_for_bit() -> None:
    x = _tanh_inputs(np.random.default_rng(6)).astype(np.float32)
    got = np.asarray(ts.tanh(ts.asarray(x)))
    half = x.size // 2
    assert np.array_equal(got[half:], -got[:half])


SPECIALS = {  # op: inputs whose answer is exact (0, +-1, +-inf, NaN, x itself): the float64 result rounded
    "tanh": [0.0, -0.0, np.nan, np.inf, -np.inf, 9.2, 50.0, -1e30, TINY, -TINY, 1e-20],
    "expm1": [0.0, -0.0, np.nan, np.inf, -np.inf, -31.0, -1e30, 88.8, 89.0, 1000.0, TINY, -TINY, 1e-20],
    "log": [0.0, -0.0, np.nan, np.inf, -np.inf, -1.0, -TINY, 1.0],
    "log1p": [0.0, -0.0, np.nan, np.inf, -np.inf, -1.0, -1.5, -2.0, TINY, -TINY, 1e-20],
    "sin": [0.0, -0.0, np.nan, np.inf, -np.inf, TINY, -TINY, 1e-20, -1e-20],
    "cos": [0.0, -0.0, np.nan, np.inf, -np.inf, TINY, -TINY, 1e-20],
    "erf": [0.0, -0.0, np.nan, np.inf, -np.inf, 4.0, 4.5, -10.0, 1e30, TINY, -TINY, 1e-20],
    "atan": [0.0, -0.0, np.nan, np.inf, -np.inf, TINY, -TINY, 1e-20, 1e30, -1e30, 3.4e38],
}


@pytest.mark.parametrize("op", sorted(SPECIALS))
def test_float32_specials(op: str) -> None:
    fn, reference = CASES[op][:2]
    x = np.array(SPECIALS[op], dtype=np.float32)
    got = np.asarray(fn(ts.asarray(x)))
    with np.errstate(all="ignore"):
        want = reference(x.astype(np.float64)).astype(np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (x, got, want)
    ok = np.isnan(want) | ((got == want) & (np.signbit(got) == np.signbit(want)))
    assert ok.all(), [(float(a), float(g), float(w)) for a, g, w in zip(x[~ok], got[~ok], want[~ok])]


def test_the_two_over_pi_table_holds_its_bits() -> None:
    # The words sin and cos reduce by, against 2/pi recomputed from Machin's formula (pi = 16 atan(1/5) -
    # 4 atan(1/239)) in integers with 288 guard bits.
    header = (Path(__file__).resolve().parents[2] / "runtime/include/tensorsmith/scalar_ops.h").read_text()
    body = re.search(r"kTwoOverPiBits\[\d+\] = \{([^}]*)\}", header)
    assert body is not None
    words = [int(token.strip().rstrip("uU"), 0) for token in body.group(1).split(",")]

    def atan_inverse(n: int, bits: int) -> int:  # atan(1/n) * 2**bits
        total, term, k = 0, (1 << bits) // n, 0
        while term:
            total += (-1) ** k * (term // (2 * k + 1))
            term //= n * n
            k += 1
        return total

    bits = 512
    pi = 16 * atan_inverse(5, bits) - 4 * atan_inverse(239, bits)
    want = (2 << (bits + 32 * (len(words) - 1))) // pi  # floor(2/pi * 2**224)
    assert words[0] == 0
    assert words[1:] == [(want >> (32 * (len(words) - 2 - k))) & 0xFFFFFFFF for k in range(len(words) - 1)]


def _atan2_pairs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    # Quotients y/x of every scale (down to the smallest subnormal over the largest float), densely near
    # tan(pi/8) and 1 (where the reduction and the octant switch), every quadrant and both orders.
    n = 1 << 19
    x = np.concatenate([rng.normal(0, 1, n), 2.0 ** rng.uniform(-149, 128, n), rng.uniform(1, 2, n), rng.uniform(1, 2, n)])
    y = np.concatenate([rng.normal(0, 1, n), 2.0 ** rng.uniform(-149, 128, n) * rng.choice([-1, 1], n),
                        x[2 * n:3 * n] * np.tan(np.pi / 8) * (1 + rng.uniform(-1e-5, 1e-5, n)),
                        x[3 * n:] * (1 + rng.uniform(-1e-5, 1e-5, n))])
    x, y = x.astype(np.float32), y.astype(np.float32)
    return np.concatenate([x, -x, y, -y]), np.concatenate([y, y, -x, x])


def test_float32_atan2_is_correctly_rounded_but_for_rare_halfway_cases() -> None:
    # In double to 7.3e-13 before its one rounding: within half an ulp and a hair of the exact value (float64's
    # atan2 of the same floats), and the correctly rounded float nearly everywhere, subnormal results included.
    x, y = _atan2_pairs(np.random.default_rng(10))
    got = np.asarray(ts.atan2(ts.asarray(y), ts.asarray(x)))
    assert got.dtype == np.float32
    exact = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    rounded = exact.astype(np.float32)
    normal = np.abs(exact) >= float(np.finfo(np.float32).tiny)
    assert normal.mean() > 0.9 and (~normal).any()
    err = ulps(got[normal], exact[normal])
    assert err.max() <= 0.5001, f"atan2({y[normal][err.argmax()]!r}, {x[normal][err.argmax()]!r}): {err.max():.4f} ulp"
    same = got == rounded
    assert same.mean() > 1 - 1e-5
    off = ~same  # the rest: 1 ulp from the correctly rounded float (subnormals by double rounding)
    assert (np.abs(got[off].view(np.int32).astype(np.int64) - rounded[off].view(np.int32)) == 1).all()


def test_float32_atan2_specials() -> None:
    # IEEE 754's atan2 on every pair of zeros of both signs, infinities, NaN, the smallest and largest floats
    # and ordinary values: the float64 result rounded, the sign of zero included.
    values = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf, np.nan, TINY, -TINY, 3.4e38, -3.4e38, 1e-38]
    x, y = (a.ravel() for a in np.meshgrid(np.array(values, np.float32), np.array(values, np.float32)))
    got = np.asarray(ts.atan2(ts.asarray(y), ts.asarray(x)))
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64)).astype(np.float32)
    ok = (np.isnan(got) & np.isnan(want)) | ((got == want) & (np.signbit(got) == np.signbit(want)))
    assert ok.all(), [(float(b), float(a), float(g), float(w)) for a, b, g, w in zip(x[~ok], y[~ok], got[~ok], want[~ok])]


def _pow_pairs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    n = 1 << 19
    bases = [rng.uniform(0, 10, n), 2.0 ** rng.uniform(-149, 128, n), 1 + rng.normal(0, 1e-3, n),
             rng.uniform(0.999, 1.001, n), -rng.uniform(0, 100, n), -(2.0 ** rng.uniform(-30, 30, n))]
    exponents = [rng.uniform(-5, 5, n), rng.uniform(-1, 1, n) * 2.0 ** rng.uniform(-10, 7, n), rng.normal(0, 1e4, n),
                 rng.uniform(-2e5, 2e5, n), rng.integers(-40, 40, n).astype(float), rng.integers(-8, 9, n) / 2]
    return (np.concatenate(bases).astype(np.float32), np.concatenate(exponents).astype(np.float32))


def test_float32_pow_is_correctly_rounded_but_for_rare_halfway_cases() -> None:
    # pow_float computes 2**(y log2|x|) in double to about 5e-12 relative before its one rounding: against the
    # exact value (float64's pow of the same floats), within half an ulp and a hair, and equal to the correctly
    # rounded float nearly everywhere, over the whole range of results, subnormal and overflowing included.
    x, y = _pow_pairs(np.random.default_rng(9))
    got = np.asarray(ts.pow(ts.asarray(x), ts.asarray(y)))
    assert got.dtype == np.float32
    with np.errstate(all="ignore"):
        exact = np.power(x.astype(np.float64), y.astype(np.float64))
        rounded = exact.astype(np.float32)
    finite = np.isfinite(exact) & (np.abs(exact) < float(np.finfo(np.float32).max)) & (np.abs(exact) >= float(np.finfo(np.float32).tiny))
    assert finite.mean() > 0.75 and np.isnan(exact).any() and (exact == 0).any() and np.isinf(rounded).any()
    err = ulps(got[finite], exact[finite])
    assert err.max() <= 0.5001, f"pow({x[finite][err.argmax()]!r}, {y[finite][err.argmax()]!r}): {err.max():.4f} ulp"
    same = (got == rounded) | (np.isnan(got) & np.isnan(rounded))
    assert same.mean() > 1 - 1e-5
    zeros = got == 0  # a NaN's sign is no part of its value; a zero's is
    assert np.array_equal(np.signbit(got[zeros]), np.signbit(rounded[zeros]))
    off = ~same  # the rest: 1 ulp from the correctly rounded float, never more (subnormals by double rounding)
    assert (np.abs(got[off].view(np.int32).astype(np.int64) - rounded[off].view(np.int32)) == 1).all()


def _header_doubles(name: str) -> np.ndarray:
    header = (Path(__file__).resolve().parents[2] / "runtime/include/tensorsmith/scalar_ops.h").read_text()
    body = re.search(name + r"\[\d+\] = \{([^}]*)\}", header)
    assert body is not None, name
    return np.array([float.fromhex(token.strip()) for token in body.group(1).split(",")])


def _horner(coefficients: np.ndarray, x: np.ndarray) -> np.ndarray:
    total = np.full_like(x, coefficients[-1])
    for c in coefficients[-2::-1]:
        total = total * x + c
    return total


def test_float32_pow_polynomials_hold_their_bounds() -> None:
    # The two fits pow_float's accuracy rests on, against numpy's float64 functions (within an ulp or two, far
    # below the bounds) over their whole intervals, ends included: log2(m) = s P(s**2) for s = (m-1)/(m+1), m in
    # [sqrt(1/2), sqrt(2)), within 2.7e-14 relative; 2**r = 1 + r Q(r) for |r| <= 1/2, within 2.2e-12 relative.
    s = np.linspace(-(3 - 2 * math.sqrt(2)), 3 - 2 * math.sqrt(2), 200000)  # no s = 0
    exact = 2 * np.arctanh(s) / math.log(2)  # log2(m), without m's rounding
    assert np.max(np.abs(s * _horner(_header_doubles("kLog2OverS"), s * s) / exact - 1)) < 2.8e-14
    r = np.linspace(-0.5, 0.5, 200001)
    assert np.max(np.abs((1 + r * _horner(_header_doubles("kExp2Minus1OverR"), r)) / np.exp2(r) - 1)) < 2.3e-12


def test_float32_pow_specials() -> None:
    # IEEE 754's pow on every pair of specials (zeros of both signs, +-1, +-inf, NaN, odd and even integers,
    # non-integers, 2**24 and its neighbours, the smallest and largest floats): the float64 result rounded, sign
    # of zero and NaN included.
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, np.inf, -np.inf, np.nan, TINY, -TINY,
              3.4e38, -3.4e38, 1e-38, 16777216.0, 16777218.0, -16777215.0, 8388609.0, -8388609.5, 0.25, 1.5, -1.5]
    x, y = (a.ravel() for a in np.meshgrid(np.array(values, np.float32), np.array(values, np.float32)))
    got = np.asarray(ts.pow(ts.asarray(x), ts.asarray(y)))
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    ok = (np.isnan(got) & np.isnan(want)) | ((got == want) & (np.signbit(got) == np.signbit(want)))
    assert ok.all(), [(float(a), float(b), float(g), float(w)) for a, b, g, w in zip(x[~ok], y[~ok], got[~ok], want[~ok])]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_pow_of_any_nan_to_zero_and_of_one_to_any_nan_is_one(dtype: str) -> None:
    """x**0 and 1**y are 1 for every NaN, signalling, negative or with a payload (IEEE 754, C's pow), as for a
    quiet one; libm's pow, which numpy's float64 loop calls on this machine, answers a signalling NaN with NaN."""
    bits = {"float16": (np.uint16, 0x7C01, 0xFE00), "float32": (np.uint32, 0x7F800001, 0xFFC00000),
            "float64": (np.uint64, 0x7FF0000000000001, 0xFFF8000000000000)}[dtype]  # fmt: skip
    nans = np.array([bits[1], bits[2], bits[1] | 0b110], dtype=bits[0]).view(dtype)
    zeros = np.array([0.0, -0.0, 0.0], dtype=dtype)
    ones = np.ones(3, dtype=dtype)
    assert np.asarray(ts.pow(ts.asarray(nans), ts.asarray(zeros))).tolist() == [1.0, 1.0, 1.0]
    assert np.asarray(ts.pow(ts.asarray(ones), ts.asarray(nans))).tolist() == [1.0, 1.0, 1.0]
    assert np.isnan(np.asarray(ts.pow(ts.asarray(nans), ts.asarray(ones)))).all(), "NaN to any other power is NaN"


def test_float32_pow_is_the_same_wherever_an_element_sits() -> None:
    # The vector body, its tail, strided and broadcast runs and other thread splits all compute one formula.
    x, y = (a[:100_003] for a in _pow_pairs(np.random.default_rng(10)))
    whole = np.asarray(ts.pow(ts.asarray(x), ts.asarray(y)))
    strided = np.asarray(ts.pow(ts.asarray(np.repeat(x, 2))[::2], ts.asarray(np.repeat(y, 2))[::2]))
    one_by_one = np.array([np.asarray(ts.pow(ts.asarray(a), ts.asarray(b))) for a, b in zip(x[:257], y[:257])])
    broadcast = np.asarray(ts.pow(ts.asarray(x[:1000]), ts.asarray(y[7])))
    assert whole.tobytes() == strided.tobytes()
    assert one_by_one.tobytes() == whole[:257].tobytes()
    assert broadcast.tobytes() == np.asarray(ts.pow(ts.asarray(x[:1000]), ts.asarray(np.full(1000, y[7])))).tobytes()


LONG_DOUBLE_DIGITS = np.finfo(np.longdouble).nmant


def _signed(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    return x * rng.choice([-1.0, 1.0], x.size)


def _float64_inputs(op: str, rng: np.random.Generator) -> np.ndarray:
    """Random doubles over the op's range and densely where its formula switches or cancels."""
    n = 1 << 18
    if op == "exp":
        return np.concatenate([rng.uniform(-745.0, 709.7, 4 * n), rng.uniform(-0.35, 0.35, n),
                               _signed(rng, 2.0 ** rng.uniform(-60, 0, n))])
    if op == "log":
        x = np.concatenate([2.0 ** rng.uniform(-1074, 1023.9, 4 * n), rng.uniform(0.99, 1.01, n), rng.uniform(0.0, 4.0, n)])
        return x[x > 0]
    if op == "expm1":  # n leaves 0 at +-ln2/2; n = 1 (the worst case of 2 (1 + em) - 1) up to 1; the switch at 40
        return np.concatenate([_signed(rng, 2.0 ** rng.uniform(-60, 6, 2 * n)), rng.uniform(-45.0, 709.7, 2 * n),
                               _signed(rng, rng.uniform(0.3, 1.1, n)), rng.uniform(39.0, 41.0, n)])
    if op == "log1p":  # near -1 (u small, k very negative), near 0, where k = -1 and m is near sqrt(2), to the top
        x = np.concatenate([-1.0 + 2.0 ** rng.uniform(-53, 0, n), _signed(rng, 2.0 ** rng.uniform(-60, 0, 2 * n)),
                            rng.uniform(-0.35, -0.25, n), rng.uniform(-1.0, 3.0, n), 2.0 ** rng.uniform(0, 1023.9, n)])
        return x[x > -1.0]
    assert op == "tanh"  # of every scale, the range where the quotient is near 1, past the clamp at 20
    return np.concatenate([_signed(rng, 2.0 ** rng.uniform(-60, 5, 2 * n)), _signed(rng, rng.uniform(0, 2, n)),
                           _signed(rng, rng.uniform(0, 25, n))])


# The bounds: exp 1 ulp; log 1.25 (its final sum cancels where k = -1 and m is near sqrt(2)); expm1 1 (exp's
# own error above 40); log1p and tanh 1 (their large terms summed exactly, the quotient corrected).
FLOAT64_BOUNDS = {"exp": 1.0, "log": 1.25, "expm1": 1.0, "log1p": 1.0, "tanh": 1.0}


@pytest.mark.skipif(LONG_DOUBLE_DIGITS <= 52, reason="needs numpy's longdouble wider than double for an exact reference")
@pytest.mark.parametrize("op", sorted(FLOAT64_BOUNDS))
def test_float64_forms_are_within_their_ulp_bounds(op: str) -> None:
    # exp_double, log_double, expm1_double, log1p_double, tanh_double against long double (x87, 64-bit mantissa)
    rng = np.random.default_rng(8)
    x = _float64_inputs(op, rng)
    got = np.asarray(getattr(ts, op)(ts.asarray(x)))
    assert got.dtype == np.float64
    exact = getattr(np, op)(x.astype(np.longdouble))
    finite = np.isfinite(exact) & (np.abs(exact) <= np.finfo(np.float64).max) & (np.abs(exact) >= np.finfo(np.float64).tiny)
    spacing = np.spacing(np.abs(exact[finite]).astype(np.float64)).astype(np.longdouble)
    err = np.abs(got[finite].astype(np.longdouble) - exact[finite]) / spacing
    assert float(err.max()) <= FLOAT64_BOUNDS[op], f"{op}({x[finite][err.argmax()]!r}): {float(err.max()):.2f} ulp"


def test_float64_expm1_log1p_tanh_specials() -> None:
    # Each against numpy's (libm's) result, bit for bit: zeros keep their sign, infinities, NaN, the domain's end.
    tiny = float(np.finfo(np.float64).smallest_subnormal)
    big = float(np.finfo(np.float64).max)
    x = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, tiny, -tiny, 1e-300, -1e-300, -1.0, -1.5, 40.0, 709.78, 709.79,
                  -40.0, -745.0, 20.0, -20.0, 1e300, big])
    with np.errstate(all="ignore"):
        for op in ("expm1", "log1p", "tanh"):
            got = np.asarray(getattr(ts, op)(ts.asarray(x)))
            want = getattr(np, op)(x)
            assert np.array_equal(np.isnan(got), np.isnan(want)), op
            same = np.isnan(want) | ((got == want) & (np.signbit(got) == np.signbit(want)))
            close = np.abs(got - want) <= np.spacing(np.abs(want))  # finite results: within an ulp of libm's
            assert (same | (np.isfinite(want) & close)).all(), (op, x[~(same | close)], got[~(same | close)])
            exact = np.isinf(want) | (want == 0) | (np.abs(want) == 1.0)
            assert (same | ~exact).all(), (op, x[exact & ~same])  # infinities, zeros, -1 and +-1 exactly


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"])
def test_integer_pow_wraps_as_numpy_for_every_exponent_bit(dtype: str) -> None:
    # Exponents with every bit set in turn, small and large bases of both signs, contiguous and with a broadcast
    # exponent: numpy's wrapped results.
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    base = np.concatenate([np.arange(max(info.min, -5), 6), rng.integers(info.min, info.max, 200, dtype=dtype, endpoint=True)]).astype(dtype)
    exponent = np.concatenate([np.arange(0, 70), 2 ** np.arange(6, info.bits - (1 if info.min < 0 else 0)),
                               [info.max, info.max - 1]]).astype(dtype)
    b, e = np.meshgrid(base, exponent)
    assert np.array_equal(np.asarray(ts.pow(ts.asarray(b), ts.asarray(e))), np.power(b, e))
    for k in (0, 1, 2, 3, 31):
        want = np.power(base, np.array(k, dtype=dtype))
        assert np.array_equal(np.asarray(ts.asarray(base) ** ts.asarray(np.array(k, dtype=dtype))), want), k


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"])
def test_integer_pow_is_the_same_wherever_an_element_sits(dtype: str) -> None:
    # Contiguous blocks whose exponents are all below 16 take four fixed steps (the spec's fast_expr), the rest
    # the loop over the exponent's bits: numpy's wrapped results either way, in blocks of small exponents, beside a
    # large exponent (every block then takes the loop) and in a strided run.
    info = np.iinfo(dtype)
    rng = np.random.default_rng(8)
    n = 256 * 40 - 5  # not whole blocks
    base = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    base[::3] = rng.integers(max(info.min, -7), 8, base[::3].size)
    exponent = rng.integers(0, 16, n).astype(dtype)
    exponent[rng.integers(0, n, 40)] = 15
    want = np.power(base, exponent)
    assert np.array_equal(np.asarray(ts.pow(ts.asarray(base), ts.asarray(exponent))), want)
    mixed = exponent.copy()
    mixed[::256] = rng.integers(16, min(info.max, 1000), mixed[::256].size)
    assert np.array_equal(np.asarray(ts.pow(ts.asarray(base), ts.asarray(mixed))), np.power(base, mixed))
    strided = ts.pow(ts.asarray(np.repeat(base, 2))[::2], ts.asarray(np.repeat(exponent, 2))[::2])
    assert np.array_equal(np.asarray(strided), want)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_float_pow_is_the_same_wherever_an_element_sits(dtype: str) -> None:
    # Contiguous blocks of positive finite bases and finite exponents take pow_float without its special cases
    # (the spec's fast_expr), the rest the whole of it: an element's bits must not depend on its neighbours, for
    # bases of every scale (subnormal included), 1, exponents 0 and huge. One special element in a block (a
    # negative base, a zero, an infinity, a NaN exponent) sends that block down the general path.
    rng = np.random.default_rng(11)
    n = 256 * 40 - 5  # not whole blocks
    base = (2.0 ** rng.uniform(-149, 127.9, n)).astype(np.float32)
    exponent = (rng.standard_normal(n) * np.where(rng.random(n) < 0.3, 1e3, 1.0)).astype(np.float32)
    base[rng.integers(0, n, 60)] = 1.0
    exponent[rng.integers(0, n, 60)] = 0.0
    exponent[rng.integers(0, n, 20)] = np.float32(3e38)
    x, y = ts.asarray(base).astype(ts.dtype(dtype)), ts.asarray(exponent).astype(ts.dtype(dtype))
    fast = np.asarray(ts.pow(x, y).astype(ts.float32))
    specials = [-2.0, 0.0, np.inf, -0.0]
    mixed_base = np.asarray(x.astype(ts.float32)).copy()
    mixed_base[::256] = [specials[k % len(specials)] for k in range(mixed_base[::256].size)]
    general = np.asarray(ts.pow(ts.asarray(mixed_base).astype(ts.dtype(dtype)), y).astype(ts.float32))
    kept = np.ones(n, bool)
    kept[::256] = False
    assert np.array_equal(fast[kept].view(np.uint32), general[kept].view(np.uint32))
    nan_exponent = np.asarray(y.astype(ts.float32)).copy()
    nan_exponent[128::256] = np.nan
    general = np.asarray(ts.pow(x, ts.asarray(nan_exponent).astype(ts.dtype(dtype))).astype(ts.float32))
    kept = np.ones(n, bool)
    kept[128::256] = False
    assert np.array_equal(fast[kept].view(np.uint32), general[kept].view(np.uint32))
    strided = ts.pow(ts.asarray(np.repeat(np.asarray(x.astype(ts.float32)), 2)).astype(ts.dtype(dtype))[::2], y)
    assert np.array_equal(np.asarray(strided.astype(ts.float32)).view(np.uint32), fast.view(np.uint32))
    with np.errstate(all="ignore"):
        want = np.power(np.asarray(x.astype(ts.float32)).astype(np.float64), np.asarray(y.astype(ts.float32)).astype(np.float64))
    if dtype == "float32":  # and the values are pow's: within half an ulp and a hair where finite and normal
        normal = np.isfinite(want) & (np.abs(want) >= float(np.finfo(np.float32).tiny)) & (np.abs(want) < float(np.finfo(np.float32).max))
        assert normal.mean() > 0.5 and ulps(fast[normal], want[normal]).max() <= 0.5001


def test_float64_exp_and_log_specials() -> None:
    tiny = float(np.finfo(np.float64).smallest_subnormal)
    x = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 709.78, 709.79, -745.1, -746.0, -1000.0, 1e-300])
    got = np.asarray(ts.exp(ts.asarray(x)))
    assert got[0] == 1.0 and got[1] == 1.0 and np.isnan(got[2]) and got[3] == np.inf and got[4] == 0.0
    assert np.isfinite(got[5]) and got[6] == np.inf and got[7] > 0.0 and got[8] == 0.0 and got[9] == 0.0 and got[10] == 1.0
    x = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, -1.0, -tiny, 1.0, tiny])
    with np.errstate(all="ignore"):
        want = np.log(x)
    got = np.asarray(ts.log(ts.asarray(x)))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert got[0] == -np.inf and got[1] == -np.inf and got[3] == np.inf and got[7] == 0.0
    assert got[8] == pytest.approx(np.log(tiny), rel=1e-15)  # the smallest subnormal, scaled before its bits are read


def _division_pairs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """float32 pairs for floor_divide and remainder: any bits (infinities, NaNs, subnormals), quotients next to
    whole numbers up to and past 2^28 (where the fast path ends), small integers, and the specials crossed."""
    n = 1 << 18
    any_a, any_b = rng.integers(0, 2**32, (2, n), dtype=np.uint64).astype(np.uint32).view(np.float32)
    divisor = magnitudes(rng, -140, 100, n) * rng.choice(np.float32([-1, 1]), n)
    whole = np.concatenate([rng.integers(1, 2**12, n // 4), rng.integers(2**27, 2**29, n // 2), rng.integers(1, 2**40, n // 4)])
    with np.errstate(over="ignore"):  # products past the float range are infinities: pairs of their own
        near = (whole * divisor.astype(np.float64)).astype(np.float32) * rng.choice(np.float32([-1, 1]), n)
    up, down = np.nextafter(near, np.float32(np.inf)), np.nextafter(near, np.float32(-np.inf))
    ints_a = rng.integers(-(2**24), 2**24, n).astype(np.float32)
    ints_b = rng.integers(-300, 301, n).astype(np.float32)
    specials = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, TINY, -TINY, 1.0, -1.0, 0.5, -3.0, 7.0, 3.4e38, -3.4e38])
    spec_a, spec_b = (g.ravel() for g in np.meshgrid(specials, specials))
    a = np.concatenate([any_a, near, up, down, ints_a, spec_a])
    b = np.concatenate([any_b, divisor, divisor, divisor, ints_b, spec_b])
    return a, b


@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
def test_float32_floor_divide_and_remainder_are_numpys_float64_rounded_once(op: str) -> None:
    # float32 computes in double and rounds once; most pairs skip libm's fmod (an exact quotient below 2^28).
    a, b = _division_pairs(np.random.default_rng(11))
    with np.errstate(all="ignore"):
        exact = getattr(np, op)(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    got = np.asarray(getattr(ts, op)(ts.asarray(a), ts.asarray(b)))
    same = (got.view(np.uint32) == exact.view(np.uint32)) | (np.isnan(got) & np.isnan(exact))
    assert same.all(), f"{op}({a[~same][:3]}, {b[~same][:3]}) = {got[~same][:3]}, expected {exact[~same][:3]}"


@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
def test_float32_floor_divide_and_remainder_are_the_same_wherever_a_pair_sits(op: str) -> None:
    # Contiguous blocks whose pairs all have |x1| < 2^27 |x2| and a finite x2 take the truncating forms without a
    # per-element branch (the spec's fast_expr), the others the general path: a pair's result must not depend on
    # which its block took: the float64 result rounded once, in whole blocks of such pairs, beside a pair that
    # sends every block down the general path, and in a strided run (always the general path).
    a, b = _division_pairs(np.random.default_rng(12))
    with np.errstate(all="ignore"):
        fast = (np.abs(a) < np.float32(2**27) * np.abs(b)) & (np.abs(b) <= np.finfo(np.float32).max)
    order = np.argsort(~fast, kind="stable")  # the fast pairs first, so that they fill whole blocks
    a, b = a[order], b[order]
    assert fast.sum() > 256 * 1000
    sends_to_general = a.copy(), b.copy()
    sends_to_general[1][::256] = 0.0  # a zero divisor in every block
    fn = getattr(ts, op)
    for x, y, got in ((a, b, fn(ts.asarray(a), ts.asarray(b))),
                      (*sends_to_general, fn(*map(ts.asarray, sends_to_general))),
                      (a, b, fn(ts.asarray(np.repeat(a, 2))[::2], ts.asarray(np.repeat(b, 2))[::2]))):  # fmt: skip
        with np.errstate(all="ignore"):
            exact = getattr(np, op)(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
        got = np.asarray(got)
        same = (got.view(np.uint32) == exact.view(np.uint32)) | (np.isnan(got) & np.isnan(exact))
        assert same.all(), f"{op}({x[~same][:3]}, {y[~same][:3]}) = {got[~same][:3]}, expected {exact[~same][:3]}"


def _ulps64(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Distances of doubles from long double references, in ulps of the double nearest each reference."""
    spacing = np.spacing(np.abs(exact).astype(np.float64)).astype(np.longdouble)
    return np.abs(got.astype(np.longdouble) - exact) / spacing


def _pow64_pairs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Bases of every scale with exponents up to where |y log2 x| reaches 1020 (pow_double_near's domain), bases
    near 1 with large exponents (log x small, y log x not), and exponents of every scale."""
    n = 1 << 18
    wide = 2.0 ** rng.uniform(-1022, 1023.9, n)
    bases = [rng.uniform(0.0, 10.0, n), wide, 1 + rng.normal(0, 1e-3, n), rng.uniform(0.99, 1.01, n),
             2.0 ** rng.uniform(-60, 60, n)]
    exponents = [rng.uniform(-30, 30, n), rng.uniform(-1020, 1020, n) / (np.abs(np.log2(wide)) + 1),
                 rng.normal(0, 1e4, n), rng.uniform(-1e5, 1e5, n),
                 rng.uniform(-1, 1, n) * 2.0 ** rng.uniform(-40, 4, n)]
    return np.concatenate(bases), np.concatenate(exponents)


def _in_pow_double_near_domain(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """pow_double_near_ok's domain (x = 2**k z, z in [sqrt(1/2), sqrt(2))), a hair inside its edges."""
    m, e = np.frexp(x)
    k = np.where(m >= math.sqrt(0.5), e, e - 1)
    return (x >= np.finfo(np.float64).tiny) & np.isfinite(x) & (np.abs(y) * (np.abs(k) + 0.5) <= 1019.0)


@pytest.mark.skipif(LONG_DOUBLE_DIGITS <= 52, reason="needs numpy's longdouble wider than double for an exact reference")
def test_float64_pow_is_within_half_an_ulp_and_a_hair() -> None:
    # pow_double_near carries log x and y log x as pairs of doubles and rounds once: within 0.505 ulp of the exact
    # value (long double's pow; its own error is about 2**-11 ulp of a double) over its domain. Elsewhere pow is
    # libm's (math.pow), bit for bit; glibc's pow is itself within about half an ulp, so the two differ rarely,
    # by 1 ulp at most.
    x, y = _pow64_pairs(np.random.default_rng(12))
    got = np.asarray(ts.pow(ts.asarray(x), ts.asarray(y)))
    assert got.dtype == np.float64
    near = _in_pow_double_near_domain(x, y)
    with np.errstate(all="ignore"):
        exact = np.power(x[near].astype(np.longdouble), y[near].astype(np.longdouble))
    assert near.mean() > 0.6 and (np.abs(exact) >= np.finfo(np.float64).tiny).all()
    err = _ulps64(got[near], exact)
    worst = int(err.argmax())
    assert float(err.max()) <= 0.505, f"pow({x[near][worst]!r}, {y[near][worst]!r}): {float(err.max()):.4f} ulp"
    sample = np.arange(0, x.size, 16)
    with np.errstate(all="ignore"):
        glibc = np.array([_ieee_pow(a, b) for a, b in zip(x[sample], y[sample])])
    apart = np.abs(got[sample].view(np.int64) - glibc.view(np.int64))
    assert (apart[~near[sample]] == 0).all(), "outside its domain pow is libm's"
    assert apart.max() <= 1 and (apart == 1).mean() < 0.005, (apart.max(), (apart == 1).mean())


def test_float64_pow_outside_its_near_domain_is_libms() -> None:
    # Subnormal and huge bases, results that overflow or underflow (subnormal results included), negative bases
    # to integer powers, zeros, infinities and NaN: libm's pow (math.pow), bit for bit, through the general path.
    rng = np.random.default_rng(13)
    n = 4000
    tiny = float(np.finfo(np.float64).smallest_subnormal)
    x = np.concatenate([tiny * rng.uniform(1, 2**52, n), 2.0 ** rng.uniform(900, 1023, n),
                        2.0 ** rng.uniform(-1022, -900, n), -rng.uniform(0.1, 10, n),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0]])
    y = np.concatenate([rng.uniform(-2, 2, n), rng.uniform(1.1, 3, n), rng.uniform(1.05, 1.2, n),
                        rng.integers(-30, 30, n).astype(float), [2.0, 3.0, -1.0, 0.5, 1.0, np.nan, np.inf, 1e308]])
    got = np.asarray(ts.pow(ts.asarray(x), ts.asarray(y)))
    with np.errstate(all="ignore"):
        want = np.array([1.0 if b == 0 or a == 1 else _ieee_pow(a, b) for a, b in zip(x, y)])
    same = (np.isnan(got) & np.isnan(want)) | (got.view(np.int64) == want.view(np.int64))
    assert same.all(), list(zip(x[~same], y[~same], got[~same], want[~same]))[:5]
    assert ((want > 0) & (want < np.finfo(np.float64).tiny)).any() and np.isinf(want).any()


def _ieee_pow(a: float, b: float) -> float:
    """C's pow, which math.pow calls, with its range errors answered as C answers them (inf, 0) rather than raised."""
    try:
        return math.pow(a, b)
    except OverflowError:
        return math.copysign(math.inf, a) if a < 0 and float(b).is_integer() and int(b) % 2 else math.inf
    except ValueError:
        return -math.inf if a == 0 and float(b).is_integer() and int(b) % 2 and math.copysign(1, a) < 0 else (
            math.inf if a == 0 else math.nan)


def test_float64_pow_is_the_same_wherever_an_element_sits() -> None:
    # Blocks whose every pair is in pow_double_near's domain take it vectorised (the spec's fast_expr); pow takes
    # it per element there too, so one out-of-domain element in a block (a subnormal base, a huge exponent, a
    # negative base) changes no other element's bits; strided runs and thread splits neither.
    rng = np.random.default_rng(14)
    n = 256 * 40 - 5
    base = 2.0 ** rng.uniform(-1000, 1000, n)
    exponent = rng.uniform(-1, 1, n) * 1000 / (np.abs(np.log2(base)) + 1)
    base[rng.integers(0, n, 60)] = 1.0
    exponent[rng.integers(0, n, 60)] = 0.0
    fast = np.asarray(ts.pow(ts.asarray(base), ts.asarray(exponent)))
    mixed = base.copy()
    mixed[::256] = [(-2.0, 5e-324, np.inf, 0.0)[k % 4] for k in range(mixed[::256].size)]
    general = np.asarray(ts.pow(ts.asarray(mixed), ts.asarray(exponent)))
    kept = np.ones(n, bool)
    kept[::256] = False
    assert np.array_equal(fast[kept].view(np.int64), general[kept].view(np.int64))
    huge = exponent.copy()
    huge[100::256] = 1e300
    untouched = np.arange(n) % 256 != 100
    with_huge = np.asarray(ts.pow(ts.asarray(base), ts.asarray(huge)))
    assert np.array_equal(fast[untouched].view(np.int64), with_huge[untouched].view(np.int64))
    strided = np.asarray(ts.pow(ts.asarray(np.repeat(base, 2))[::2], ts.asarray(np.repeat(exponent, 2))[::2]))
    assert np.array_equal(strided.view(np.int64), fast.view(np.int64))
    one_by_one = np.array([float(ts.pow(ts.asarray(a), ts.asarray(b))) for a, b in zip(base[:300], exponent[:300])])
    assert np.array_equal(one_by_one.view(np.int64), fast[:300].view(np.int64))
    assert (fast[(base == 1.0) | (exponent == 0.0)] == 1.0).all()


def _atan2_64_pairs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of every scale (subnormal to the largest doubles), pairs whose magnitudes are close (each reduction
    step's boundary), and points on the unit circle (every angle)."""
    n = 1 << 18
    angle = rng.uniform(-math.pi, math.pi, n)
    e = rng.uniform(-1080, 1000, n)
    y = np.concatenate([rng.standard_normal(n) * 2.0 ** rng.uniform(-1080, 1023, n), rng.standard_normal(n) * 2.0**e,
                        np.sin(angle), rng.standard_normal(n)])
    x = np.concatenate([rng.standard_normal(n) * 2.0 ** rng.uniform(-1080, 1023, n),
                        rng.standard_normal(n) * 2.0 ** (e + rng.uniform(-60, 60, n)), np.cos(angle),
                        rng.standard_normal(n) * rng.choice([0.25, 0.5, 0.75, 1.0, 2.0, 4.0], n)])
    return y, x


@pytest.mark.skipif(LONG_DOUBLE_DIGITS <= 52, reason="needs numpy's longdouble wider than double for an exact reference")
def test_float64_atan2_and_atan_are_within_their_bounds() -> None:
    # atan2_double carries the angle in pairs of doubles and rounds once: within 0.57 ulp of the exact value (long
    # double's atan2) wherever the result is normal, and within 1 ulp of glibc's (math.atan2). atan is atan2(x, 1).
    y, x = _atan2_64_pairs(np.random.default_rng(15))
    got = np.asarray(ts.atan2(ts.asarray(y), ts.asarray(x)))
    assert got.dtype == np.float64
    exact = np.arctan2(y.astype(np.longdouble), x.astype(np.longdouble))
    normal = np.abs(exact) >= np.finfo(np.float64).tiny
    err = _ulps64(got[normal], exact[normal])
    worst = int(err.argmax())
    assert float(err.max()) <= 0.57, f"atan2({y[normal][worst]!r}, {x[normal][worst]!r}): {float(err.max()):.4f} ulp"
    sample = slice(0, None, 8)
    glibc = np.array([math.atan2(a, b) for a, b in zip(y[sample], x[sample])])
    assert np.abs(got[sample].view(np.int64) - glibc.view(np.int64)).max() <= 1
    t = y[~np.isinf(y)]
    got1 = np.asarray(ts.atan(ts.asarray(t)))
    exact1 = np.arctan(t.astype(np.longdouble))
    normal1 = np.abs(exact1) >= np.finfo(np.float64).tiny
    err1 = _ulps64(got1[normal1], exact1[normal1])
    assert float(err1.max()) <= 0.57, f"atan({t[normal1][int(err1.argmax())]!r}): {float(err1.max()):.4f} ulp"


def test_float64_atan2_and_atan_specials_are_glibcs() -> None:
    # Zeros of both signs, infinities, NaN, subnormals, the largest doubles and the reduction's boundaries, in every
    # pair: C's atan2 (math.atan2) bit for bit, the sign of zero included; atan likewise.
    tiny = float(np.finfo(np.float64).smallest_subnormal)
    big = float(np.finfo(np.float64).max)
    values = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, tiny, -tiny, 1e-310, big, -big, 0.25, 0.5, 0.75, -2.0, 3.0]
    y, x = (a.ravel() for a in np.meshgrid(np.array(values), np.array(values)))
    got = np.asarray(ts.atan2(ts.asarray(y), ts.asarray(x)))
    want = np.array([math.atan2(a, b) for a, b in zip(y, x)])
    same = (np.isnan(got) & np.isnan(want)) | ((got == want) & (np.signbit(got) == np.signbit(want)))
    assert same.all(), list(zip(y[~same], x[~same], got[~same], want[~same]))
    v = np.array(values)
    got1 = np.asarray(ts.atan(ts.asarray(v)))
    want1 = np.array([math.atan(a) for a in v])
    same1 = (np.isnan(got1) & np.isnan(want1)) | ((got1 == want1) & (np.signbit(got1) == np.signbit(want1)))
    assert same1.all(), list(zip(v[~same1], got1[~same1], want1[~same1]))
