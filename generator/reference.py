"""Numpy references in specs: checked with libcst, then compiled to callables.

A reference is either one expression over the op's arguments and ``np``
(``np.add(x1, x2)``) or one short function whose parameters are the op's
arguments, built from assignments, ``if`` and ``return``. Anything that could
reach outside the computation — imports, dunder attributes, names that are not
arguments, locals, ``np`` or a few pure builtins — is rejected, so a spec cannot
smuggle code into the harness.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import libcst as cst
import numpy as np

SAFE_BUILTINS = {
    "abs": abs, "bool": bool, "float": float, "int": int, "len": len,
    "max": max, "min": min, "range": range, "tuple": tuple,
    "None": None, "True": True, "False": False,
}  # fmt: skip


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
        scope: dict[str, object] = {"np": np, "__builtins__": SAFE_BUILTINS}
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
        raise ReferenceError_(f"not a Python expression: {exc.message}", exc.raw_line) from None
    _SafetyChecker(set(params), allow_assignments=False).check(cst.Module(body=[]), expression)
    return Reference(text, is_function=False)


def _parse_function(text: str, params: Sequence[str]) -> Reference:
    try:
        module = cst.parse_module(text + "\n")
    except cst.ParserSyntaxError as exc:
        raise ReferenceError_(f"not a Python function: {exc.message}", exc.raw_line) from None
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
        self.known = params | {"np"} | set(SAFE_BUILTINS)
        self.allow_assignments = allow_assignments

    def check(self, module: cst.Module, node: cst.CSTNode) -> None:
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
            if node.attr.value.startswith("_"):
                self._fail(node, f"private attribute {node.attr.value!r} is not allowed")
            node.value.visit(self)  # the attribute name itself is not a variable
            return False
        if isinstance(node, cst.Arg):
            node.value.visit(self)  # nor is a keyword argument's name
            return False
        if isinstance(node, cst.FunctionDef):
            node.body.visit(self)  # parameters were checked by _parse_function
            return False
        if isinstance(node, cst.Name) and node.value not in self.known:
            self._fail(node, f"unknown name {node.value!r} (only the op's arguments, np and locals)")
        return True


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
