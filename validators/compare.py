"""Judging one result against the spec's numpy reference.

The policy (research note torchgen_opinfo.md §3.3, §3.6 item 12; kernel_agents.md §2.1 #4, #12, #13):

* The expected dtype and shape come from the reference run on the inputs in their own dtypes: that is
  numpy's promotion rule, and the candidate must match both exactly.
* Integer and bool results are exact (the reference ran in the inputs' own dtypes, so wrap-around agrees).
* Floating results are compared with the reference run in float64 (floating inputs, and integer inputs of
  ops with a floating result, converted first), cast to the result dtype, with torch.testing's default
  rtol/atol per dtype or the spec's override. NaN positions must match, infinities exactly, and zeros'
  signs too (except where numpy's own sign depends on its evaluation order: max/min over +0 and -0).
* Pointwise float results are judged in ulps: correctly rounded (bit for bit numpy's float64 arithmetic
  rounded once) unless the spec declares an ulp budget (`accuracy`), measured against the float64 result
  (float64 results: long double where it is wider); and a case's mean signed error may not lean more than
  BIAS_LIMIT ulp either way. An ulp is the result's, or (`accuracy: {relative_to: operands}`) that of the
  larger of the result and the operands, for ops that sum terms which may cancel (logaddexp near zero).
  A device may have budgets of its own (`accuracy: {cuda: ...}`), where its math library is less exact.
* float16 and bfloat16 (computed in float, stored narrow): the reference runs in float64 on the inputs
  upcast, rounded to the result dtype; that dtype, the shape and any error come from numpy's own rules
  (bfloat16 through a float16 stand-in, since ml_dtypes' loops promote differently: bfloat16 matmul
  gives float32 there).
* Low-precision rule: where the result dtype is below float64, an element also passes when it is no
  farther from the float64 result than numpy's own same-precision computation (an honest float32 kernel
  is not held to more than numpy achieves).
* Complex results are judged as their real and imaginary parts side by side, each within the tolerance of
  the parts' dtype relative to the element's magnitude |z| (norm-wise, as torch.testing does), NaN where
  NaN and infinities exact; complex64 against the reference in complex128, with the low-precision rule.
  Sums of complex products (families that reassociate: contraction, reduction) only have to be non-finite
  where the reference is: which infinity or NaN they give depends on the order of their multiplications, in
  numpy too (its loop and its BLAS path disagree).
  Not in ulps and without zero signs: numpy's complex functions are the C library's, whose last bits and
  zero signs differ between libraries (glibc's, which numpy calls, and tensorsmith/complex_math.h's).
* If numpy raises ValueError (e.g. max over an empty axis), the candidate must raise it too.

Mismatch.summary() is what a proposer may see: the case's shapes, layouts and values in words and the
first wrong element, never seeds or salt.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from tensorsmith_forge.catalog.dtypes import COMPLEX, COMPLEX_PART, FLOATING, HALF, Promotion
from tensorsmith_forge.catalog.model import CORRECTLY_ROUNDED, OpSpec

from .inputs import Case, is_float

# (rtol, atol) as torch.testing. float16/bfloat16: one unit in the last place is 2**-10 / 2**-7 relative, and
# a kernel that computes in float and rounds once may land one unit from the rounded float64 result.
DEFAULT_TOLERANCE = {"float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7), "float16": (1e-3, 1e-5),
                     "bfloat16": (1.6e-2, 1e-5)}  # fmt: skip
# Families set their own defaults (FamilyDef.tolerances): softmax relative to each probability, sums
# against the magnitude of their terms.
# Exception classes too general to count as "the same error" when numpy raises a subclass.
_GENERIC_ERRORS = {"Exception", "BaseException", "LookupError", "ArithmeticError", "object"}


class HarnessError(RuntimeError):
    """The reference failed in a way that is not the op's declared error: a bug in the case or the spec."""


# ---- what the candidate produced ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Raised:
    """The candidate raised: its exception class name and the names of its bases (most derived first)."""

    type: str
    message: str = ""
    bases: tuple[str, ...] = ()

    @staticmethod
    def from_exception(exc: BaseException) -> Raised:
        mro = tuple(c.__name__ for c in type(exc).__mro__)
        return Raised(mro[0], str(exc), mro[1:])

    @property
    def names(self) -> tuple[str, ...]:
        return (self.type, *self.bases)


# ---- what numpy says -----------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Expected:
    """The reference's answer for one case and value set."""

    error: Raised | None = None  # numpy raised (a ValueError): the candidate must raise too
    dtype: str | None = None
    shape: tuple[int, ...] | None = None
    values: np.ndarray | None = None  # the precise result, cast to `dtype` (float64: numpy's own float64 result)
    # float results: the result before the cast, in float64 (for float64 results of pointwise ops, in long
    # double where it is wider: the yardstick of ulp budgets)
    precise: np.ndarray | None = None
    honest: np.ndarray | None = None  # float results below float64: numpy's own same-precision result
    # float results below float64: where numpy's own result in the operands' dtype (ml_dtypes' for bfloat16)
    # is NaN; widening quiets a signalling NaN, so the reference can give a number there (hypot(inf, sNaN))
    numpy_nan: np.ndarray | None = None
    # Sums and products of sums (sum, mean, matmul): the reference on the inputs' magnitudes, sum |x| and
    # sum |a||b|. A sum's honest rounding error grows with its terms, not with its (cancelled) result.
    # Pointwise ops whose accuracy is relative to their operands (logaddexp): the largest operand magnitude.
    scale: np.ndarray | None = None
    # float64 results of pointwise ops: the reference in long double on the elements a boolean mask picks
    # (None where long double is no wider or the reference has no loop for it). Computed only where a result
    # differs from numpy's own float64 one, since long double math is slow.
    refine: Any = None

    def precise_at(self, mask: np.ndarray) -> np.ndarray:
        """The precise result on the elements `mask` picks: long double where refine gives it."""
        refined = self.refine(mask) if self.refine is not None else None
        return refined if refined is not None else np.asarray(self.precise)[mask]


