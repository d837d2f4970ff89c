"""Checks derivative formulas numerically, before any runtime is built: each formula of a spec runs on the
specs' numpy references (the ops it calls) and on the derivative helpers, in float64, and must agree with
central finite differences of the op's own reference, as a vector-Jacobian product <v, J> for a random v
(PyTorch's gradcheck idea). Where the spec's dtypes hold complex128 the formulas are checked there too, with
complex inputs: the loss is Re(sum(conj(v) * result)) and an input's gradient dL/dRe + i dL/dIm, each part
from differences along that part. A spec's forward formula (its `result:` entry: the Jacobian-vector product
J u from the inputs' tangents u) is checked the same way, against central differences of the reference along
u, and against its backward formulas: <v, J u> must equal the sum of <J^T v, u> over the inputs (the two are
each other's adjoint). Inputs come from the family's small gate cases (a composite's examples) with values
drawn where the reference is finite and smooth; a wrong formula fails with its first differing entry."""

from __future__ import annotations

import importlib.util
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np

from tensorsmith_forge.catalog.derivatives import GRAD, HELPERS_MODULE, OUTPUT, RESULT, Derivative, tangent_name
from tensorsmith_forge.catalog.model import Catalog, CompositeSpec, OpSpec

EPS = 1e-6
DTYPES_CHECKED = ("float64", "complex128")  # each where the spec's dtypes hold it
RTOL, ATOL = 1e-4, 1e-6
ADJOINT_RTOL = 1e-9  # <v, J u> against <J^T v, u>: both analytic, so rounding alone parts them
SMOOTH = 1e-2  # one-sided differences further apart than this (relative): the point is not smooth
MAX_ELEMENTS = 40  # per case: every element is moved twice per input
MAX_CASES = 12
# Value draws, tried in turn until the reference is finite around every point (log wants positives, acosh
# values above one, atanh values inside (-1, 1)).
DRAWS: tuple[Callable[[np.random.Generator, tuple[int, ...]], np.ndarray], ...] = (
    lambda rng, shape: rng.standard_normal(shape),
    lambda rng, shape: rng.uniform(0.2, 2.0, shape),
    lambda rng, shape: rng.uniform(-0.9, 0.9, shape),
    lambda rng, shape: rng.uniform(1.2, 3.0, shape),
)


@dataclass(frozen=True)
class Failure:
    spec_path: str
    line: int
    input: str
    message: str

    def __str__(self) -> str:
        return f"{self.spec_path}:{self.line}: derivative of {self.input}: {self.message}"


HELPERS_FILE = Path(__file__).resolve().parents[2] / HELPERS_MODULE


