"""Test inputs for the acceptance gate, derived from an op's spec.

`generate_cases(spec, dtype, salt=...)` gives the cases one op x dtype is judged
on: shapes that reach the 0-d, empty, tail, large and broadcasting paths, axis
sets for reductions, layouts that reach every strided path, and value sets
with special values, integer limits and several distributions (OpInfo's
reference inputs, research note torchgen_opinfo.md §3.2/§3.6; exploits 2, 3, 6
and 11 of kernel_agents.md §2.1).

Every operand is a raw physical layout a runner reproduces exactly in another
process: a 1-D contiguous `buffer` (gaps poisoned: NaN for floats, the dtype's
maximum for integers, True for bool, so reading a wrong element shows), an
element `offset` and element `strides` (0 for broadcast dims, negative for
reversed ones). `buffer_b` has the same layout and other values: the gate runs
the candidate on `buffer`, rewrites the same memory with `buffer_b` and runs
again, which catches results cached on pointer or shape.

Seeds are an HMAC of (op, dtype, case id) keyed with the caller's salt. The
shown cases have fixed shapes and layouts (their values depend on the salt);
hidden cases (`hidden=True`) draw their shapes, axes, layouts and value sets
from the salt too, so nothing in the shown set predicts them. Cases do not
depend on the device: every backend is judged on the same inputs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import ml_dtypes  # noqa: F401  (numpy's bfloat16 dtype, by name)
import numpy as np

from tensorsmith_forge.catalog.cases import S, CaseTemplate, pick
from tensorsmith_forge.catalog.dtypes import COMPLEX, COMPLEX_PART, FLOATING, HALF, Promotion
from tensorsmith_forge.catalog.families import FamilyDef
from tensorsmith_forge.catalog.model import OpSpec
from tensorsmith_forge.catalog.signature import BaseType

from .runner import load_arrays, save_arrays, value_set_c

LAYOUTS = ("contiguous", "offset", "transposed", "permuted", "strided", "negative", "padded", "expanded", "mixed")
# Value distributions a template names; for integers and bool each maps to its own kind (see _dist_name).
DISTRIBUTIONS = ("normal", "uniform", "bulk", "heavy", "lognormal", "specials", "large", "ties", "mixed", "ascending",
                 "descending", "zeros", "few_zeros")  # fmt: skip
FORMAT_VERSION = 1


# ---- the data model ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Operand:
    """One tensor argument as raw memory: the view is buffer[offset + sum(i_k * strides[k])]."""

    name: str  # the spec's argument name
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements; 0 = broadcast, negative = reversed
    offset: int  # in elements, into buffer
    buffer: np.ndarray  # 1-D, contiguous; what no view element covers holds poison
    buffer_b: np.ndarray  # same length and layout, other values
    layout: str  # one of LAYOUTS
    layout_text: str  # the layout in words
    values: str  # the value distribution, e.g. "normal" or "limits"
    # Value set "c" is value set a up to this buffer position and value set b from it on: a result memoised
    # on the first inputs of an earlier call (value set a) shows as wrong here.
    split: int = 0

    def buffer_for(self, which: str) -> np.ndarray:
        """The buffer holding value set "a", "b" or "c" (a up to `split`, then b)."""
        if which == "a":
            return self.buffer
        if which == "b":
            return self.buffer_b
        if which == "c":
            return value_set_c(self.buffer, self.buffer_b, self.split)
        raise ValueError(f"no value set {which!r}")

    def view(self, buffer: np.ndarray | None = None) -> np.ndarray:
        """The operand as a numpy view of `buffer` (default: self.buffer), zero-copy."""
        buf = self.buffer if buffer is None else buffer
        if buf.ndim != 1 or buf.dtype != np.dtype(self.dtype) or not buf.flags.c_contiguous:
            raise ValueError(f"{self.name}: need a 1-D contiguous {self.dtype} buffer")
        if len(buf) != len(self.buffer):
            raise ValueError(f"{self.name}: buffer has {len(buf)} elements, the layout needs {len(self.buffer)}")
        item = buf.dtype.itemsize
        return np.ndarray(self.shape, buf.dtype, buffer=buf, offset=self.offset * item,
                          strides=tuple(s * item for s in self.strides))  # fmt: skip

    def array(self, which: str = "a") -> np.ndarray:
        """The view onto value set "a" (buffer), "b" (buffer_b) or "c" (see split)."""
        return self.view(self.buffer_for(which))

    def addressed(self) -> np.ndarray:
        """Boolean mask over the buffer: True where some view element lives."""
        mask = np.zeros(len(self.buffer), dtype=bool)
        if 0 not in self.shape:
            index = np.full(self.shape, self.offset, dtype=np.int64)
            for axis, (n, s) in enumerate(zip(self.shape, self.strides)):
                shape = [1] * len(self.shape)
                shape[axis] = n
                index = index + (np.arange(n, dtype=np.int64) * s).reshape(shape)
            mask[index.ravel()] = True
        return mask

    def describe(self) -> str:
        return f"{self.name} {self.dtype}{list(self.shape)} {self.layout_text}"

    def meta(self) -> dict[str, Any]:
        """Everything but the buffers, JSON-ready."""
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape), "strides": list(self.strides),
                "offset": self.offset, "size": len(self.buffer), "layout": self.layout,
                "layout_text": self.layout_text, "values": self.values, "split": self.split}  # fmt: skip


@dataclass(frozen=True, eq=False)
class Case:
    op: str
    dtype: str  # the dtype under test
    id: str  # "c07" (shown), "h03" (hidden) or "t01" (threshold, hidden); stable for a given spec, dtype and salt
    description: str  # shapes, layouts, kwargs and value sets in words
    operands: tuple[Operand, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)  # axis (None, int or tuple of ints), keepdims
    hidden: bool = False

    def arrays(self, which: str = "a") -> list[np.ndarray]:
        """The numpy views of every operand onto value set "a", "b" or "c"."""
        return [op.array(which) for op in self.operands]

    @staticmethod
    def from_arrays(spec: OpSpec, arrays: Sequence[np.ndarray], kwargs: dict[str, Any] | None = None, *,
                    case_id: str = "x00", description: str | None = None) -> Case:  # fmt: skip
        """A case from given arrays (contiguous copies; any dtypes), e.g. for mixed-dtype or regression checks.
        Its `buffer_b` repeats `buffer`; its dtype is the first non-condition operand's."""
        names = [a.name for a in spec.signature.tensor_arguments]
        if len(arrays) != len(names):
            raise ValueError(f"{spec.name} takes {len(names)} tensors, got {len(arrays)}")
        operands = []
        for name, array in zip(names, arrays):
            array = np.array(array, order="C", copy=True)  # keeps 0-d (ascontiguousarray would not)
            buffer = array.reshape(-1)
            strides = tuple(s // array.dtype.itemsize for s in array.strides)
            operands.append(Operand(name, array.dtype.name, array.shape, strides, 0, buffer, buffer.copy(),
                                    "contiguous", "contiguous", "given"))  # fmt: skip
        kwargs = dict(kwargs or {})
        dtype = operands[1 if spec.promotion is Promotion.where else 0].dtype
        return Case(spec.name, dtype, case_id, description or _describe(operands, kwargs), tuple(operands), kwargs)

    @property
    def size(self) -> int:
        """Elements over all operand views (the case's cost, roughly)."""
        return sum(math.prod(op.shape) for op in self.operands)


def is_float(dtype: Any) -> bool:
    """A floating dtype, ml_dtypes' bfloat16 (numpy kind 'V') included."""
    dt = np.dtype(dtype)
    return dt.kind == "f" or dt.name == "bfloat16"


# Largest finite values: generated values beyond them would overflow to infinity when stored.
HALF_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38}