def expected_result(spec: OpSpec, case: Case, which: str = "a", fn=None) -> Expected:
    """Runs the reference on the case's value set `which` ("a", "b" or "c")."""
    fn = fn or spec.reference_callable()
    expected = _expected(spec, case, fn, [np.array(a, copy=True) for a in case.arrays(which)])
    if expected.precise is None:
        return expected
    if spec.accuracy is not None and spec.accuracy.relative_to == "operands":
        return replace(expected, scale=_largest_operand(case.arrays(which), expected.shape))
    if spec.family.term_magnitudes is not None:
        return replace(expected, scale=spec.family.term_magnitudes(case.arrays(which), case.kwargs))
    if not _sums_terms(spec):
        return expected
    with np.errstate(all="ignore"):  # widened first: abs of int8's -128 would wrap
        magnitudes = [np.abs(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)) for a in case.arrays(which)]
    return replace(expected, scale=np.abs(_float64_reference(spec, case, fn, magnitudes, expected.shape)).astype(np.float64))


def _largest_operand(args: Sequence[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    """Per result element, the largest magnitude among the operands it comes from (float64; NaN and inf as
    they are: ulp_errors measures only finite results)."""
    with np.errstate(all="ignore"):
        magnitudes = [np.broadcast_to(np.abs(a.astype(np.float64)), shape) for a in args]
        return np.fmax.reduce(magnitudes) if magnitudes else np.zeros(shape)


def _sums_terms(spec: OpSpec) -> bool:
    """Whether the op's result is a sum of terms whose magnitudes the reference can sum too."""
    return spec.promotion in spec.family.sums


def _expected(spec: OpSpec, case: Case, fn, args: list[np.ndarray]) -> Expected:
    if any(a.dtype.name in HALF for a in args):
        return _expected_half(spec, case, fn, args)
    own = _reference(spec, case, fn, args)
    if isinstance(own, Expected):
        return own
    dtype, shape = own.dtype.name, own.shape
    if own.dtype.kind == "c":
        return _expected_complex(spec, case, fn, args, own)
    if own.dtype.kind != "f":
        return Expected(dtype=dtype, shape=shape, values=own.copy())
    if "exact" in spec.tags:  # nextafter(float32) is the next float32: no float64 result stands for it
        return Expected(dtype=dtype, shape=shape, values=own.copy(), precise=own.astype(np.float64))
    if dtype == "float64":
        refine = _long_double_reference(spec, case, fn, args, shape) if spec.family.judged_in_ulps else None
        return Expected(dtype=dtype, shape=shape, values=own.copy(), precise=own.copy(), refine=refine)
    # bool too (exp(bool) is float16 in numpy, computed in float16 without this); where's condition stays
    condition = 0 if spec.promotion is Promotion.where else -1
    with np.errstate(all="ignore"):  # complex inputs (abs of complex64) in complex128
        wide = [a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) if a.dtype.kind in "iufbc" and i != condition
                else a for i, a in enumerate(args)]  # fmt: skip
    precise = _float64_reference(spec, case, fn, wide, shape).astype(np.float64)
    with np.errstate(all="ignore"):
        values = precise.astype(own.dtype)
    return Expected(dtype=dtype, shape=shape, values=values, precise=precise, honest=own.copy(), numpy_nan=_nan_at(own))


def _expected_complex(spec: OpSpec, case: Case, fn, args: list[np.ndarray], own: np.ndarray) -> Expected:
    """Complex results: complex128 is numpy's own; complex64 is the reference on the inputs widened to
    complex128 and float64, rounded, with numpy's own complex64 result as the honest one."""
    if own.dtype == np.complex128:
        return Expected(dtype=own.dtype.name, shape=own.shape, values=own.copy(), precise=own.copy())
    condition = 0 if spec.promotion is Promotion.where else -1
    with np.errstate(all="ignore"):
        wide = [a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) if a.dtype.kind in "iufbc" and i != condition
                else a for i, a in enumerate(args)]  # fmt: skip
    precise = _float64_reference(spec, case, fn, wide, own.shape).astype(np.complex128)
    with np.errstate(all="ignore"):
        values = precise.astype(own.dtype)
    return Expected(dtype=own.dtype.name, shape=own.shape, values=values, precise=precise, honest=own.copy())


def parts(a: np.ndarray) -> np.ndarray:
    """A complex array as its real and imaginary parts along a new last axis (float32 for complex64); any
    other array as it is."""
    a = np.asarray(a)
    if a.dtype.kind != "c":
        return a
    return np.stack([a.real, a.imag], axis=-1)


def _compare_complex(spec: OpSpec, case: Case, which: str, meta: dict, got: np.ndarray, expected: Expected) -> Mismatch | None:
    """Each part within the parts' tolerance relative to the element's magnitude (or, for sums, to the sum of
    the terms' magnitudes); see the module's docstring."""
    part = COMPLEX_PART[got.dtype.name]
    tol = tolerance(spec, case.dtype, part)
    want = parts(expected.values)
    with np.errstate(all="ignore"):
        magnitude = np.abs(np.asarray(expected.values, dtype=np.complex128))
        if expected.scale is not None:
            magnitude = np.maximum(magnitude, np.where(np.isfinite(expected.scale), expected.scale, 0.0))
    ok = close(parts(got), want, tol.rtol, tol.atol, False, np.repeat(magnitude[..., None], 2, axis=-1))
    if expected.honest is not None and not ok.all():
        ok |= no_farther(parts(got), parts(expected.honest), parts(expected.precise))
    if spec.family.reassociates and not ok.all():
        ok |= np.repeat(_both_not_finite(parts(got), want)[..., None], 2, axis=-1)
    if ok.all():
        return None
    return _report(case, which, meta, ~ok, parts(got), want, tol)