@cache
def _helpers() -> ModuleType:
    """The runtime's helper module, loaded from its file (the compiled runtime is not needed)."""
    spec = importlib.util.spec_from_file_location("_ts_derivative_helpers", HELPERS_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def namespace(catalog: Catalog) -> dict[str, Any]:
    """What a formula's names mean in the gate: every op as its numpy reference, and the helpers."""
    ops = {s.name: _array_result(s.reference_callable()) for s in (*catalog.ops, *catalog.composites)}
    helpers = _helpers()
    return {**ops, **{name: getattr(helpers, name) for name in helpers.__all__}, "__builtins__": {}}


def _array_result(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        return [np.asarray(o) for o in out] if isinstance(out, (tuple, list)) else np.asarray(out)

    return call


def _cases(spec: OpSpec | CompositeSpec) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(tensor argument -> shape (a list of shapes for a tensor list), options) for small cases."""
    tensors = [a.name for a in spec.signature.arguments if a.type.is_tensor or a.type.is_tensor_list]
    if isinstance(spec, CompositeSpec):
        for example in spec.examples:
            call = dict(example)
            shapes = {n: call.pop(n) for n in tensors if n in call}
            yield shapes, call
        return
    ctx = SimpleNamespace(names=tuple(tensors), spec=spec, dtype="float64", order_sensitive=True, limits=None)
    count = 0
    for template in spec.family.shown_cases(ctx):
        sizes = [math.prod(s) for s in template.shapes]
        if any(n < 0 for s in template.shapes for n in s) or not 0 < max(sizes) <= MAX_ELEMENTS:
            continue
        yield dict(zip(tensors, template.shapes, strict=True)), dict(template.kwargs)
        count += 1
        if count == MAX_CASES:
            return


def checked_dtypes(spec: OpSpec | CompositeSpec) -> tuple[str, ...]:
    """The dtypes a spec's formulas are checked in: float64, and complex128 where its dtypes hold it."""
    return tuple(d for d in DTYPES_CHECKED if d in spec.dtypes)


def _complex_draw(real_draw: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    def draw(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return np.asarray(real_draw(rng, shape) + 1j * real_draw(rng, shape))

    return draw


def _draw(rng: np.random.Generator, spec: OpSpec | CompositeSpec, shapes: dict[str, Any], draw: Callable[..., np.ndarray],
          dtype: str) -> dict[str, Any]:  # fmt: skip
    if dtype == "complex128":  # both parts from the draw: log's and acosh's values keep their real parts
        draw = _complex_draw(draw)
    values: dict[str, Any] = {}
    for arg in spec.signature.arguments:
        if arg.name not in shapes:
            continue
        shape = shapes[arg.name]
        if arg.type.is_tensor_list or arg.kind == "variadic":
            values[arg.name] = [draw(rng, tuple(s)) for s in shape]
        elif "integer" in arg.type.dtype_constraint:  # indices (take) or counts (repeat): within the first tensor
            first = next(iter(shapes.values()))
            values[arg.name] = rng.integers(0, max(1, min(first, default=1)), tuple(shape))
        elif spec.derivatives is not None and not any(d.input == arg.name and d.differentiable for d in spec.derivatives.formulas):
            values[arg.name] = rng.random(tuple(shape)) < 0.5  # where's condition; not moved
        else:
            values[arg.name] = draw(rng, tuple(shape))
    return values


def _elements(value: Any) -> Iterator[tuple[np.ndarray, tuple[int, ...]]]:
    """Every (array, index) of an input: the elements finite differences move."""
    arrays = value if isinstance(value, list) else [value]
    for array in arrays:
        for index in np.ndindex(array.shape):
            yield array, index


def _directions(array: np.ndarray) -> tuple[complex, ...]:
    """The parts of an element finite differences move: its value, and for a complex one its imaginary part."""
    return (1, 1j) if np.iscomplexobj(array) else (1,)


def _numeric_gradient(array: np.ndarray, index: tuple[int, ...], objective: Callable[[], float]) -> complex:
    """dL/dRe (+ i dL/dIm for a complex element) at array[index], by central differences."""
    original = array[index]
    gradient: complex = 0
    for direction in _directions(array):
        probes = []
        for sign in (1, -1):
            array[index] = original + sign * EPS * direction
            with np.errstate(all="ignore"):
                probes.append(objective())
        array[index] = original
        gradient += direction * (probes[0] - probes[1]) / (2 * EPS)
    return gradient


def _loss(result: np.ndarray, weight: np.ndarray) -> float:
    """Re(sum(conj(weight) * result)): the real loss whose gradient at the result is `weight`."""
    return float(np.sum(np.real(np.conj(weight) * result)))


def _weight(rng: np.random.Generator, result: np.ndarray) -> np.ndarray:
    weight = rng.standard_normal(result.shape)
    return weight + 1j * rng.standard_normal(result.shape) if np.iscomplexobj(result) else weight


def check_spec(spec: OpSpec | CompositeSpec, catalog: Catalog, seed: int = 0, dtypes: tuple[str, ...] | None = None) -> list[Failure]:
    """The spec's formulas against finite differences in each checked dtype (or those of `dtypes` it holds);
    [] when they agree (or the spec has none)."""
    with warnings.catch_warnings():  # the references warn where they are singular (var of one element)
        warnings.simplefilter("ignore", RuntimeWarning)
        for dtype in (d for d in checked_dtypes(spec) if dtypes is None or d in dtypes):
            failures = _check_spec(spec, catalog, seed, dtype)
            if failures:
                return failures
        return []


def sample_points(spec: OpSpec | CompositeSpec, seed: int = 0, dtype: str = "float64") -> Iterator[tuple[dict[str, Any], dict[str, Any], str]]:
    """The points derivatives are checked at: (tensor arguments as `dtype` numpy arrays, options, a description),
    from the family's small gate cases (a composite's examples), values where the reference is finite and
    smooth (no jump, kink or pole within EPS of any element: remainder's steps). The runtime's gradcheck tests
    differentiate at the same points."""
    reference = spec.reference_callable()
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for shapes, options in _cases(spec):
            args = _usable_point(rng, spec, reference, shapes, options, dtype)
            if args is not None:
                yield args, options, _describe(shapes, options) + ("" if dtype == "float64" else f", {dtype}")


def _check_spec(spec: OpSpec | CompositeSpec, catalog: Catalog, seed: int, dtype: str) -> list[Failure]:
    if spec.derivatives is None or not spec.derivatives.differentiable:
        return []
    reference = spec.reference_callable()
    names = namespace(catalog)
    rng = np.random.default_rng(seed + 1)
    failures: list[Failure] = []
    checked = 0
    formulas = spec.derivatives.every_formula
    compared = {d.input: 0 for d in formulas}  # entries each formula was finite at and checked
    for args, options, described in sample_points(spec, seed, dtype):
        checked += 1
        results = _results(spec, reference(**args, **options))
        arguments = {**{a.name: a.default_value for a in spec.signature.arguments if a.default is not None}, **args, **options}
        for output, result in enumerate(results):  # an op with several results: each one's formulas alone
            weight = _weight(rng, result)

            def objective(moved: dict[str, Any], options: dict[str, Any] = options, weight: np.ndarray = weight,
                          output: int = output) -> float:  # fmt: skip
                return _loss(_results(spec, reference(**moved, **options))[output], weight)

            scope = {**arguments, GRAD: weight, RESULT: result, OUTPUT: output}
            several = f", result {output}" if spec.signature.returns_several else ""
            for derivative in spec.derivatives.formulas:
                if not derivative.differentiable or not isinstance(args.get(derivative.input), (np.ndarray, list)):
                    continue  # not differentiable, or not a tensor in this case (clip's min=None)
                message, entries = _compare(derivative, names, scope, args, objective)
                compared[derivative.input] += entries
                if message is not None:
                    failures.append(Failure(spec.path, derivative.line, derivative.input, f"{message} (case {described}{several})"))
            if failures:
                return failures
        forward = spec.derivatives.forward
        if forward is not None and results:  # every result's tangent at once (backward formulas: one result each)
            message, entries = _compare_forward(spec, names, arguments, args, options, results, rng)
            compared[forward.input] += entries
            if message is not None:
                return [Failure(spec.path, forward.line, forward.input, f"{message} (case {described})")]
    if checked == 0:
        line = spec.derivatives.formulas[0].line
        return [Failure(spec.path, line, spec.derivatives.formulas[0].input, f"no gate case where the reference is finite to check it on ({dtype})")]
    return [Failure(spec.path, d.line, d.input, f"the formula is not finite at any point it was checked at ({dtype})")
            for d in formulas if d.differentiable and compared[d.input] == 0]  # fmt: skip


def _usable_point(rng: np.random.Generator, spec: OpSpec | CompositeSpec, reference: Callable[..., Any],
                  shapes: dict[str, Any], options: dict[str, Any], dtype: str) -> dict[str, Any] | None:  # fmt: skip
    """Values for the case, from the first draw (each tried twice) where the reference is finite and smooth."""
    for draw in (d for d in DRAWS for _attempt in range(2)):
        args = _draw(rng, spec, shapes, draw, dtype)
        with np.errstate(all="ignore"):
            try:
                outs = _results(spec, reference(**args, **options))
            except (ValueError, TypeError, IndexError):
                continue
        if all(np.issubdtype(o.dtype, np.inexact) and np.all(np.isfinite(o)) for o in outs) and _smooth(spec, reference, args, options, outs):
            return args
    return None


def _results(spec: OpSpec | CompositeSpec, value: Any) -> list[np.ndarray]:
    """A reference's results as a list: its several arrays, or its one."""
    return [np.asarray(v) for v in value] if spec.signature.returns_several else [np.asarray(value)]


def _smooth(spec: OpSpec | CompositeSpec, reference: Callable[..., Any], args: dict[str, Any], options: dict[str, Any],
            outs: list[np.ndarray]) -> bool:  # fmt: skip
    """Whether one-sided differences of a weighted sum of the reference's results agree at every element of
    the inputs gradients flow to, along each of its parts (relative to SMOOTH)."""
    weights = []
    for k, out in enumerate(outs):  # fixed, with no zero or ties
        steps = np.arange(out.size, dtype=np.float64).reshape(out.shape) + 0.5 * k
        weights.append(np.cos(steps) + 1j * np.sin(steps) if np.iscomplexobj(out) else np.cos(steps))
    flowing = {d.input for d in spec.derivatives.formulas if d.differentiable} if spec.derivatives else set()

    def objective() -> float:
        with np.errstate(all="ignore"):
            return sum(_loss(o, w) for o, w in zip(_results(spec, reference(**args, **options)), weights, strict=True))

    centre = objective()
    for name in flowing & set(args):
        for array, index in _elements(args[name]):
            original = array[index]
            for direction in _directions(array):
                array[index] = original + EPS * direction
                above = objective()
                array[index] = original - EPS * direction
                below = objective()
                array[index] = original
                forward, backward = (above - centre) / EPS, (centre - below) / EPS
                if not (math.isfinite(forward) and math.isfinite(backward)) or abs(forward - backward) > SMOOTH * (1 + abs(forward)):
                    return False
    return True


def _compare(derivative: Derivative, names: dict[str, Any], scope: dict[str, Any], args: dict[str, Any],
             objective: Callable[[dict[str, Any]], float]) -> tuple[str | None, int]:  # fmt: skip
    """The first entry where the formula and finite differences disagree (None when none does), and how many
    entries were compared."""
    value = args[derivative.input]
    arrays = value if isinstance(value, list) else [value]
    gradients = _gradients(derivative, names, scope, arrays, isinstance(value, list))
    if isinstance(gradients, str):
        return gradients, 0
    entries = 0
    for k, (array, got) in enumerate(zip(arrays, gradients, strict=True)):
        for index in np.ndindex(array.shape):
            numeric = _numeric_gradient(array, index, lambda: objective(args))
            if not np.isfinite(got[index]):
                continue  # the formula's own singular point (std where it is 0: sqrt's kink), at a smooth point of its op
            entries += 1
            if not abs(got[index] - numeric) <= ATOL + RTOL * abs(numeric):
                where = f"[{k}]{list(index)}" if isinstance(value, list) else f"{list(index)}"
                return f"at {derivative.input}{where} the formula gives {got[index]!r}, finite differences {numeric!r}", entries
    return None, entries


def _gradients(derivative: Derivative, names: dict[str, Any], scope: dict[str, Any], arrays: list[np.ndarray],
               listed: bool) -> list[np.ndarray] | str:  # fmt: skip
    """The backward formula's value for each of the input's arrays (a tensor list's several), reduced to the
    array's shape as the engine reduces it; or what is wrong with the formula."""
    try:
        with np.errstate(all="ignore"):
            analytic = eval(derivative.formula, names, dict(scope))  # noqa: S307 - parsed and checked by the catalog
    except Exception as exc:  # noqa: BLE001 - a formula that does not run is a wrong formula
        return f"the formula raises {type(exc).__name__}: {exc}"
    pieces = list(analytic) if listed else [analytic]
    if len(pieces) != len(arrays):
        return f"the formula gives {len(pieces)} gradients for {len(arrays)} tensors"
    gradients = []
    for array, piece in zip(arrays, pieces, strict=True):
        piece = np.zeros_like(array) if piece is None else np.asarray(piece)  # None: no gradient flows to it
        if not np.iscomplexobj(array):  # a real input keeps the real part (the runtime's engine does the same)
            piece = np.real(piece)
        shape = np.broadcast_shapes(piece.shape, array.shape)
        gradients.append(_helpers().sum_to(np.broadcast_to(piece.astype(array.dtype), shape), array.shape))
    return gradients


def _compare_forward(spec: OpSpec | CompositeSpec, names: dict[str, Any], arguments: dict[str, Any], args: dict[str, Any],
                     options: dict[str, Any], results: list[np.ndarray], rng: np.random.Generator) -> tuple[str | None, int]:  # fmt: skip
    """The forward formula's J u for random tangents u against central differences of the reference along u
    (every input moved at once), then <v, J u> against the backward formulas' sum of <J^T v, u> for a random v
    (over every result, each result's backward formulas reading their own `output`): the first disagreement
    (None when none), and how many entries were compared."""
    assert spec.derivatives is not None and spec.derivatives.forward is not None
    several = spec.signature.returns_several
    flowing = [d for d in spec.derivatives.formulas if d.differentiable and isinstance(args.get(d.input), (np.ndarray, list))]
    tangents = {d.input: [_weight(rng, a) for a in args[d.input]] if isinstance(args[d.input], list) else _weight(rng, args[d.input])
                for d in flowing}  # fmt: skip
    # An input that is not a tensor in this case (clip's min=None) has no tangent: 0 in the formula.
    forward_scope = {**arguments, RESULT: results if several else results[0]}
    forward_scope.update({tangent_name(d.input): 0.0 for d in spec.derivatives.formulas if d.differentiable})
    forward_scope.update({tangent_name(name): u for name, u in tangents.items()})
    try:
        with np.errstate(all="ignore"):
            value = eval(spec.derivatives.forward.formula, names, forward_scope)  # noqa: S307 - parsed and checked by the catalog
    except Exception as exc:  # noqa: BLE001 - a formula that does not run is a wrong formula
        return f"the forward formula raises {type(exc).__name__}: {exc}", 0
    if several and not isinstance(value, (list, tuple)):
        return f"the forward formula gives one {type(value).__name__}, not the list of its {len(results)} results' tangents", 0
    values = list(value) if several else [value]
    if len(values) != len(results):
        return f"the forward formula gives {len(values)} tangents for {len(results)} results", 0
    jvps = []
    for k, (tangent, result) in enumerate(zip(values, results, strict=True)):
        tangent = np.asarray(tangent)
        if not np.iscomplexobj(result):  # a real result's tangent is real (as a real input's gradient)
            tangent = np.real(tangent)
        try:
            jvps.append(np.broadcast_to(tangent, result.shape))
        except ValueError:
            which = f"result {k}" if several else "the result"
            return f"the forward formula's value has shape {tangent.shape}, {which} {result.shape}", 0

    def moved(sign: int) -> list[np.ndarray]:
        shifted = {**args}
        for name, u in tangents.items():
            shifted[name] = [a + sign * EPS * t for a, t in zip(args[name], u, strict=True)] if isinstance(u, list) else args[name] + sign * EPS * u
        with np.errstate(all="ignore"):
            return _results(spec, spec.reference_callable()(**shifted, **options))

    entries = 0
    for k, (jvp, up, down) in enumerate(zip(jvps, moved(1), moved(-1), strict=True)):
        numeric = (up - down) / (2 * EPS)
        for index in np.ndindex(jvp.shape):
            if not np.isfinite(jvp[index]):
                continue  # the formula's own singular point, as for backward formulas
            entries += 1
            if not abs(jvp[index] - numeric[index]) <= ATOL + RTOL * abs(numeric[index]):
                where = f"result[{k}]" if several else "result"
                return (f"at {where}{list(index)} the forward formula gives {jvp[index]!r}, finite differences along the "
                        f"tangents {numeric[index]!r}"), entries  # fmt: skip
    if not all(np.all(np.isfinite(jvp)) for jvp in jvps):
        return None, entries
    pushed = pulled = scale = 0.0
    for output, (jvp, result) in enumerate(zip(jvps, results, strict=True)):
        weight = _weight(rng, result)
        pushed += float(np.sum(np.real(np.conj(weight) * jvp)))
        scale += float(np.sum(np.abs(weight) * np.abs(jvp)))
        for derivative in flowing:
            listed = isinstance(args[derivative.input], list)
            arrays = args[derivative.input] if listed else [args[derivative.input]]
            gradients = _gradients(derivative, names, {**arguments, GRAD: weight, RESULT: result, OUTPUT: output}, arrays, listed)
            if isinstance(gradients, str):
                return None, entries  # the backward check above reports it
            u = tangents[derivative.input] if listed else [tangents[derivative.input]]
            for g, t in zip(gradients, u, strict=True):
                pulled += float(np.sum(np.real(np.conj(g) * t)))
                scale += float(np.sum(np.abs(g) * np.abs(t)))
    if not abs(pushed - pulled) <= ADJOINT_RTOL * (1 + scale):
        return (f"<v, J u> from the forward formula is {pushed!r}, the backward formulas' <J^T v, u> {pulled!r}: "
                "they are not each other's adjoint"), entries  # fmt: skip
    return None, entries


def _describe(shapes: dict[str, Any], options: dict[str, Any]) -> str:
    parts = [f"{n}: {tuple(s) if not isinstance(s, list) or not s or isinstance(s[0], int) else [tuple(x) for x in s]}" for n, s in shapes.items()]
    parts += [f"{k}={v!r}" for k, v in options.items()]
    return ", ".join(parts)


def check_catalog(catalog: Catalog, selected: Callable[[str], bool] = lambda _name: True) -> list[Failure]:
    failures = []
    for spec in (*catalog.ops, *catalog.composites):
        if selected(spec.name):
            failures += check_spec(spec, catalog)
    return failures