def poison(dtype: str) -> Any:
    """What fills the buffer outside the view."""
    if dtype in FLOATING + COMPLEX:
        return np.nan
    return True if dtype == "bool" else np.iinfo(dtype).max


def operand_dtypes(spec: OpSpec, dtype: str) -> list[str]:
    """where's condition is bool; every other tensor input has the dtype under test."""
    count = len(spec.signature.tensor_arguments)
    return ["bool" if spec.promotion is Promotion.where and i == 0 else dtype for i in range(count)]


# ---- entry point -----------------------------------------------------------------------------------


def generate_cases(spec: OpSpec, dtype: str, *, salt: bytes, hidden: bool = False, device: str = "cpu") -> list[Case]:
    """The cases for one op x dtype: the shown set, plus the hidden set when `hidden`.

    `salt` keys every seed; the gate keeps its own secret one, tests pass a fixed one.
    `device` is accepted for the gate's sake; cases are the same on every device.
    """
    if not isinstance(salt, (bytes, bytearray)) or not salt:
        raise TypeError("salt must be non-empty bytes")
    if dtype not in spec.dtypes:
        raise ValueError(f"{spec.name} does not declare dtype {dtype}")
    del device
    ctx = _Context.of(spec, dtype, bytes(salt))
    templates = [(f"c{i:02d}", t, False) for i, t in enumerate(_shown_templates(ctx))]
    if hidden:
        hrng = ctx.rng("hidden-templates")
        drawn = list(enumerate(_hidden_templates(ctx, hrng)))
        if dtype in HALF:  # half of them: the kernels share float32's code paths, only loads and stores differ
            drawn = drawn[::2]
        templates += [(f"h{i:02d}", t, True) for i, t in drawn]
    return [_build_case(ctx, case_id, t, is_hidden) for case_id, t, is_hidden in templates]