def _both_not_finite(got_parts: np.ndarray, want_parts: np.ndarray) -> np.ndarray:
    """Per element: neither the result nor the reference is finite (in either part). Which infinity or NaN a
    sum of complex products with special values gives depends on the order and form of its multiplications,
    and numpy's own answer depends on its code path: of 3000 drawn complex64 vector-matrix products with
    specials, 75 differ between a strided call (numpy's loop) and the same call on contiguous copies (BLAS)."""
    with np.errstate(all="ignore"):
        return ~np.all(np.isfinite(got_parts), axis=-1) & ~np.all(np.isfinite(want_parts), axis=-1)


def _expected_half(spec: OpSpec, case: Case, fn, args: list[np.ndarray]) -> Expected:
    """float16/bfloat16 inputs: numpy's rules (on float16 stand-ins for bfloat16) give the result's dtype,
    shape or error; the values are the float64 result on the upcast inputs, rounded to that dtype."""
    bfloat16 = any(a.dtype.name == "bfloat16" for a in args)
    with np.errstate(all="ignore"):  # signalling NaNs are quieted by the casts, as by numpy's own
        stand_ins = [a.astype(np.float16) if a.dtype.name == "bfloat16" else a for a in args]
        wide = [a.astype(np.float64) if a.dtype.name in HALF else a for a in args]
    own = _reference(spec, case, fn, stand_ins)
    if isinstance(own, Expected):
        return own
    dtype = "bfloat16" if bfloat16 and own.dtype.name == "float16" else own.dtype.name
    precise = _float64_reference(spec, case, fn, wide, own.shape)
    with np.errstate(all="ignore"):
        values = precise.astype(dtype)
    if not is_float(dtype):  # comparisons, argmax: exact on the exactly upcast inputs
        return Expected(dtype=dtype, shape=own.shape, values=values)
    honest = own.copy() if dtype == "float16" else None  # numpy has no bfloat16 arithmetic of its own here
    numpy_nan = _nan_at(own) if dtype == "float16" else _nan_at(_bfloat16_own(spec, case, fn, args, own.shape))
    return Expected(dtype=dtype, shape=own.shape, values=values, precise=precise.astype(np.float64), honest=honest,
                    numpy_nan=numpy_nan)


def _nan_at(own: np.ndarray | None) -> np.ndarray | None:
    """Where numpy's own low-precision float result is NaN (None without one)."""
    if own is None or own.dtype.kind != "f" and own.dtype.name != "bfloat16":
        return None
    with np.errstate(all="ignore"):
        return np.isnan(own.astype(np.float64))


