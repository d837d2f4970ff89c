"""Judging one result against the spec's numpy reference.

The policy (research note torchgen_opinfo.md §3.3, §3.6 item 12; kernel_agents.md §2.1 #4, #12, #13):

* The expected dtype and shape come from the reference run on the inputs in their own dtypes: that is
  numpy's promotion rule, and the candidate must match both exactly.
* Integer and bool results are exact (the reference ran in the inputs' own dtypes, so wrap-around agrees).
* Floating results are compared with the reference run in float64 (floating inputs, and integer inputs of
  ops with a floating result, converted first), cast to the result dtype, with torch.testing's default
  rtol/atol per dtype or the spec's override. NaN positions must match, infinities exactly, and zeros'
  signs too where the spec is tagged `signed_zero`.
* float16 and bfloat16 (computed in float, stored narrow): the reference runs in float64 on the inputs
  upcast, rounded to the result dtype; that dtype, the shape and any error come from numpy's own rules
  (bfloat16 through a float16 stand-in, since ml_dtypes' loops promote differently: bfloat16 matmul
  gives float32 there).
* Low-precision rule: where the result dtype is below float64, an element also passes when it is no
  farther from the float64 result than numpy's own same-precision computation (an honest float32 kernel
  is not held to more than numpy achieves).
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

from generator.model import FLOATING, HALF, Family, OpSpec, Promotion

from .inputs import Case, is_float

# (rtol, atol) as torch.testing. float16/bfloat16: one unit in the last place is 2**-10 / 2**-7 relative, and
# a kernel that computes in float and rounds once may land one unit from the rounded float64 result.
DEFAULT_TOLERANCE = {"float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7), "float16": (1e-3, 1e-5),
                     "bfloat16": (1.6e-2, 1e-5)}  # fmt: skip
REASSOCIATING_FAMILIES = (Family.reduction, Family.normalization, Family.contraction)
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
    values: np.ndarray | None = None  # the precise result, cast to `dtype`
    precise: np.ndarray | None = None  # float results: the float64 result before the cast
    honest: np.ndarray | None = None  # float results below float64: numpy's own same-precision result


def reference_function(spec: OpSpec):
    return spec.reference.compile([a.name for a in spec.signature.arguments])


def expected_result(spec: OpSpec, case: Case, which: str = "a", fn=None) -> Expected:
    """Runs the reference on the case's value set `which` ("a" or "b")."""
    fn = fn or reference_function(spec)
    args = [np.array(a, copy=True) for a in case.arrays(which)]
    if any(a.dtype.name in HALF for a in args):
        return _expected_half(spec, case, fn, args)
    own = _reference(spec, case, fn, args)
    if isinstance(own, Expected):
        return own
    dtype, shape = own.dtype.name, own.shape
    if own.dtype.kind != "f":
        return Expected(dtype=dtype, shape=shape, values=own.copy())
    if dtype == "float64":
        return Expected(dtype=dtype, shape=shape, values=own.copy(), precise=own.copy())
    # bool too (exp(bool) is float16 in numpy, computed in float16 without this); where's condition stays
    condition = 0 if spec.promotion is Promotion.where else -1
    wide = [a.astype(np.float64) if a.dtype.kind in "iufb" and i != condition else a for i, a in enumerate(args)]
    precise = _float64_reference(spec, case, fn, wide, shape).astype(np.float64)
    with np.errstate(all="ignore"):
        values = precise.astype(own.dtype)
    return Expected(dtype=dtype, shape=shape, values=values, precise=precise, honest=own.copy())