# ---- context: what the spec allows -------------------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    spec: OpSpec
    dtype: str
    salt: bytes
    names: tuple[str, ...]
    dtypes: tuple[str, ...]
    bounds: dict[str, tuple[float | None, float | None]]
    order_sensitive: bool  # float results depend on the summation order (sum, mean, prod, matmul)
    float_result: bool
    # A reduction that multiplies (prod): partial products of a long row overflow or underflow in an order
    # of the kernel's choosing (0 * inf is NaN in one order, inf in another), so its values are exact.
    multiplicative: bool = False

    @staticmethod
    def of(spec: OpSpec, dtype: str, salt: bytes) -> _Context:
        names = tuple(a.name for a in spec.signature.tensor_arguments)
        sensitive = spec.promotion in spec.family.sums
        return _Context(spec, dtype, salt, names, tuple(operand_dtypes(spec, dtype)),
                        {b.argument: (b.low, b.high) for b in spec.domain if b.holds_for(dtype)}, sensitive,
                        _probe_float_result(spec, dtype), sensitive and _probe_multiplicative(spec))  # fmt: skip

    def digest(self, *parts: str) -> bytes:
        message = "\x00".join((self.spec.name, self.dtype, *parts)).encode()
        return hmac.new(self.salt, message, hashlib.sha256).digest()

    def rng(self, *parts: str) -> np.random.Generator:
        return np.random.default_rng(int.from_bytes(self.digest(*parts), "little"))

    @property
    def family(self) -> FamilyDef:
        return self.spec.family

    @property
    def allow_large(self) -> bool:
        """Huge magnitudes make reassociated sums or products disagree by more than any tolerance."""
        return not self.order_sensitive


def _probe(spec: OpSpec, args: list[np.ndarray], kwargs: dict[str, Any]) -> np.ndarray | None:
    """The reference's result on a few probe values, quietly; None where it raises (a probe only)."""
    fn = spec.reference_callable()
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return np.asarray(fn(*args, **kwargs))
    except Exception:  # noqa: BLE001 - a probe only
        return None


def _probe_arguments(spec: OpSpec) -> dict[str, Any]:
    """The keyword arguments a probe calls the reference with: each one's default, 0.5 for a float without one
    (an update op's learning rate, betas)."""
    tensors = set(spec.signature.tensor_arguments)
    return {a.name: a.default_value if a.default is not None else 0.5 for a in spec.signature.arguments
            if a not in tensors and (a.default is not None or a.type.base is BaseType.float)}  # fmt: skip


def _probe_multiplicative(spec: OpSpec) -> bool:
    """Whether a reduction's or scan's reference multiplies: it folds [3, 3] (its defaults) to 9."""
    if spec.arity != 1 or "axis" not in {a.name for a in spec.signature.arguments}:
        return False
    result = _probe(spec, [np.array([3.0, 3.0])], _probe_arguments(spec))
    return result is not None and result.size > 0 and float(result.reshape(-1)[-1]) == 9.0


def _probe_float_result(spec: OpSpec, dtype: str) -> bool:
    result = _probe(spec, [np.ones((2, 2), dtype=d) for d in operand_dtypes(spec, dtype)], _probe_arguments(spec))
    return dtype in FLOATING + COMPLEX if result is None else is_float(result.dtype) or result.dtype.kind == "c"


# ---- templates: what a case is before it gets values ---------------------------------------------------

def _outside_domain(ctx: _Context) -> list[CaseTemplate]:
    """A case whose values break the spec's domain for this dtype (numpy raises, so must the engine)."""
    if not ctx.bounds:
        return []
    shapes = tuple((len(special_values(ctx, d)),) for d in ctx.dtypes)
    return [CaseTemplate(shapes, ("contiguous",) * len(shapes), "specials", (), False)]


def _shown_templates(ctx: _Context) -> list[CaseTemplate]:
    return ctx.family.shown_cases(ctx) + _outside_domain(ctx)


# ---- hidden templates: drawn from the salt --------------------------------------------------------------


def _hidden_templates(ctx: _Context, rng: np.random.Generator) -> list[CaseTemplate]:
    return ctx.family.hidden_cases(ctx, rng)


# ---- threshold cases: sized from the engine's own limits -----------------------------------------------------


def threshold_cases(spec: OpSpec, dtype: str, *, salt: bytes, limits: Any) -> list[Case]:
    """Hidden large cases for one op x dtype at and beyond the engine's thresholds (`limits`: an
    engine_limits.EngineLimits); their odd extents are drawn from the salt."""
    ctx = _Context.of(spec, dtype, bytes(salt))
    rng = ctx.rng("threshold-templates")
    templates = ctx.family.threshold_cases(ctx, rng, limits)
    return [_build_case(ctx, f"t{i:02d}", t, True) for i, t in enumerate(templates)]


# ---- layouts -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Placement:
    perm: tuple[int, ...]  # logical dims in memory order, outermost first
    steps: tuple[int, ...]  # per logical dim; the sign is the direction
    pad: int  # extra elements per innermost row
    lead: int  # poison before the block
    trail: int  # poison after it
    expand: tuple[int, ...]  # dims read with stride 0