def _bfloat16_own(spec: OpSpec, case: Case, fn, args: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray | None:
    """The reference on the bfloat16 inputs themselves, where ml_dtypes has a bfloat16 loop for it (hypot
    has; a reference written in float64 steps has not); None otherwise."""
    try:
        result = np.asarray(_quiet(fn, args, case.kwargs))
    except Exception:  # noqa: BLE001 - no bfloat16 loop: nothing to learn from it
        return None
    return result if result.dtype.name == "bfloat16" and result.shape == shape else None


def _reference(spec: OpSpec, case: Case, fn, args: list[np.ndarray]) -> np.ndarray | Expected:
    """numpy's own result on `args`; the expected error where numpy raises ValueError."""
    try:
        return np.asarray(_quiet(fn, args, case.kwargs))
    except ValueError as exc:
        return Expected(error=Raised.from_exception(exc))
    except Exception as exc:  # noqa: BLE001 - anything else is our bug, not the candidate's
        raise HarnessError(f"{spec.name} {case.id}: the reference raised {type(exc).__name__}: {exc}") from exc


def _float64_reference(spec: OpSpec, case: Case, fn, wide: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    """The reference on float64-upcast inputs, which must have the shape numpy's own result has."""
    try:
        precise = np.asarray(_quiet(fn, wide, case.kwargs))
    except Exception as exc:  # noqa: BLE001
        raise HarnessError(f"{spec.name} {case.id}: the float64 reference raised {type(exc).__name__}: {exc}") from exc
    if precise.shape != shape:
        raise HarnessError(f"{spec.name} {case.id}: the float64 reference has shape {precise.shape}, not {shape}")
    return precise


def _long_double_reference(spec: OpSpec, case: Case, fn, args: list[np.ndarray], shape: tuple[int, ...]):
    """The reference in long double where this platform's is wider than float64 (x86-64: 64-bit
    significands), on the elements a mask picks, so that a float64 result's error is measured against more
    than numpy's own float64 functions (themselves up to about an ulp off); None where it is not wider."""
    if np.finfo(np.longdouble).nmant <= np.finfo(np.float64).nmant:
        return None
    condition = 0 if spec.promotion is Promotion.where else -1

    def refine(mask: np.ndarray) -> np.ndarray | None:
        with np.errstate(all="ignore"):  # a signalling NaN is quieted on the way, as numpy's own casts do
            picked = [np.broadcast_to(a, shape)[mask] for a in args]  # pointwise: each element on its own
            # integers and bool as numpy's float64 loop sees them (an int64 beyond 2**53 rounded), floats exactly
            wide = [a.astype(np.clongdouble) if a.dtype.kind == "c" and i != condition else
                    (a if a.dtype.kind == "f" else a.astype(np.float64)).astype(np.longdouble)
                    if a.dtype.kind in "iufb" and i != condition else a for i, a in enumerate(picked)]  # fmt: skip
        try:
            result = np.asarray(_quiet(fn, wide, case.kwargs))
        except Exception:  # noqa: BLE001 - the reference has no long double loop: float64 it is
            return None
        return result if result.dtype == np.longdouble and result.shape == picked[0].shape else None

    return refine


def _quiet(fn, args: Sequence[np.ndarray], kwargs: dict[str, Any]):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# ---- tolerances -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    source: str  # "default" or the spec override's reason


def tolerance(spec: OpSpec, dtype: str, result_dtype: str) -> Tolerance:
    """The spec's override for the dtype under test (else for the result dtype), else the family's default,
    else torch.testing's."""
    for key in (dtype, result_dtype):
        for override in spec.tolerances:
            if override.dtype == key:
                return Tolerance(override.rtol, override.atol, override.reason)
    rtol, atol = spec.family.tolerance_for(result_dtype) or DEFAULT_TOLERANCE.get(result_dtype, (0.0, 0.0))
    return Tolerance(rtol, atol, "default")


def reassociation_allowed(spec: OpSpec, result_dtype: str) -> bool:
    """Whether two runs may differ by rounding: float reductions, normalizations and contractions."""
    return spec.family.reassociates and result_dtype in FLOATING + COMPLEX


# ---- the verdict ------------------------------------------------------------------------------------------------


# What a proposer is told about the run that showed a mismatch (validators/runner.py), beyond run a's fresh call.
RUN_WORDS = {
    "b": "on the second value set, written into the same memory after a first call",
    "c": "on inputs that begin as a first call's did and differ after, in new memory",
    "a2": "on a second call with the first call's inputs in new memory",
    "raw": "with new memory left as the allocator hands it out, as in production",
    "g": "on one thread, every buffer placed against a no-access page",
}


@dataclass(frozen=True)
class Mismatch:
    op: str
    case_id: str
    description: str
    dtype: str  # the dtype under test
    kind: str  # raised, no_error, wrong_error, not_array, dtype, shape, values, nan, inf, signed_zero, bias,
    #            not_repeatable, input_changed, device_parity
    message: str  # one line
    value_set: str = "a"
    hidden: bool = False
    operands: tuple[dict[str, Any], ...] = ()  # name, dtype, shape, strides, offset, layout of each operand
    kwargs: dict[str, Any] = field(default_factory=dict)
    expected_dtype: str | None = None
    actual_dtype: str | None = None
    expected_shape: tuple[int, ...] | None = None
    actual_shape: tuple[int, ...] | None = None
    mismatched: int = 0
    total: int = 0
    index: tuple[int, ...] | None = None
    expected: str | None = None
    actual: str | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    rtol: float | None = None
    atol: float | None = None
    run: str = "a"  # the gate's run that showed it (validators/runner.py)

    def summary(self, detail: bool = True) -> str:
        """A few lines for a proposer; `detail=False` leaves out the case's shapes and layouts."""
        where = f"{self.op}[{self.dtype}] case {self.case_id}" + (" (hidden)" if self.hidden else "")
        lines = [f"{where}: {self.message}"]
        if detail:
            for o in self.operands:
                lines.append(f"  {o['name']}: {o['dtype']} shape {tuple(o['shape'])} strides {tuple(o['strides'])} "
                             f"offset {o['offset']} ({o['layout_text']}; {o['values']})")  # fmt: skip
            if self.kwargs:
                lines.append("  " + ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items()))
        if self.index is not None:
            lines.append(f"  first wrong element at {self.index}: expected {self.expected}, got {self.actual}")
        if self.max_abs_error is not None:
            tol = f" (rtol {self.rtol:g}, atol {self.atol:g})" if self.rtol is not None else ""
            lines.append(f"  max abs error {self.max_abs_error:.6g}, max rel error {self.max_rel_error:.6g}{tol}")
        if self.run in RUN_WORDS:
            lines.append(f"  ({RUN_WORDS[self.run]})")
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps({k: _jsonable(v) for k, v in asdict(self).items()}, sort_keys=True)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def _mismatch(case: Case, kind: str, message: str, which: str, **extra: Any) -> Mismatch:
    operands = tuple({k: v for k, v in op.meta().items() if k != "size"} for op in case.operands)
    return Mismatch(case.op, case.id, case.description, case.dtype, kind, message, which, case.hidden, operands,
                    dict(case.kwargs), **extra)  # fmt: skip


# ---- comparing -----------------------------------------------------------------------------------------------------


def compare(spec: OpSpec, case: Case, actual: Any, *, which: str = "a", expected: Expected | None = None,
            device: str = "cpu") -> Mismatch | None:  # fmt: skip
    """None if `actual` (an array-like result, or a Raised) is right for the case's value set `which`; `device`
    ran it (its math library's ulp budgets, where the spec gives it its own)."""
    expected = expected or expected_result(spec, case, which)
    if expected.error is not None:
        if not isinstance(actual, Raised):
            return _mismatch(case, "no_error", f"numpy raises {expected.error.type} ({expected.error.message}); "
                             "the candidate returned a result", which)  # fmt: skip
        accepted = {n for n in expected.error.names if n not in _GENERIC_ERRORS}
        if accepted.isdisjoint(actual.names):
            return _mismatch(case, "wrong_error", f"numpy raises {expected.error.type} ({expected.error.message}); "
                             f"the candidate raised {actual.type}: {actual.message}", which)  # fmt: skip
        return None
    if isinstance(actual, Raised):
        return _mismatch(case, "raised", f"raised {actual.type}: {actual.message}", which)
    try:
        got = np.asarray(actual)
    except Exception as exc:  # noqa: BLE001
        return _mismatch(case, "not_array", f"the result is not an array ({type(exc).__name__}: {exc})", which)
    meta = {"expected_dtype": expected.dtype, "actual_dtype": got.dtype.name, "expected_shape": expected.shape,
            "actual_shape": got.shape}  # fmt: skip
    if got.dtype.name != expected.dtype:
        return _mismatch(case, "dtype", f"result dtype {got.dtype.name}, numpy gives {expected.dtype}", which, **meta)
    if got.shape != expected.shape:
        return _mismatch(case, "shape", f"result shape {got.shape}, numpy gives {expected.shape}", which, **meta)
    assert expected.values is not None
    if _bitwise_equal(got, expected.values).all():
        return None
    if got.dtype.kind == "c":
        return _compare_complex(spec, case, which, meta, got, expected)
    if not is_float(got.dtype):  # bitwise, so a bool stored as byte 2 (or a canary byte) is not "True"
        wrong = ~_bitwise_equal(got, expected.values)
        return _report(case, which, meta, wrong, got, expected.values, None) if wrong.any() else None
    if spec.family.judged_in_ulps:
        return _compare_pointwise(spec, case, which, meta, got, expected, device)
    tol = tolerance(spec, case.dtype, expected.dtype)
    signs = _zero_sign_matters(spec, case, which, expected)
    ok = close(got, expected.values, tol.rtol, tol.atol, signs, expected.scale)
    if expected.honest is not None and not ok.all():
        ok |= no_farther(got, expected.honest, expected.precise) & _zero_signs_agree(got, expected.values, signs)
    if ok.all():
        return None
    return _report(case, which, meta, ~ok, got, expected.values, tol)


# ---- pointwise accuracy: ulp budgets, correct rounding, bias -------------------------------------------------------

# Significand bits (with the implicit one) and the smallest normal exponent of each float dtype.
_FORMAT = {"float64": (53, -1022), "float32": (24, -126), "float16": (11, -14), "bfloat16": (8, -126)}
# The power of two one ulp past each dtype's largest finite value: what an infinity stands for at the edge of
# the range (rounding to nearest gives infinity from halfway to it).
_PAST_LARGEST = {"float32": 2.0**128, "float16": 2.0**16, "bfloat16": 2.0**128}
BIAS_LIMIT = 0.25  # ulp: the most a case's mean signed error may be from zero
BIAS_MIN_ELEMENTS = 256  # distinct finite results a case needs before its mean error says anything


def ulp_budget(spec: OpSpec, result_dtype: str, input_dtype: str | None = None, device: str = "cpu") -> float:
    """The op's budget in ulps of `result_dtype` on `device`: the spec's (its budget for a complex
    `input_dtype` first; the device's own where the spec gives one), or 0.5 (correctly rounded) without one.
    A 16-bit float result is computed in float and rounded once: half an ulp plus float32's budget, scaled."""
    if spec.accuracy is None:
        return CORRECTLY_ROUNDED
    if input_dtype is not None and spec.accuracy.budget(input_dtype, device) is not None:
        return spec.accuracy.budget(input_dtype, device)
    if result_dtype in HALF:
        single = spec.accuracy.budget("float32", device)
        if single is None:
            return CORRECTLY_ROUNDED
        return CORRECTLY_ROUNDED + single * 2.0 ** (_FORMAT[result_dtype][0] - _FORMAT["float32"][0])
    budget = spec.accuracy.budget(result_dtype, device)
    return CORRECTLY_ROUNDED if budget is None else budget


def ulp_errors(actual: np.ndarray, precise: np.ndarray, dtype: str, scale: np.ndarray | None = None) -> np.ndarray:
    """Signed error of each element in ulps of `dtype` at the precise value (its binade's spacing, the
    subnormal spacing below the normal range), or at `scale` where that is larger; 0 where either is not
    finite."""
    bits, min_exponent = _FORMAT[dtype]
    p = np.asarray(precise)
    wide = np.longdouble if p.dtype == np.longdouble else np.float64
    with np.errstate(all="ignore"):
        a, p = np.asarray(actual).astype(wide), p.astype(wide)
        finite = np.isfinite(a) & np.isfinite(p)
        at = p if scale is None else np.fmax(np.abs(p), np.where(np.isfinite(scale), scale, 0.0).astype(wide))
        _, exponent = np.frexp(np.where(finite, at, 1.0))
        ulp = np.ldexp(wide(1.0), np.maximum(exponent - 1, min_exponent) - (bits - 1))
        return np.where(finite, (a - p) / ulp, 0.0).astype(np.float64)


def _compare_pointwise(spec: OpSpec, case: Case, which: str, meta: dict, got: np.ndarray, expected: Expected,
                       device: str) -> Mismatch | None:  # fmt: skip
    """Non-finite results where numpy's are (NaN for NaN, any payload; infinities exact), zero signs as
    numpy's, and finite results within the op's ulp budget of the precise value: correctly rounded (numpy's
    own float64 arithmetic, rounded once) where the spec declares none. NaN is also numpy's answer where its
    own result in the operands' dtype is NaN and the widened reference's is not: widening quiets a signalling
    NaN, and libm answers hypot(inf, sNaN) with NaN but hypot(inf, qNaN) with inf. Then the mean error:
    rounding one way every time stays within a budget of an ulp, but moves every sum of results."""
    budget = ulp_budget(spec, expected.dtype, case.dtype, device)
    values = expected.values
    with np.errstate(all="ignore"):
        g, v = got.astype(np.float64), values.astype(np.float64)
        finite = np.isfinite(g) & np.isfinite(v)
        numpy_nan = expected.numpy_nan if expected.numpy_nan is not None else False
        # NaN meets NaN, an infinity its own sign
        special = np.where(np.isnan(v), np.isnan(g), (g == v) | (np.isnan(g) & numpy_nan))
    measured_got = got
    if budget == CORRECTLY_ROUNDED:
        within, measured = _bitwise_equal(got, values), finite
    else:
        edge = _at_the_overflow_edge(g, v, expected)
        if edge.any():  # an infinity there counts as the power of two past the largest finite value
            measured_got = np.where(edge & np.isinf(g), np.copysign(_PAST_LARGEST[expected.dtype], g), g)
            finite = finite | edge
        # numpy's own float64 result is the reference: where a float64 result equals it, it is as good
        within = np.array(_bitwise_equal(got, values) if expected.refine is not None else np.zeros(got.shape), dtype=bool)
        measured = finite & ~within
        if measured.any():
            within[measured] = np.abs(_ulp_errors_at(measured_got, expected, measured)) <= budget
    ok = np.where(finite, within, special) & _zero_signs_agree(g, v, True)
    if not ok.all():
        mismatch = _report(case, which, meta, ~ok, got, values, None)
        errors = np.abs(_ulp_errors_at(measured_got, expected, measured)) if measured.any() else np.zeros(1)
        what = "correctly rounded" if budget == CORRECTLY_ROUNDED else f"within {budget:g} ulp"
        if expected.scale is not None:
            what += " of the larger of the result and the operands"
        return replace(mismatch, message=f"{mismatch.message}; the result must be {what} "
                                         f"(largest error here {float(errors.max()):.3g} ulp)")  # fmt: skip
    if budget == CORRECTLY_ROUNDED:
        return None
    # A device held to a wider budget than the CPU's may lean as much wider (CUDA's atan2: 0.26 ulp).
    widened = budget / ulp_budget(spec, expected.dtype, case.dtype) if device != "cpu" else 1.0
    return _bias(case, which, meta, got, expected, BIAS_LIMIT * max(1.0, widened))


def _at_the_overflow_edge(got: np.ndarray, rounded: np.ndarray, expected: Expected) -> np.ndarray:
    """Where one of the result and numpy's rounded result is infinite and the other finite, of one sign, and the
    precise (float64) result finite: a result below float64 whose exact value lies at the edge of its range,
    where a kernel within its ulp budget may round to the largest finite value or to infinity either way."""
    if expected.precise is None or expected.dtype == "float64":
        return np.zeros(got.shape, dtype=bool)
    with np.errstate(all="ignore"):
        one_infinite = np.isinf(got) != np.isinf(rounded)
        same_sign = ~np.isnan(got) & ~np.isnan(rounded) & (np.signbit(got) == np.signbit(rounded))
        return one_infinite & same_sign & np.isfinite(np.asarray(expected.precise, dtype=np.float64))


def _ulp_errors_at(got: np.ndarray, expected: Expected, mask: np.ndarray) -> np.ndarray:
    """The signed ulp errors of the elements `mask` picks, against the precise result (and the operands'
    magnitude where the spec measures against it)."""
    scale = np.asarray(expected.scale)[mask] if expected.scale is not None else None
    return ulp_errors(got[mask], expected.precise_at(mask), expected.dtype, scale)


BIAS_SAMPLE = 4096  # distinct results the mean error is taken over (a sample of larger cases)


def _bias(case: Case, which: str, meta: dict, got: np.ndarray, expected: Expected, limit: float = BIAS_LIMIT) -> Mismatch | None:
    """A mismatch when the case's results lean one way: their mean signed error from the correctly rounded
    result, over distinct exact results (a broadcast input repeats one element's error), exceeds `limit` ulp
    (an honest function within an ulp errs both ways)."""
    with np.errstate(all="ignore"):
        usable = np.isfinite(got.astype(np.float64)) & np.isfinite(np.asarray(expected.precise, dtype=np.float64))
    _, distinct = np.unique(np.asarray(expected.precise).reshape(-1)[usable.reshape(-1)], return_index=True)
    if len(distinct) < BIAS_MIN_ELEMENTS:
        return None
    if len(distinct) > BIAS_SAMPLE:  # a fixed sample: the same elements every time this case is judged
        distinct = np.random.default_rng(len(distinct)).choice(distinct, BIAS_SAMPLE, replace=False)
    picked = np.zeros(got.size, dtype=bool)
    picked[np.flatnonzero(usable.reshape(-1))[distinct]] = True
    picked = picked.reshape(got.shape)
    precise = expected.precise_at(picked)
    scale = np.asarray(expected.scale)[picked] if expected.scale is not None else None
    with np.errstate(all="ignore"):
        rounded = precise.astype(expected.dtype)
    lean = float(np.mean(ulp_errors(got[picked], precise, expected.dtype, scale) - ulp_errors(rounded, precise, expected.dtype, scale)))
    if abs(lean) <= limit:
        return None
    direction = "above" if lean > 0 else "below"
    return _mismatch(case, "bias", f"biased results: on average {abs(lean):.3f} ulp {direction} the correctly rounded "
                     f"result over {len(distinct)} distinct results (at most {limit:g} ulp either way)", which, **meta)  # fmt: skip


def _zero_sign_matters(spec: OpSpec, case: Case, which: str, expected: Expected) -> np.ndarray | bool:
    """Where a zero result of a reduction, normalization or contraction must have numpy's sign: where the
    float64 result is itself exactly zero (a tiny result that rounds to zero may come out as either zero,
    as any value within the tolerance may), except in max and min over elements that tie at zero with both
    signs: numpy's own answer there depends on its SIMD lanes (a row of +0 and -0 gives either); and, in a
    family judged against its terms' magnitudes, only where those are zero too."""
    matters = np.asarray(expected.precise == 0) if expected.precise is not None else True
    if spec.family.term_magnitudes is not None and expected.scale is not None:
        # a zero whose terms are not all zero is a cancellation (n m - g with m a mean that cancels): its sign
        # is the rounding of the kernel's order, which no honest order fixes
        return matters & (np.asarray(expected.scale) == 0)
    if spec.promotion is not Promotion.reduce_same or not spec.family.folds:
        return matters
    x = case.arrays(which)[0]
    axis = case.kwargs.get("axis")
    keepdims = bool(case.kwargs.get("keepdims", False))
    with np.errstate(all="ignore"):
        zero = x.astype(np.float64) == 0
        negative = np.signbit(x.astype(np.float64))
        both = np.any(zero & negative, axis=axis, keepdims=keepdims) & np.any(zero & ~negative, axis=axis, keepdims=keepdims)
    return matters & ~np.asarray(both).reshape(expected.shape)


def close(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float, signed_zero: np.ndarray | bool = True,
          scale: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """Elementwise: |a - e| <= atol + rtol * |e| (or rtol * scale, the magnitude of the terms summed, where
    that is larger), NaN where NaN, infinities exact, zero signs where asked."""
    with np.errstate(all="ignore"):  # ml_dtypes' bfloat16 NaN warns as it widens
        a = np.asarray(actual, dtype=np.float64)
        e = np.asarray(expected, dtype=np.float64)
        a_nan, e_nan = np.isnan(a), np.isnan(e)
        finite = np.isfinite(a) & np.isfinite(e)
        magnitude = np.abs(e) if scale is None else np.maximum(np.abs(e), np.where(np.isfinite(scale), scale, 0.0))
        ok = np.where(finite, np.abs(a - e) <= atol + rtol * magnitude, a == e)
    ok = (ok & ~a_nan & ~e_nan) | (a_nan & e_nan)
    return ok & _zero_signs_agree(a, e, signed_zero)


def no_farther(actual: np.ndarray, honest: np.ndarray, precise: np.ndarray) -> np.ndarray:
    """Elementwise: the result is at least as close to `precise` as the honest low-precision result is;
    where either is not finite, it must equal the honest result (NaN matching NaN)."""
    with np.errstate(all="ignore"):  # ml_dtypes' bfloat16 NaN warns as it widens
        a = np.asarray(actual, dtype=np.float64)
        h = np.asarray(honest, dtype=np.float64)
        p = np.asarray(precise, dtype=np.float64)
        finite = np.isfinite(a) & np.isfinite(h) & np.isfinite(p)
        nearer = np.abs(a - p) <= np.abs(h - p)
        same = (a == h) | (np.isnan(a) & np.isnan(h))
    return np.where(finite, nearer, same)


def _zero_signs_agree(a: np.ndarray, e: np.ndarray, signed_zero: np.ndarray | bool) -> np.ndarray | bool:
    """Where both are zero, the same sign (only where `signed_zero` holds)."""
    with np.errstate(all="ignore"):  # ml_dtypes' bfloat16 NaN warns as it widens
        a, e = np.asarray(a, dtype=np.float64), np.asarray(e, dtype=np.float64)
    return ~((a == 0) & (e == 0) & (np.signbit(a) != np.signbit(e)) & signed_zero)


def _report(case: Case, which: str, meta: dict, wrong: np.ndarray, got: np.ndarray, want: np.ndarray,
            tol: Tolerance | None) -> Mismatch:  # fmt: skip
    index = tuple(int(i) for i in np.argwhere(wrong)[0]) if wrong.ndim else ()
    a, e = got[index], want[index]
    kind, what = "values", "wrong values"
    if is_float(got.dtype):
        if np.isnan(a) != np.isnan(e):
            kind, what = "nan", "NaN in the wrong place"
        elif (np.isinf(a) or np.isinf(e)) and a != e:
            kind, what = "inf", "wrong infinity"
        elif a == 0 and e == 0 and np.signbit(a) != np.signbit(e):
            kind, what = "signed_zero", "wrong sign of zero"
    abs_err, rel_err = _errors(got, want)
    extra: dict[str, Any] = {"rtol": tol.rtol, "atol": tol.atol} if tol is not None else {}
    return _mismatch(case, kind, f"{what} at {int(wrong.sum())} of {wrong.size} elements", which, **meta,
                     mismatched=int(wrong.sum()), total=int(wrong.size), index=index, expected=_show(e),
                     actual=_show(a), max_abs_error=abs_err, max_rel_error=rel_err, **extra)  # fmt: skip


def _errors(got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    """Largest absolute and relative error over the elements where both are finite."""
    got, want = got.reshape(-1), want.reshape(-1)
    if got.dtype == np.bool_:
        got, want = got.astype(np.int8), want.astype(np.int8)
    if got.dtype.kind in "iu":
        diff = _integer_differences(got, want)
        base = np.abs(want.astype(np.float64))
    else:  # floats; complex ones as complex (a cast to float64 would drop the imaginary parts)
        wide = np.complex128 if got.dtype.kind == "c" or want.dtype.kind == "c" else np.float64
        with np.errstate(all="ignore"):
            a, e = got.astype(wide), want.astype(wide)
        both = np.isfinite(a) & np.isfinite(e)
        with np.errstate(all="ignore"):
            diff = np.where(both, np.abs(a - e), 0.0)
        base = np.where(both, np.abs(e), 1.0)
    if not diff.size:
        return 0.0, 0.0
    with np.errstate(all="ignore"):
        rel = np.where(base > 0, diff / np.where(base > 0, base, 1.0), np.where(diff > 0, np.inf, 0.0))
    return float(np.max(diff)), float(np.max(rel))


def _integer_differences(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| of two 1-d integer arrays, exact however wide the integers, then rounded once to float64."""
    if max(got.dtype.itemsize, want.dtype.itemsize) < 8:
        return np.abs(got.astype(np.int64) - want.astype(np.int64)).astype(np.float64)
    if got.dtype == want.dtype:  # the larger minus the smaller is below 2**64: exact modulo 2**64
        high, low = np.maximum(got, want), np.minimum(got, want)
        return (high.astype(np.uint64) - low.astype(np.uint64)).astype(np.float64)
    return np.abs(got.astype(object) - want.astype(object)).astype(np.float64)  # int64 beside uint64: Python ints


def _show(value: Any) -> str:
    value = np.asarray(value)
    if is_float(value.dtype):
        if value.dtype in (np.float16, np.float32):
            return np.format_float_scientific(value, unique=True)
        return repr(float(value))  # float64, and bfloat16 (exact as a float)
    return repr(value.item())


# ---- repeatability and inputs ------------------------------------------------------------------------------------


def compare_runs(spec: OpSpec, case: Case, first: Any, second: Any, *, which: str = "a") -> Mismatch | None:
    """Two runs of the candidate on the same inputs: bitwise equal, or within the dtype tolerance for a
    float reduction, normalization or contraction (which may reassociate, e.g. across threads)."""
    a, b = np.asarray(first), np.asarray(second)
    if a.dtype != b.dtype or a.shape != b.shape:
        return _mismatch(case, "not_repeatable", f"two runs gave {a.dtype}{a.shape} and {b.dtype}{b.shape}", which)
    if np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes():
        return None
    if reassociation_allowed(spec, a.dtype.name):
        complex_result = a.dtype.kind == "c"
        a, b = parts(a), parts(b)  # complex: part by part, zero signs aside (see the module's docstring)
        tol = tolerance(spec, case.dtype, a.dtype.name)
        signs = False if complex_result else _zero_sign_matters(spec, case, which, Expected(shape=a.shape))
        ok = close(b, a, tol.rtol, tol.atol, signs)
        if ok.all():
            return None
        wrong = ~ok
    else:
        wrong = ~_bitwise_equal(a, b)
        tol = None
    mismatch = _report(case, which, {}, wrong, b, a, tol)
    index = mismatch.index
    message = (f"not repeatable: a second run on the same inputs differs at {mismatch.mismatched} of "
               f"{mismatch.total} elements (first at {index}: {mismatch.expected} then {mismatch.actual})")  # fmt: skip
    return replace(mismatch, kind="not_repeatable", message=message)


def device_parity(spec: OpSpec, case: Case, cpu: Any, device: Any, *, which: str = "a", on: str = "cuda",
                  expected: Expected | None = None) -> Mismatch | None:  # fmt: skip
    """The same inputs on the CPU kernel and on device `on`'s: one dtype and shape, and values close enough
    that both can be right (math libraries differ in the last bits; NaN must meet NaN): pointwise, within the
    sum of the two devices' ulp budgets of each other (bit for bit where both are correctly rounded); other
    families, within twice the dtype's tolerance, measured against the magnitude of the terms where the
    reference (`expected`) knows it (a sum that cancels is judged as the reference judges it); complex sums
    and products of the families that reassociate, non-finite where the other is; integers and bools exactly.
    Keeps the two devices from drifting apart even where both pass the reference."""
    a, b = np.asarray(cpu), np.asarray(device)
    if a.dtype != b.dtype or a.shape != b.shape:
        return _mismatch(case, "device_parity", f"the CPU gave {a.dtype}{a.shape} and the device {b.dtype}{b.shape}", which)
    if is_float(a.dtype) and spec.family.judged_in_ulps:
        budgets, tol = (ulp_budget(spec, a.dtype.name, case.dtype), ulp_budget(spec, a.dtype.name, case.dtype, on)), None
        with np.errstate(all="ignore"):
            wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
            finite = np.isfinite(wide_a) & np.isfinite(wide_b)
            same = np.where(np.isnan(wide_a), np.isnan(wide_b), wide_a == wide_b)
            exact = budgets == (CORRECTLY_ROUNDED, CORRECTLY_ROUNDED)
            scale = expected.scale if expected is not None and expected.shape == a.shape else None
            near = _bitwise_equal(a, b) if exact else np.abs(ulp_errors(b, a, a.dtype.name, scale)) <= sum(budgets)
        wrong = ~(np.where(finite, near, same) & _zero_signs_agree(wide_a, wide_b, True))
    elif a.dtype.kind == "c":  # the host's and the device's math libraries: part by part within the tolerance
        a, b = parts(a), parts(b)
        tol = _twice(tolerance(spec, case.dtype, a.dtype.name))
        with np.errstate(all="ignore"):
            magnitude = np.abs(a[..., :1] + 1j * a[..., 1:])
        wrong = ~close(b, a, tol.rtol, tol.atol, False, np.repeat(magnitude, 2, axis=-1))
        if spec.family.reassociates:  # products of specials in another order: as the reference allows
            wrong &= ~np.repeat(_both_not_finite(b, a)[..., None], 2, axis=-1)
    elif is_float(a.dtype):
        tol = _twice(tolerance(spec, case.dtype, a.dtype.name))
        scale = expected.scale if expected is not None and expected.scale is not None and expected.shape == a.shape else None
        wrong = ~close(b, a, tol.rtol, tol.atol, _zero_sign_matters(spec, case, which, Expected(shape=a.shape)), scale)
    else:
        wrong, tol = ~_bitwise_equal(a, b), None
    if not wrong.any():
        return None
    mismatch = _report(case, which, {}, wrong, b, a, tol)
    message = (f"the CPU and the device disagree at {mismatch.mismatched} of {mismatch.total} elements "
               f"(first at {mismatch.index}: CPU {mismatch.expected}, device {mismatch.actual})")  # fmt: skip
    return replace(mismatch, kind="device_parity", message=message)


def _twice(tol: Tolerance) -> Tolerance:
    """Two results each within `tol` of the reference are within twice it of each other."""
    return replace(tol, rtol=2 * tol.rtol, atol=2 * tol.atol)


def _bitwise_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise bit-for-bit equality (so -0.0 != 0.0 and NaN == the same NaN); same dtype and shape."""
    if a.dtype == b.dtype and a.dtype.kind == "c":  # both parts
        return np.all(_bitwise_equal(parts(a), parts(b)), axis=-1)
    bits = a.dtype.kind in "fiub" or a.dtype.name == "bfloat16"
    if a.dtype == b.dtype and bits and a.dtype.itemsize in (1, 2, 4, 8):  # bool too: 0xA5 is not 1
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        # ascontiguousarray makes 0-d arrays 1-d: reshape back
        return np.ascontiguousarray(a).view(unsigned).reshape(a.shape) == np.ascontiguousarray(b).view(unsigned).reshape(b.shape)
    return np.asarray(a == b)


def inputs_unchanged(case: Case, changed: Sequence[np.ndarray | None], *, which: str = "a") -> Mismatch | None:
    """The candidate must not write its inputs: each whole buffer (gaps included), where the runner saw it
    differ after the run from the value set it held (None where it did not)."""
    for op, after in zip(case.operands, changed):
        if after is None:
            continue
        before = op.buffer_for(which)
        after = np.asarray(after)
        if after.shape != before.shape or after.dtype != before.dtype:
            return _mismatch(case, "input_changed", f"input {op.name}: buffer came back as {after.dtype}{after.shape}", which)
        count = int(np.sum(~_bitwise_equal(before, after)))
        return _mismatch(case, "input_changed", f"input {op.name} was modified ({count} buffer elements)", which)
    return None