def _expected_half(spec: OpSpec, case: Case, fn, args: list[np.ndarray]) -> Expected:
    """float16/bfloat16 inputs: numpy's rules (on float16 stand-ins for bfloat16) give the result's dtype,
    shape or error; the values are the float64 result on the upcast inputs, rounded to that dtype."""
    bfloat16 = any(a.dtype.name == "bfloat16" for a in args)
    own = _reference(spec, case, fn, [a.astype(np.float16) if a.dtype.name == "bfloat16" else a for a in args])
    if isinstance(own, Expected):
        return own
    dtype = "bfloat16" if bfloat16 and own.dtype.name == "float16" else own.dtype.name
    precise = _float64_reference(spec, case, fn, [a.astype(np.float64) if a.dtype.name in HALF else a for a in args], own.shape)
    with np.errstate(all="ignore"):
        values = precise.astype(dtype)
    if not is_float(dtype):  # comparisons, argmax: exact on the exactly upcast inputs
        return Expected(dtype=dtype, shape=own.shape, values=values)
    honest = own.copy() if dtype == "float16" else None  # numpy has no bfloat16 arithmetic of its own here
    return Expected(dtype=dtype, shape=own.shape, values=values, precise=precise.astype(np.float64), honest=honest)


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
    """The spec's override for the dtype under test (else for the result dtype), else torch.testing's default."""
    for key in (dtype, result_dtype):
        for override in spec.tolerances:
            if override.dtype == key:
                return Tolerance(override.rtol, override.atol, override.reason)
    rtol, atol = DEFAULT_TOLERANCE.get(result_dtype, (0.0, 0.0))
    return Tolerance(rtol, atol, "default")


def reassociation_allowed(spec: OpSpec, result_dtype: str) -> bool:
    """Whether two runs may differ by rounding: float reductions, normalizations and contractions."""
    return spec.family in REASSOCIATING_FAMILIES and result_dtype in FLOATING


# ---- the verdict ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    op: str
    case_id: str
    description: str
    dtype: str  # the dtype under test
    kind: str  # raised, no_error, wrong_error, not_array, dtype, shape, values, nan, inf, signed_zero,
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
        if self.value_set == "b":
            lines.append("  (on the second value set, written into the same memory after a first call)")
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


def compare(spec: OpSpec, case: Case, actual: Any, *, which: str = "a", expected: Expected | None = None) -> Mismatch | None:
    """None if `actual` (an array-like result, or a Raised) is right for the case's value set `which`."""
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
    if not is_float(got.dtype):  # bitwise, so a bool stored as byte 2 (or a canary byte) is not "True"
        wrong = ~_bitwise_equal(got, expected.values)
        return _report(case, which, meta, wrong, got, expected.values, None) if wrong.any() else None
    tol = tolerance(spec, case.dtype, expected.dtype)
    signed_zero = "signed_zero" in spec.tags
    ok = close(got, expected.values, tol.rtol, tol.atol, signed_zero)
    if expected.honest is not None and not ok.all():
        ok |= no_farther(got, expected.honest, expected.precise) & _zero_signs_agree(got, expected.values, signed_zero)
    if ok.all():
        return None
    return _report(case, which, meta, ~ok, got, expected.values, tol)


