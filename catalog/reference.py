"""Numpy references in specs: checked with libcst, then compiled to callables.

A reference is either one expression over the op's arguments and ``np``
(``np.add(x1, x2)``) or one short function whose parameters are the op's
arguments, built from assignments, ``if`` and ``return``. Anything that could
reach outside the computation — imports, dunder attributes, names that are not
arguments, locals, ``np``, a few pure builtins or the special functions numpy
lacks (``erf``) — is rejected, so a spec cannot smuggle code into the harness.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import libcst as cst
import numpy as np

# Attributes a reference may use: numpy's pure math and the ndarray's metadata.
# Everything else is refused, since numpy also reaches files (np.save, x.tofile),
# pickles (np.load) and C (np.ctypeslib).
SAFE_ATTRIBUTES = frozenset(
    """
    abs absolute add subtract multiply divide true_divide floor_divide power pow negative positive
    exp exp2 expm1 log log2 log10 log1p sqrt square cbrt sin cos tan arcsin arccos arctan arctan2
    sinh cosh tanh arcsinh arccosh arctanh floor ceil trunc rint sign fabs copysign hypot
    maximum minimum fmax fmin clip where equal not_equal less less_equal greater greater_equal
    logical_and logical_or logical_not logical_xor isnan isinf isfinite signbit round reciprocal remainder mod
    logaddexp nextafter bitwise_and bitwise_or bitwise_xor invert bitwise_invert left_shift right_shift
    sum prod mean max min amax amin argmax argmin cumsum cumulative_sum cumulative_prod sort argsort matmul dot einsum all any std
    var count_nonzero diff conj conjugate real imag
    vecdot tensordot take take_along_axis nonzero searchsorted unique_values unique_counts unique_inverse unique_all
    zeros ones zeros_like ones_like full full_like empty empty_like asarray array broadcast_to broadcast_arrays
    arange linspace eye tril triu meshgrid
    reshape transpose permute_dims matrix_transpose swapaxes moveaxis expand_dims squeeze concatenate concat stack flip roll
    tile unstack repeat
    result_type promote_types dtype finfo iinfo astype T mT shape ndim size itemsize kind
    bool_ int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64 complex64 complex128
    pi e inf nan newaxis
    """.split()
)
SAFE_BUILTINS = {
    "abs": abs, "bool": bool, "float": float, "int": int, "len": len,
    "list": list, "max": max, "min": min, "range": range, "tuple": tuple,
    "None": None, "True": True, "False": False,
}  # fmt: skip


def _float_ufunc(function: Callable[[float], float]) -> Callable[[object], np.ndarray]:
    """A float function of Python's math module as numpy's ufuncs behave: element-wise, computed in float64,
    the result in the float dtype numpy gives the input (float16 for bool and 8-bit integers)."""
    each = np.frompyfunc(function, 1, 1)

    def ufunc(x: object) -> np.ndarray:
        x = np.asarray(x)
        computed = np.asarray(each(x.astype(np.float64)), dtype=np.float64)
        return computed.astype(np.result_type(x.dtype, np.float16))

    return ufunc


# Special functions numpy has no ufunc for, called by name (`erf(x)`): CPython's math.erf is the C
# library's (glibc: within an ulp in float64).
SAFE_FUNCTIONS = {"erf": _float_ufunc(math.erf)}


class ReferenceError_(ValueError):  # noqa: N801 - avoid shadowing the builtin ReferenceError
    """The reference is not a safe expression or function; `line` is 1-based within it."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Reference:
    source: str
    is_function: bool

    def compile(self, params: Sequence[str]) -> Callable[..., object]:
        """The reference as a Python callable taking the op's arguments."""
        scope: dict[str, object] = {"np": np, **SAFE_FUNCTIONS, "__builtins__": SAFE_BUILTINS}
        if self.is_function:
            namespace: dict[str, object] = {}
            exec(compile(self.source, "<reference>", "exec"), scope, namespace)  # noqa: S102 - checked by parse_reference
            (function,) = namespace.values()
            return function  # type: ignore[return-value]
        code = f"lambda {', '.join(params)}: ({self.source})"
        return eval(compile(code, "<reference>", "eval"), scope)  # noqa: S307 - checked by parse_reference


def parse_reference(source: str, params: Sequence[str]) -> Reference:
    text = source.strip()
    if not text:
        raise ReferenceError_("empty reference")
    if text.startswith("def "):
        return _parse_function(text, params)
    try:
        expression = cst.parse_expression(text)
    except cst.ParserSyntaxError as exc:
        raise ReferenceError_(f"not a Python expression: {exc.message}", _syntax_error_line(exc, text)) from None
    _SafetyChecker(set(params), allow_assignments=False).check(cst.Module(body=[]), expression)
    return Reference(text, is_function=False)