def _resolve_layout(kind: str, shape: tuple[int, ...], rng: np.random.Generator) -> tuple[str, _Placement]:
    rank = len(shape)
    ident = tuple(range(rank))
    ones = (1,) * rank
    lead = int(rng.integers(1, 17))
    trail = int(rng.integers(1, 9))
    big = [d for d in range(rank) if shape[d] > 1]
    if kind == "contiguous":
        return kind, _Placement(ident, ones, 0, 0, 0, ())
    if rank == 0 or kind == "offset" or (kind in ("transposed", "permuted") and len(big) < 2):
        return "offset", _Placement(ident, ones, 0, lead, trail, ())
    if kind == "transposed":
        return kind, _Placement(ident[::-1], ones, 0, 0, 0, ())
    if kind == "permuted":  # the dims of size > 1 must change order, or the view is still contiguous
        perm = tuple(int(p) for p in rng.permutation(rank))
        while [d for d in perm if d in big] == big:
            perm = tuple(int(p) for p in rng.permutation(rank))
        return kind, _Placement(perm, ones, 0, 0, 0, ())
    if kind == "strided":
        steps = tuple(int(rng.integers(2, 4)) if rng.random() < 0.7 or d == rank - 1 else 1 for d in range(rank))
        return kind, _Placement(ident, steps, 0, int(rng.integers(0, 4)), int(rng.integers(0, 3)), ())
    if kind == "negative":
        choices = big or list(range(rank))
        flip = [d for d in choices if rng.random() < 0.6] or [choices[-1]]
        steps = tuple(-1 if d in flip else 1 for d in range(rank))
        return kind, _Placement(ident, steps, 0, 0, 0, ())
    if kind == "padded":
        return kind, _Placement(ident, ones, int(rng.integers(1, 6)), lead, trail, ())
    if kind == "expanded":
        candidates = big
        if not candidates:
            return "offset", _Placement(ident, ones, 0, lead, trail, ())
        chosen = tuple(d for d in candidates if rng.random() < 0.5) or (pick(rng, candidates),)
        if len(chosen) == len(candidates) and len(candidates) > 1:
            chosen = chosen[:-1]
        return kind, _Placement(ident, ones, 0, 0, 0, chosen)
    if kind == "mixed":
        perm = tuple(int(p) for p in rng.permutation(rank))
        steps = tuple(int(rng.choice([-2, -1, 1, 2, 3])) for _ in range(rank))
        candidates = [d for d in range(rank) if shape[d] > 1]
        expand = (pick(rng, candidates),) if len(candidates) > 1 and rng.random() < 0.5 else ()
        return kind, _Placement(perm, steps, int(rng.integers(0, 3)), lead, trail, expand)
    raise ValueError(f"unknown layout {kind!r}")


def _place(shape: tuple[int, ...], p: _Placement) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
    """(buffer size, offset, element strides, shape of the distinct values) of a placement."""
    rank = len(shape)
    base = tuple(1 if d in p.expand else n for d, n in enumerate(shape))
    extents = [base[d] * abs(p.steps[d]) for d in range(rank)]
    if rank:
        extents[p.perm[-1]] += p.pad
    unit = [0] * rank
    stride = 1
    for d in reversed(p.perm):
        unit[d] = stride
        stride *= max(extents[d], 1)
    strides = tuple(0 if d in p.expand else unit[d] * p.steps[d] for d in range(rank))
    offset = p.lead + sum((base[d] - 1) * unit[d] * -p.steps[d] for d in range(rank) if p.steps[d] < 0 and base[d] > 0)
    return p.lead + stride + p.trail, offset, strides, base


def _layout_text(kind: str, p: _Placement, strides: tuple[int, ...], offset: int) -> str:
    parts = []
    rank = len(p.perm)
    if p.perm != tuple(range(rank)):
        parts.append("transposed" if p.perm == tuple(range(rank))[::-1] else f"axes laid out in order {list(p.perm)}")
    if any(abs(s) > 1 for s in p.steps):
        parts.append(f"sliced with steps {list(p.steps)}")
    flipped = [d for d, s in enumerate(p.steps) if s < 0 and d not in p.expand]
    if flipped:
        parts.append(f"reversed (negative stride) on axes {flipped}")
    if p.pad:
        parts.append(f"rows padded by {p.pad}")
    if p.expand:
        parts.append(f"broadcast (stride 0) on axes {list(p.expand)}")
    if offset:
        parts.append(f"starting at element {offset} of its buffer")
    if not parts:
        return "contiguous"
    return ", ".join(parts)


# ---- values ----------------------------------------------------------------------------------------------------