def close(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float, signed_zero: bool = False) -> np.ndarray:
    """Elementwise: |a - e| <= atol + rtol * |e|, NaN where NaN, infinities exact, zero signs if asked."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    with np.errstate(all="ignore"):
        a_nan, e_nan = np.isnan(a), np.isnan(e)
        finite = np.isfinite(a) & np.isfinite(e)
        ok = np.where(finite, np.abs(a - e) <= atol + rtol * np.abs(e), a == e)
    ok = (ok & ~a_nan & ~e_nan) | (a_nan & e_nan)
    return ok & _zero_signs_agree(a, e, signed_zero)


def no_farther(actual: np.ndarray, honest: np.ndarray, precise: np.ndarray) -> np.ndarray:
    """Elementwise: the result is at least as close to `precise` as the honest low-precision result is;
    where either is not finite, it must equal the honest result (NaN matching NaN)."""
    a = np.asarray(actual, dtype=np.float64)
    h = np.asarray(honest, dtype=np.float64)
    p = np.asarray(precise, dtype=np.float64)
    with np.errstate(all="ignore"):
        finite = np.isfinite(a) & np.isfinite(h) & np.isfinite(p)
        nearer = np.abs(a - p) <= np.abs(h - p)
        same = (a == h) | (np.isnan(a) & np.isnan(h))
    return np.where(finite, nearer, same)


def _zero_signs_agree(a: np.ndarray, e: np.ndarray, signed_zero: bool) -> np.ndarray | bool:
    if not signed_zero:
        return True
    return ~((a == 0) & (e == 0) & (np.signbit(a) != np.signbit(e)))


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
    if got.dtype == np.bool_:
        got, want = got.astype(np.int8), want.astype(np.int8)
    if got.dtype.kind in "iu":  # exact difference, however wide the integers
        diff = np.abs(got.astype(object) - want.astype(object)).astype(np.float64) if got.size else np.zeros(0)
        base = np.abs(want.astype(np.float64))
    else:
        a, e = got.astype(np.float64), want.astype(np.float64)
        both = np.isfinite(a) & np.isfinite(e)
        with np.errstate(all="ignore"):
            diff = np.where(both, np.abs(a - e), 0.0)
        base = np.where(both, np.abs(e), 1.0)
    if not diff.size:
        return 0.0, 0.0
    with np.errstate(all="ignore"):
        rel = np.where(base > 0, diff / np.where(base > 0, base, 1.0), np.where(diff > 0, np.inf, 0.0))
    return float(np.max(diff)), float(np.max(rel))


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
        tol = tolerance(spec, case.dtype, a.dtype.name)
        ok = close(b, a, tol.rtol, tol.atol, "signed_zero" in spec.tags)
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


def device_parity(spec: OpSpec, case: Case, cpu: Any, device: Any, *, which: str = "a") -> Mismatch | None:
    """The same inputs on the CPU kernel and on another device's: one dtype and shape, and values within the
    dtype's tolerance of each other (math libraries differ in the last bits; NaN must meet NaN), or exact for
    integers and bools. Keeps the two devices from drifting apart even where both pass the reference."""
    a, b = np.asarray(cpu), np.asarray(device)
    if a.dtype != b.dtype or a.shape != b.shape:
        return _mismatch(case, "device_parity", f"the CPU gave {a.dtype}{a.shape} and the device {b.dtype}{b.shape}", which)
    if a.dtype.kind == "f":
        tol = tolerance(spec, case.dtype, a.dtype.name)
        wrong = ~close(b, a, tol.rtol, tol.atol, "signed_zero" in spec.tags)
    else:
        wrong, tol = ~_bitwise_equal(a, b), None
    if not wrong.any():
        return None
    mismatch = _report(case, which, {}, wrong, b, a, tol)
    message = (f"the CPU and the device disagree at {mismatch.mismatched} of {mismatch.total} elements "
               f"(first at {mismatch.index}: CPU {mismatch.expected}, device {mismatch.actual})")  # fmt: skip
    return replace(mismatch, kind="device_parity", message=message)


def _bitwise_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise bit-for-bit equality (so -0.0 != 0.0 and NaN == the same NaN); same dtype and shape."""
    bits = a.dtype.kind in "fiub" or a.dtype.name == "bfloat16"
    if a.dtype == b.dtype and bits and a.dtype.itemsize in (1, 2, 4, 8):  # bool too: 0xA5 is not 1
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        # ascontiguousarray makes 0-d arrays 1-d: reshape back
        return np.ascontiguousarray(a).view(unsigned).reshape(a.shape) == np.ascontiguousarray(b).view(unsigned).reshape(b.shape)
    return np.asarray(a == b)


def inputs_unchanged(case: Case, buffers: Sequence[np.ndarray], *, which: str = "a") -> Mismatch | None:
    """The candidate must not write its inputs: the whole buffers, gaps included, are compared bitwise."""
    for op, after in zip(case.operands, buffers):
        before = op.buffer if which == "a" else op.buffer_b
        after = np.asarray(after)
        if after.shape != before.shape or after.dtype != before.dtype:
            return _mismatch(case, "input_changed", f"input {op.name}: buffer came back as {after.dtype}{after.shape}", which)
        same = _bitwise_equal(before, after)
        if not same.all():
            changed = int(np.sum(~same))
            return _mismatch(case, "input_changed", f"input {op.name} was modified ({changed} buffer elements)", which)
    return None


