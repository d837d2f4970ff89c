"""Derivative formulas in a spec (torchgen's derivatives.yaml, kept in each op's own file).

    derivatives:
      x: grad * conjugate(1 - result * result)   # one formula per tensor input, its vector-Jacobian product
      condition: not_differentiable          # an input no gradient flows to (where's condition)

    derivatives: none                        # no output is differentiable (comparisons, argmax, integer results)

A spec without the field has no derivative yet: backward through it raises, naming the spec. A formula is a
Python expression over `grad` (the gradient of the result), `result`, the op's arguments (tensors and options
by their signature names), numbers, strings (a str option's values: `approximate == 'tanh'`), the operators
+ - * / ** @ and comparisons, `&` `|` `~` on masks, the attributes listed in ATTRIBUTES, and calls of catalog
ops or of the helpers in HELPERS_MODULE, by name. The same text runs
on tensorsmith tensors (the runtime's backward) and on the specs' numpy references in float64 (the gate's
derivative check), each with its own namespace of ops, so a formula means one thing everywhere.

An op with several results (a tuple, or `Tensor[]`) has a node per result; its formulas also read `output`,
the index of the result whose gradient `grad` is (and `result` is that result): unstack's
`x: unstacked_grad(grad, x, axis, output)`. The engine sums what the results send back.

A formula's value is broadcast-reduced to its input's shape by the engine (sum over broadcast axes), so
`add`'s formulas are just `grad`; a complex value for a real input keeps its real part.

The entry `result` (torchgen's forward-derivative entry), optional, is the forward formula: the Jacobian-vector
product J u, the result's tangent, from each differentiable input's tangent `<input>_t` (0 where the input is
not a tensor in a call), the arguments and `result`, never `grad`: tanh's `result: x_t * (1 - result * result)`,
multiply's `x1_t * x2 + x1 * x2_t`; no conjugates, J u is linear in u (abs of a complex x:
`real(conjugate(x) * x_t) / result`). For an op with several results, `result` is their list and the formula
gives the list of their tangents, in order (no `output`): unstack's `unstack(x_t, axis=axis)`; a tensor list's
tangents are a list too, passed on with `*` (`broadcast_arrays(*arrays_t)`). The gate checks it against finite
differences along random tangents and against the backward formulas (<v, J u> = <J^T v, u>).

Complex inputs (PyTorch's convention): a tensor's gradient is dL/dRe + i dL/dIm of the real loss L, so grad
is the result's, and a holomorphic op's formula multiplies grad by its derivative's complex conjugate, written
with the helper `conjugate` (a real tensor itself, so real dtypes pay nothing): `x1: grad * conjugate(x2)`
for multiply. Ops that are not holomorphic say so in their formula (conj: `conjugate(grad)`; imag:
`grad * 1j`). The gate checks each formula in complex128 too wherever the spec's dtypes hold it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .source_meaning import parse_python

NOT_DIFFERENTIABLE = "not_differentiable"
NO_DERIVATIVES = "none"

# Names a formula may use besides the op's arguments and the catalog's ops.
GRAD, RESULT, OUTPUT = "grad", "result", "output"
TANGENT_SUFFIX = "_t"  # a forward formula's name for an input's tangent: x_t
# Helpers for what catalog ops alone say clumsily, each written once over an Array API namespace (tensorsmith at
# run time, the numpy references in the gate) in this module of the runtime; its __all__ lists them.
HELPERS_MODULE = "runtime/python/tensorsmith/_derivative_helpers.py"
ATTRIBUTES = ("shape", "ndim", "dtype", "mT")

_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.MatMult, ast.BitAnd, ast.BitOr)
_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call, ast.Name, ast.Load, ast.Constant,
          ast.Attribute, ast.keyword, ast.Tuple, ast.Subscript, ast.IfExp, ast.USub, ast.UAdd, ast.Invert, ast.Not,
          ast.BoolOp, ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot,
          ast.Starred, *_OPERATORS)  # fmt: skip


class FormulaError(Exception):
    """A formula that is not one; `entry` is the input whose entry it is (None: the field as a whole), for the
    spec parser to name that entry's line."""

    def __init__(self, message: str, entry: str | None = None) -> None:
        super().__init__(f"{entry}: {message}" if entry else message)
        self.entry = entry