_FLOAT_SPECIALS = {
    "float64": [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, np.pi, -np.pi, np.pi / 2, -np.pi / 2, np.inf, -np.inf, np.nan,
                1e-3, -1e-3, 2.0, -2.0, 3.0, 5e-324, -5e-324, 1e-310, 2.2250738585072014e-308, 1e20, -1e20,
                4988429.2, -4988429.2, 1e300, -1e300, 1.7976931348623157e308],
    "float32": [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, np.pi, -np.pi, np.pi / 2, -np.pi / 2, np.inf, -np.inf, np.nan,
                1e-3, -1e-3, 2.0, -2.0, 3.0, 1.4e-45, -1.4e-45, 1e-40, 1.1754944e-38, 1e20, -1e20,
                4988429.2, -4988429.2, 3e38, -3e38, 3.4028234e38],
    # the same roles at float16's and bfloat16's scale: smallest subnormal, a subnormal, smallest normal, large, max
    "float16": [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, np.pi, -np.pi, np.pi / 2, -np.pi / 2, np.inf, -np.inf, np.nan,
                1e-3, -1e-3, 2.0, -2.0, 3.0, 6e-8, -6e-8, 1e-6, 6.1035e-05, 1e4, -1e4, 4988.4, -4988.4, 6e4, -6e4,
                65504.0],
    "bfloat16": [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, np.pi, -np.pi, np.pi / 2, -np.pi / 2, np.inf, -np.inf, np.nan,
                 1e-3, -1e-3, 2.0, -2.0, 3.0, 9.2e-41, -9.2e-41, 1e-39, 1.1754944e-38, 1e20, -1e20, 4988429.2,
                 -4988429.2, 3e38, -3e38, 3.3895314e38],
}  # fmt: skip
# For ops whose float result depends on the order of a sum or product: nothing that overflows or
# underflows part-way (inf * 0 vs 0 * inf), so any honest association gives the same answer.
_ORDER_SAFE_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, np.pi, -np.pi, np.inf, -np.inf, np.nan, 1e-3, -1e-3, 2.0, -2.0]


def _odd_nans(dtype: str) -> np.ndarray:
    """NaNs other than the canonical one: a signalling NaN, a negative one and one with a payload. A kernel
    must treat every NaN alike (x**0 is 1 for all of them); libm does not always."""
    bits = np.dtype(dtype).itemsize * 8
    mantissa = {16: 10 if dtype == "float16" else 7, 32: 23, 64: 52}[bits]
    exponent = ((1 << (bits - 1 - mantissa)) - 1) << mantissa
    quiet = 1 << (mantissa - 1)
    patterns = [exponent | 1, (1 << (bits - 1)) | exponent | quiet, exponent | quiet | 0b101]
    return np.array(patterns, dtype=f"u{bits // 8}").view(dtype)


def _int_specials(dtype: str) -> list[int]:
    info = np.iinfo(dtype)
    common = [0, 1, 2, -1, -2, 7, 55, 127, -127, -128, 128, 255, 256, 32767, -32768, 65535, 2**31 - 1, -(2**31),
              2**32 - 1, 2**53 + 1, 2**63 - 1]  # fmt: skip
    values = common + [info.min, info.min + 1, info.max, info.max - 1]
    return sorted({v for v in values if info.min <= v <= info.max})


def special_values(ctx_or_spec: OpSpec | _Context, dtype: str) -> np.ndarray:
    """The special-value set a case with dist "specials" cycles through (for the op's constraints)."""
    ctx = ctx_or_spec if isinstance(ctx_or_spec, _Context) else _Context.of(ctx_or_spec, dtype, b"-")
    key = (dtype, ctx.order_sensitive, _exact_sum_limits(ctx, dtype))
    if key not in _SPECIALS_CACHE:
        _SPECIALS_CACHE[key] = _special_values(ctx, dtype)
        _SPECIALS_CACHE[key].flags.writeable = False
    return _SPECIALS_CACHE[key]


_SPECIALS_CACHE: dict[tuple[str, bool, bool], np.ndarray] = {}