def _parse_function(text: str, params: Sequence[str]) -> Reference:
    try:
        module = cst.parse_module(text + "\n")
    except cst.ParserSyntaxError as exc:
        raise ReferenceError_(f"not a Python function: {exc.message}", _syntax_error_line(exc, text)) from None
    if len(module.body) != 1 or not isinstance(module.body[0], cst.FunctionDef):
        raise ReferenceError_("a reference function must be a single 'def' and nothing else")
    function = module.body[0]
    if function.decorators or function.asynchronous:
        raise ReferenceError_("a reference function takes no decorators and is not async")
    names = [p.name.value for p in function.params.params + function.params.posonly_params]
    names += [p.name.value for p in function.params.kwonly_params]
    if names != list(params):
        raise ReferenceError_(f"parameters must be the op's arguments {list(params)}, got {names}")
    _SafetyChecker(set(params), allow_assignments=True).check(module, function.body)
    return Reference(text, is_function=True)


class _SafetyChecker(cst.CSTVisitor):
    """Rejects every node outside the small language references may use."""

    METADATA_DEPENDENCIES = (cst.metadata.PositionProvider,)

    def __init__(self, params: set[str], allow_assignments: bool) -> None:
        super().__init__()
        self.known = params | {"np"} | set(SAFE_BUILTINS) | set(SAFE_FUNCTIONS)
        self.allow_assignments = allow_assignments

    def check(self, module: cst.Module, node: cst.CSTNode) -> None:
        self.function = module.body[0] if module.body else None
        if isinstance(node, cst.BaseExpression):  # a bare expression: wrap it so positions resolve
            module = cst.Module(body=[cst.SimpleStatementLine([cst.Expr(node)])])
        wrapper = cst.metadata.MetadataWrapper(module, unsafe_skip_copy=True)
        self.positions = wrapper.resolve(cst.metadata.PositionProvider)
        self.known |= set(_assign_targets(wrapper.module))
        wrapper.module.visit(self)

    def _fail(self, node: cst.CSTNode, message: str) -> None:
        position = self.positions.get(node)
        raise ReferenceError_(message, position.start.line if position else 1)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseCompoundStatement) and not isinstance(node, (cst.If, cst.FunctionDef)):
            self._fail(node, f"'{type(node).__name__}' statements are not allowed in a reference")
        if isinstance(node, cst.BaseSmallStatement) and not isinstance(node, (cst.Assign, cst.Return, cst.Expr)):
            self._fail(node, f"'{type(node).__name__}' statements are not allowed in a reference")
        if isinstance(node, cst.Assign) and not self.allow_assignments:
            self._fail(node, "assignments need a reference function")
        if isinstance(node, (cst.Lambda, cst.Yield, cst.Await, cst.NamedExpr, cst.GeneratorExp)):
            self._fail(node, f"'{type(node).__name__}' is not allowed in a reference")
        if isinstance(node, cst.Attribute):
            node.value.visit(self)  # the object first, so `os.getcwd` reports the unknown name `os`
            if node.attr.value.startswith("_"):
                self._fail(node, f"private attribute {node.attr.value!r} is not allowed")
            if node.attr.value not in SAFE_ATTRIBUTES:
                self._fail(node, f"attribute {node.attr.value!r} is not allowed in a reference (numpy math and array metadata only)")
            return False  # the attribute name itself is not a variable
        if isinstance(node, cst.Arg):
            node.value.visit(self)  # nor is a keyword argument's name
            return False
        if isinstance(node, cst.FunctionDef):
            if node is not self.function:
                self._fail(node, "nested functions are not allowed in a reference")
            node.body.visit(self)  # parameters were checked by _parse_function
            return False
        if isinstance(node, cst.AssignTarget) and not _is_plain_target(node.target):
            self._fail(node, "only plain names can be assigned in a reference")
        if isinstance(node, cst.Name) and node.value not in self.known:
            self._fail(node, f"unknown name {node.value!r} (only the op's arguments, np, {', '.join(SAFE_FUNCTIONS)} and locals)")
        return True


def _is_plain_target(target: cst.BaseExpression) -> bool:
    if isinstance(target, cst.Name):
        return True
    return isinstance(target, (cst.Tuple, cst.List)) and all(_is_plain_target(e.value) for e in target.elements)


def _syntax_error_line(exc: cst.ParserSyntaxError, text: str) -> int:
    """libcst's raw_line can point past the error; its message says 'error at LINE:COL', which
    for an unclosed bracket is the end of input, so it is clamped to the last line."""
    match = re.search(r"error at (\d+):", exc.message)
    line = int(match[1]) if match else exc.raw_line
    return min(line, text.count("\n") + 1)


def _assign_targets(module: cst.Module) -> list[str]:
    targets: list[str] = []

    class Collector(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            for name in _names_in(node.target):
                targets.append(name)

    module.visit(Collector())
    return targets


def _names_in(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _names_in(element.value)]
    return []