@dataclass(frozen=True)
class Derivative:
    """The vector-Jacobian product for one tensor input: `formula`, or None when none flows to it."""

    input: str
    formula: str | None
    line: int  # of its entry in the spec
    calls: tuple[str, ...] = ()  # the op and helper names it calls, for the catalog's cross-spec check
    names: tuple[str, ...] = ()  # the argument names (and grad/result) it reads

    @property
    def differentiable(self) -> bool:
        return self.formula is not None


def tangent_name(input_name: str) -> str:
    return input_name + TANGENT_SUFFIX


@dataclass(frozen=True)
class Derivatives:
    """An op's derivatives: `formulas` per tensor input in signature order and the `forward` formula (its
    `input` is `result`) where the spec has one, or none for an op whose outputs are not differentiable
    (`differentiable` False)."""

    differentiable: bool
    formulas: tuple[Derivative, ...] = ()
    forward: Derivative | None = None

    @property
    def every_formula(self) -> tuple[Derivative, ...]:
        return self.formulas + ((self.forward,) if self.forward is not None else ())

    @property
    def uses_result(self) -> bool:
        return any(RESULT in d.names for d in self.formulas)

    def saved_arguments(self) -> tuple[str, ...]:
        """The arguments any formula reads: what the forward pass must keep for backward."""
        return tuple(sorted({n for d in self.formulas for n in d.names} - {GRAD, RESULT, OUTPUT}))


def helper_names(root: Path) -> tuple[str, ...]:
    """The helpers formulas may call: the __all__ of the helper module, read without importing it."""
    path = root / HELPERS_MODULE
    if not path.is_file():
        return ()
    for node in parse_python(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ()


def parse_formula(text: str, arguments: tuple[str, ...], several_results: bool = False,
                  tangents: tuple[str, ...] | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:  # fmt: skip
    """Checks a formula's form and returns (names of functions it calls, argument names it reads). Which calls
    name real ops is checked against the whole catalog later. `output` is a name only for an op with several
    results. `tangents`: a forward formula's tangent names (it reads those instead of grad)."""
    try:
        tree = parse_python(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"not a Python expression: {exc.msg}") from None
    calls: set[str] = set()
    names: set[str] = set()
    forward = tangents is not None
    known = set(arguments) | {RESULT} | (set(tangents or ()) if forward else {GRAD}) | ({OUTPUT} if several_results else set())
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise FormulaError(f"{type(node).__name__} is not allowed in a formula ({ast.unparse(node)!r})")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise FormulaError(f"only ops and helpers are called, by name, not {ast.unparse(node.func)!r}")
            if node.func.id in known:
                raise FormulaError(f"{node.func.id!r} is an argument here, so the op of that name cannot be called")
            calls.add(node.func.id)
        elif isinstance(node, ast.Attribute):
            if node.attr not in ATTRIBUTES:
                raise FormulaError(f"attribute {node.attr!r} is not allowed (known: {', '.join(ATTRIBUTES)})")
        elif isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, complex, bool, str, type(None))):
            raise FormulaError(f"constant {node.value!r}: only numbers (1j too), strings, True, False and None")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if id(node) in called:
                continue
            if node.id == OUTPUT and forward:
                raise FormulaError(f"a forward formula gives every result's tangent: it reads no {OUTPUT!r}")
            if node.id == OUTPUT and not several_results:
                raise FormulaError(f"{OUTPUT!r} (which result grad is of) is a name only for ops with several results")
            if node.id not in known:
                others = f"the tangents {', '.join(tangents or ())} and result" if forward else "grad, result"
                raise FormulaError(f"unknown name {node.id!r} (the op's arguments: {', '.join(arguments)}; and {others}"
                                   f"{', output' if several_results else ''})")  # fmt: skip
            names.add(node.id)
    if forward and not names & set(tangents or ()):
        raise FormulaError(f"a forward formula must use a tangent ({', '.join(tangents or ())})")
    if not forward and GRAD not in names:
        raise FormulaError("a formula must use grad (the gradient of the result)")
    return tuple(sorted(calls)), tuple(sorted(names))