def _special_values(ctx: _Context, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return np.array([False, True])
    if dtype in COMPLEX:  # every pair of the parts' special values: inf + nan j, -0 + inf j, ...
        part = special_values(ctx, COMPLEX_PART[dtype])
        pairs = np.empty(len(part) ** 2, dtype=dtype)
        pairs.real, pairs.imag = np.repeat(part, len(part)), np.tile(part, len(part))
        return pairs
    if dtype in FLOATING:
        values = np.array(_ORDER_SAFE_SPECIALS if ctx.order_sensitive else _FLOAT_SPECIALS[dtype], dtype=dtype)
        return np.concatenate([values, _odd_nans(dtype)])
    if _exact_sum_limits(ctx, dtype):
        info = np.iinfo(dtype)
        return np.array(sorted({info.min, info.min + 1, 0, info.max - 1, info.max}), dtype=dtype)
    return np.array(_int_specials(dtype), dtype=dtype)


def _exact_sum_limits(ctx: _Context, dtype: str) -> bool:
    """64-bit ints summed in float64 (mean): mixing limits with small values makes the result order-dependent."""
    return ctx.order_sensitive and ctx.float_result and np.dtype(dtype).itemsize == 8


def _int_range(ctx: _Context, dtype: str, bounds: tuple[float | None, float | None], exact: bool = True) -> tuple[int, int]:
    info = np.iinfo(dtype)
    low, high = int(info.min), int(info.max)
    if exact and _exact_sum_limits(ctx, dtype):
        low, high = max(low, -(2**40)), min(high, 2**40)
    if bounds[0] is not None:
        low = max(low, math.ceil(bounds[0]))
    if bounds[1] is not None:
        high = min(high, math.floor(bounds[1]))
    return low, high


def _cycle(rng: np.random.Generator, pool: np.ndarray, n: int) -> np.ndarray:
    """Every pool value once (in random order) while there is room, then random picks."""
    head = rng.permutation(pool)[:n]
    tail = rng.choice(pool, size=n - len(head)) if n > len(head) else pool[:0]
    return np.concatenate([head, tail])


def _values(ctx: _Context, name: str, dtype: str, shape: tuple[int, ...], dist: str, rng: np.random.Generator):
    if dtype in COMPLEX:
        return _complex_values(ctx, name, dtype, shape, dist, rng)
    n = math.prod(shape)
    bounds = ctx.bounds.get(name, (None, None))
    if dist in ("ascending", "descending"):  # extremes at the ends: a kernel that drops a head or tail shows
        data = np.sort(_values(ctx, name, dtype, (n,), "uniform", rng))
        return (data if dist == "ascending" else data[::-1]).reshape(shape)
    if dist in ("zeros", "few_zeros"):  # 96% or 4% zeros (floats' of both signs), the rest small nonzero values
        zero = rng.random(n) < (0.96 if dist == "zeros" else 0.04)
        if dtype == "bool":
            return (~zero).reshape(shape)
        data = _values(ctx, name, dtype, (n,), "ties", rng)
        data[data == 0] = 1
        data[zero] = 0
        if dtype in FLOATING:
            data[zero & (rng.random(n) < 0.5)] = -0.0
        return data.reshape(shape)
    if dtype == "bool":
        if dist == "specials":
            return _cycle(rng, np.array([False, True]), n).reshape(shape)
        return (rng.random(n) < rng.uniform(0.2, 0.8)).reshape(shape)
    if dtype in FLOATING:
        data = _fold(_float_values(ctx, dtype, n, dist, rng), bounds)
        if dtype in HALF and dist not in ("specials", "mixed"):  # stay finite where float32 would
            with np.errstate(invalid="ignore"):
                data = np.where(np.isnan(data), data, np.clip(data, -HALF_MAX[dtype], HALF_MAX[dtype]))
        data = data.astype(dtype, copy=False)
        if dist in ("specials", "mixed"):  # float64 carried every NaN as the canonical one: put the odd ones back
            with np.errstate(invalid="ignore"):
                nans = np.isnan(data.astype(np.float64))
                pool = special_values(ctx, dtype)
                data[nans] = _cycle(rng, pool[np.isnan(pool.astype(np.float64))], int(nans.sum()))
        return data.reshape(shape)
    return _int_values(ctx, dtype, n, dist, rng, bounds).reshape(shape)


def _complex_values(ctx: _Context, name: str, dtype: str, shape: tuple[int, ...], dist: str, rng: np.random.Generator):
    """Real and imaginary parts drawn apart from the parts' dtype's distribution (specials pair every special
    value with others: inf + nan j, -0 - 0 j, ...). A product's factors are one part's values times 1 or j, so
    every partial product stays exact, as _float_values' do."""
    if dist == "specials":
        return _cycle(rng, special_values(ctx, dtype), math.prod(shape)).reshape(shape)
    part = COMPLEX_PART[dtype]
    real = _values(ctx, name, part, shape, dist, rng)
    if ctx.multiplicative and dist != "specials":
        turn = rng.random(real.shape) < 0.5
        return np.where(turn, real.astype(dtype) * 1j, real.astype(dtype)).astype(dtype)
    out = np.empty(shape, dtype=dtype)
    out.real = real
    out.imag = _values(ctx, name, part, shape, dist, rng)
    return out


def _float_values(ctx: _Context, dtype: str, n: int, dist: str, rng: np.random.Generator) -> np.ndarray:
    if ctx.multiplicative and dist != "specials":
        # +-1 but for a few powers of two: every partial product is exact and stays in range even in
        # float16, so every order of multiplying gives the same bits
        magnitude = np.ones(n)
        magnitude[rng.choice(n, size=min(n, 12), replace=False)] = rng.choice([0.5, 2.0], min(n, 12))
        return magnitude * rng.choice([-1.0, 1.0], n)
    if dist == "large" and not ctx.allow_large:
        dist = "heavy"
    if dist == "normal":
        return rng.standard_normal(n) * float(rng.choice([1.0, 3.0, 10.0]))
    if dist in ("uniform", "bulk"):
        width = float(rng.choice([1.0, 5.0, 100.0]))
        data = rng.random(n)
        data *= 2.0 * width
        data -= width
        return data
    if dist == "heavy":
        return rng.standard_t(2, n)
    if dist == "lognormal":
        return rng.lognormal(0.0, 2.0, n) * rng.choice([-1.0, 1.0], n)
    if dist == "specials":
        with np.errstate(invalid="ignore"):  # signalling NaNs become quiet ones here; _values restores them
            return _cycle(rng, special_values(ctx, dtype).astype(np.float64), n)
    if dist == "large":
        top = {"float32": 38.4, "float16": 4.8, "bfloat16": 38.4}.get(dtype, 300.0)
        mags = 10.0 ** rng.uniform(4.0, top, n)
        mags[rng.random(n) < 0.25] = 6e4 if dtype == "float16" else 1e20
        return mags * rng.choice([-1.0, 1.0], n)
    if dist == "ties":
        return rng.integers(-3, 4, n).astype(np.float64)
    if dist == "mixed":
        data = rng.standard_normal(n) * 3.0
        hits = rng.random(n) < 0.15
        with np.errstate(invalid="ignore"):
            data[hits] = rng.choice(special_values(ctx, dtype).astype(np.float64), int(hits.sum()))
        return data
    raise ValueError(f"unknown value distribution {dist!r}")


def _fold(data: np.ndarray, bounds: tuple[float | None, float | None]) -> np.ndarray:
    """Moves values into [low, high]: reflected at each bound, then clipped. NaN stays NaN."""
    low, high = bounds
    with np.errstate(invalid="ignore", over="ignore"):
        if low is not None:
            data = np.where(data < low, 2.0 * low - data, data)
        if high is not None:
            data = np.where(data > high, 2.0 * high - data, data)
        if low is not None or high is not None:
            data = np.where(np.isnan(data), data, np.clip(data, low, high))
    return data


def _int_values(ctx, dtype, n, dist, rng, bounds) -> np.ndarray:
    low, high = _int_range(ctx, dtype, bounds)
    if dist in ("normal", "lognormal", "small", "bulk"):
        lo, hi = max(low, -20), min(high, 20)
        if lo > hi:
            lo, hi = low, min(high, low + 40)
        return rng.integers(lo, hi, n, dtype=dtype, endpoint=True)
    if dist in ("uniform", "heavy", "full", "large"):
        info = np.iinfo(dtype)
        if (low, high) == (info.min, info.max):  # every bit pattern equally likely: random bytes
            return np.frombuffer(rng.bytes(n * info.bits // 8), dtype=dtype).copy()
        return rng.integers(low, high, n, dtype=dtype, endpoint=True)
    if dist == "ties":
        lo, hi = max(low, -3), min(high, 3)
        return rng.integers(lo, max(lo, hi), n, dtype=dtype, endpoint=True)
    pool = special_values(ctx, dtype)
    pool_low, pool_high = _int_range(ctx, dtype, bounds, exact=False)  # special_values() knows about exact sums
    pool = pool[(pool >= pool_low) & (pool <= pool_high)]
    if not len(pool):
        pool = np.array([low, high], dtype=dtype)
    if dist in ("specials", "limits"):
        return _cycle(rng, pool, n).astype(dtype)
    if dist == "mixed":
        data = rng.integers(max(low, -100), max(min(high, 100), max(low, -100)), n, dtype=dtype, endpoint=True)
        hits = rng.random(n) < 0.2
        data[hits] = rng.choice(pool, int(hits.sum()))
        return data
    raise ValueError(f"unknown value distribution {dist!r}")


def _dist_name(dtype: str, dist: str, ctx: _Context) -> str:
    """The distribution's name as it applies to the dtype, for descriptions."""
    if dist in ("zeros", "few_zeros"):
        share = "96%" if dist == "zeros" else "4%"
        return f"{share} False" if dtype == "bool" else f"{share} zeros (of both signs for floats), else small nonzero integers"
    if dist in ("ascending", "descending"):
        return f"{_dist_name(dtype, 'uniform', ctx)}, sorted {dist} in index order"
    if dtype == "bool":
        return "all-pairs booleans" if dist == "specials" else "random booleans"
    if dtype in COMPLEX:
        return f"complex, each part {_dist_name(COMPLEX_PART[dtype], dist, ctx)}"
    if dtype in FLOATING:
        if ctx.multiplicative and dist != "specials":
            return "+-1 but for a few +-2 and +-0.5 (exact products)"
        if dist == "large" and not ctx.allow_large:
            return "heavy-tailed (t, df=2)"
        return {"normal": "normal", "uniform": "uniform", "bulk": "uniform", "heavy": "heavy-tailed (t, df=2)",
                "lognormal": "log-normal with random signs", "specials": "special values (+-0, +-inf, nan, tiny, ...)",
                "large": "large magnitudes", "ties": "small integers (ties)",
                "mixed": "normal with special values mixed in"}[dist]  # fmt: skip
    return {"normal": "small integers", "lognormal": "small integers", "bulk": "small integers", "uniform": "integers over the full range",
            "heavy": "integers over the full range", "large": "integers over the full range",
            "specials": "integer limits and edge values", "ties": "small integers (ties)",
            "mixed": "small integers with limits mixed in"}[dist]  # fmt: skip


# ---- building a case --------------------------------------------------------------------------------------------


def _resolve_shape(shape: tuple[int, ...], ctx: _Context, dtype: str) -> tuple[int, ...]:
    return tuple(len(special_values(ctx, dtype)) if n == S else n for n in shape)


def _build_case(ctx: _Context, case_id: str, template: CaseTemplate, hidden: bool) -> Case:
    if not template.inside_domain:
        ctx = replace(ctx, bounds={})
    rng = ctx.rng(case_id)  # layouts first, then every operand's value set a, then b
    placed = []
    for shape, kind in zip(template.shapes, template.layouts):
        shape = _resolve_shape(shape, ctx, ctx.dtype)
        kind, placement = _resolve_layout(kind, shape, rng)
        placed.append((shape, kind, placement, *_place(shape, placement)))
    buffers: dict[tuple[int, str], np.ndarray] = {}
    for which in ("a", "b"):
        for i, (name, dtype) in enumerate(zip(ctx.names, ctx.dtypes)):
            _shape, _kind, _placement, size, offset, strides, base = placed[i]
            buffer = np.full(size, poison(dtype), dtype=dtype)
            item = buffer.dtype.itemsize
            holder = np.ndarray(base, buffer.dtype, buffer=buffer, offset=offset * item,
                                strides=tuple(s * item for s in strides))  # fmt: skip
            holder[...] = _values(ctx, name, dtype, base, template.dist, rng)
            buffers[i, which] = buffer
    operands = []
    splits = ctx.rng(case_id, "split")  # apart from the values' stream, so value sets a and b do not depend on it
    for i, (name, dtype) in enumerate(zip(ctx.names, ctx.dtypes)):
        shape, kind, placement, size, offset, strides, _base = placed[i]
        split = int(splits.integers(max(1, size // 4), max(2, 3 * size // 4 + 1))) if size > 1 else size
        operands.append(Operand(name, dtype, shape, strides, offset, buffers[i, "a"], buffers[i, "b"], kind,
                                _layout_text(kind, placement, strides, offset), _dist_name(dtype, template.dist, ctx), split))  # fmt: skip
    kwargs = dict(template.kwargs)
    return Case(ctx.spec.name, ctx.dtype, case_id, _describe(operands, kwargs), tuple(operands), kwargs, hidden)


def _describe(operands: list[Operand], kwargs: dict[str, Any]) -> str:
    text = "; ".join(f"{op.name}: shape {op.shape} {op.layout_text}, {op.values}" for op in operands)
    if kwargs:
        text += "; " + ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return text


# ---- files: cases as one array file (runner.save_arrays) ----------------------------------------------------


def save_cases(cases: Sequence[Case], path: str | Path) -> None:
    """Writes cases (buffers and metadata, no pickles) to one array file."""
    arrays: dict[str, np.ndarray] = {}
    meta = []
    for ci, case in enumerate(cases):
        for oi, op in enumerate(case.operands):
            arrays[f"{ci}_{oi}_a"] = op.buffer
            arrays[f"{ci}_{oi}_b"] = op.buffer_b
        meta.append({"op": case.op, "dtype": case.dtype, "id": case.id, "description": case.description,
                     "kwargs": _kwargs_to_json(case.kwargs), "hidden": case.hidden,
                     "operands": [op.meta() for op in case.operands]})  # fmt: skip
    header = json.dumps({"format": FORMAT_VERSION, "cases": meta}).encode()
    arrays["__meta__"] = np.frombuffer(header, dtype=np.uint8)
    save_arrays(Path(path), arrays)


def load_cases(path: str | Path) -> list[Case]:
    data = load_arrays(Path(path))
    header = json.loads(data["__meta__"].tobytes().decode())
    if header.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path}: case file format {header.get('format')}, expected {FORMAT_VERSION}")
    cases = []
    for ci, m in enumerate(header["cases"]):
        operands = tuple(
            Operand(o["name"], o["dtype"], tuple(o["shape"]), tuple(o["strides"]), o["offset"],
                    np.ascontiguousarray(data[f"{ci}_{oi}_a"]), np.ascontiguousarray(data[f"{ci}_{oi}_b"]),
                    o["layout"], o["layout_text"], o["values"], o.get("split", 0))  # fmt: skip
            for oi, o in enumerate(m["operands"])
        )
        cases.append(Case(m["op"], m["dtype"], m["id"], m["description"], operands,
                          _kwargs_from_json(m["kwargs"]), m["hidden"]))  # fmt: skip
    return cases


def _kwargs_to_json(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: ({"tuple": list(v)} if isinstance(v, tuple) else v) for k, v in kwargs.items()}


def _kwargs_from_json(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: (tuple(v["tuple"]) if isinstance(v, dict) else v) for k, v in kwargs.items()}