def parse_derivatives(raw: object, tensor_arguments: tuple[str, ...], arguments: tuple[str, ...],
                      entry_line: dict[str, int], several_results: bool = False) -> Derivatives:  # fmt: skip
    """The `derivatives` field. `entry_line` gives the line of each key of the mapping; `several_results`,
    whether formulas may read `output`. Raises FormulaError naming the offending entry."""
    if raw == NO_DERIVATIVES:
        return Derivatives(differentiable=False)
    if not isinstance(raw, dict):
        raise FormulaError(f"expected '{NO_DERIVATIVES}' or a mapping input -> formula ({NOT_DIFFERENTIABLE} where none flows)")
    for name in raw:
        if name not in tensor_arguments and name != RESULT:
            raise FormulaError(f"not a tensor argument of this op ({', '.join(tensor_arguments)}), nor '{RESULT}' (the "
                               "forward formula)", name)  # fmt: skip
    missing = [n for n in tensor_arguments if n not in raw]
    if missing:
        raise FormulaError(f"no entry for tensor argument {missing[0]!r} (write '{NOT_DIFFERENTIABLE}' where no gradient flows)")
    formulas = []
    for name in tensor_arguments:
        text = raw[name]
        if not isinstance(text, str) or not text.strip():
            raise FormulaError(f"expected a formula or '{NOT_DIFFERENTIABLE}', got {text!r}", name)
        text = " ".join(text.split())
        if text == NOT_DIFFERENTIABLE:
            formulas.append(Derivative(name, None, entry_line.get(name, 0)))
            continue
        try:
            calls, names = parse_formula(text, arguments, several_results)
        except FormulaError as exc:
            raise FormulaError(str(exc), name) from None
        formulas.append(Derivative(name, text, entry_line.get(name, 0), calls, names))
    if not any(d.differentiable for d in formulas):
        raise FormulaError(f"every input is {NOT_DIFFERENTIABLE}: write 'derivatives: {NO_DERIVATIVES}'")
    forward = _forward(raw, formulas, arguments, entry_line) if RESULT in raw else None
    return Derivatives(differentiable=True, formulas=tuple(formulas), forward=forward)


def _forward(raw: dict, formulas: list[Derivative], arguments: tuple[str, ...], entry_line: dict[str, int]) -> Derivative:
    """The `result` entry: the forward formula, over the tangents of the inputs with backward formulas (for an
    op with several results, the list of their tangents: it reads no `output`)."""
    text = raw[RESULT]
    if not isinstance(text, str) or not text.strip():
        raise FormulaError(f"expected a forward formula (the result's tangent), got {text!r}", RESULT)
    text = " ".join(text.split())
    tangents = tuple(tangent_name(d.input) for d in formulas if d.differentiable)
    clashes = sorted(set(tangents) & set(arguments))
    if clashes:
        raise FormulaError(f"{clashes[0]!r} is an argument of this op and a tangent's name", RESULT)
    try:
        calls, names = parse_formula(text, arguments, tangents=tangents)
    except FormulaError as exc:
        raise FormulaError(str(exc), RESULT) from None
    return Derivative(RESULT, text, entry_line.get(RESULT, 0), calls, names)


def entry_lines(text: str, field_line: int) -> dict[str, int]:
    """The 1-based line of each key of the block mapping that starts after line `field_line`."""
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines()[field_line:], start=field_line + 1):
        if line and not line[0].isspace():
            break
        key = line.strip().split(":", 1)[0]
        if ":" in line and key.isidentifier():
            lines.setdefault(key, number)
    return lines
