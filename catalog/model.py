"""The spec data model: one frozen OpSpec per file under specs/, validated.

Everything a spec may say is defined here (fields, tags, accuracy, domain) or in the modules it reads
(dtypes.py: dtype classes and promotion kinds; families/: what each family allows); mapping it to C++
and Python names lives in generator/api.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Any

from .derivatives import Derivatives, FormulaError, entry_lines, helper_names, parse_derivatives
from .dtypes import DTYPE_CLASSES, DTYPES, PROMOTION_ARITY, Promotion
from .errors import Location, SpecError
from .families import FAMILIES, FamilyDef, UnknownFamily
from .families import family as lookup_family
from .reference import Reference, ReferenceError_, parse_reference
from .signature import BaseType, ReturnTuple, Signature, SignatureError, Type, parse_signature
from .yaml_lines import LoadedMapping, load_mapping

TAGS = {
    "core": "part of the Array API / numpy core catalog",
    "activation": "a neural-network activation function",
    "nn": "a neural-network building block outside the Array API (ts.nn.functional calls it)",
    "comparison": "elementwise comparison returning bool",
    "logical": "elementwise logical operation returning bool",
    "linalg": "linear algebra",
    "nan_propagating": "a NaN input gives a NaN output",
    "exact": "numpy's result in the operands' own float dtype is the answer, bit for bit (nextafter): not a float64 "
             "result rounded to it",
    "uninitialized": "the result's contents are unspecified (empty): tests compare its dtype and shape only",
}


class Variant(Enum):
    function = "function"
    method = "method"


# The binary operators by name: each has its reflected form (2 - t calls t.__rsub__(2)) and its in-place one.
BINARY_OPERATOR_NAMES = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
                         "lshift", "rshift")  # fmt: skip
REFLECTED_OPERATORS = tuple(f"__r{name}__" for name in BINARY_OPERATOR_NAMES)
# In-place operators (x += y): the op writes into its left operand, through out= where its family takes it, as
# numpy's do; else (x @= y) its result is stored into x, which must have the result's shape.
INPLACE_OPERATORS = tuple(f"__i{name}__" for name in BINARY_OPERATOR_NAMES)
UNARY_OPERATORS = ("__neg__", "__pos__", "__abs__", "__invert__")
COMPARISON_OPERATORS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")
OPERATORS = (*(f"__{name}__" for name in BINARY_OPERATOR_NAMES), *REFLECTED_OPERATORS, *INPLACE_OPERATORS,
             *COMPARISON_OPERATORS, *UNARY_OPERATORS)  # fmt: skip

COMMON_FIELDS = ("func", "family", "dtypes", "promotion", "reference", "doc", "tags", "variants", "operators",
                 "tolerances", "accuracy", "domain", "proposer", "derivatives")  # fmt: skip
ALIAS_FIELDS = ("func", "alias_of", "doc")
# An op implemented by hand in the core (or by composing other ops) rather than by a generated kernel: its
# binding, stub, docs and differential tests still come from its spec.
COMPOSITE_FIELDS = ("func", "implementation", "reference", "doc", "examples", "tags", "derivatives", "dtypes")
# What a composite's C++ function may return: a Tensor, a list of them (py::list), a tuple (py::tuple) of
# any length, or a tuple of named tensors (the Array API's named tuples, unique_all's).
COMPOSITE_RETURNS = ("Tensor", "Tensor[]", "(Tensor, ...)", "(Tensor name, ...)")
_CPP_NAME = re.compile(r"ts::[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*\Z")
PROPOSERS = ("template", "claude")
MAX_OWN_SCALARS = 8  # kMaxUpdateScalars in runtime/include/tensorsmith/dispatch.h: a family's own float arguments


@dataclass(frozen=True)
class Tolerance:
    dtype: str
    rtol: float
    atol: float
    reason: str


@dataclass(frozen=True)
class Accuracy:
    """A pointwise op's error budget: at most `ulp` units in the last place of the result dtype from the
    exact value, per float result dtype (float32 and float64; float16 and bfloat16 results follow from
    float32's, since kernels compute them in float and round once), or per complex input dtype for the real
    results of complex inputs (abs). An op without one must be correctly rounded (0.5 ulp: the result numpy's
    float64 arithmetic rounds to)."""

    ulp: tuple[tuple[str, float], ...]  # (result dtype, budget)
    reason: str
    # What an ulp is of (ACCURACY_SCALES): the result's magnitude, or the largest of the result's and the
    # operands' where the op is a sum that may cancel to a result far below its terms (logaddexp near zero:
    # every float64 evaluation, numpy's own too, errs by ulps of the larger operand there).
    relative_to: str = "result"
    # Budgets another device's kernels are held to instead, where its math library is less accurate than the
    # CPU's (CUDA's sin is 2 ulp from the correctly rounded result, glibc's under 1): (device, its Accuracy).
    devices: tuple[tuple[str, Accuracy], ...] = ()

    def budget(self, dtype: str, device: str = "cpu") -> float | None:
        own = dict(self.devices).get(device)
        if own is not None and own.budget(dtype) is not None:
            return own.budget(dtype)
        return dict(self.ulp).get(dtype)


@dataclass(frozen=True)
class DomainBound:
    """Values an input may not hold when the op runs in some kernel dtypes: the runtime's engine raises
    ValueError(`error`) before any kernel runs (numpy raises there too), and the gate's cases stay inside
    the bounds except in cases that check the error."""

    argument: str
    low: float | None
    high: float | None
    dtypes: tuple[str, ...]  # the kernel dtypes it holds for, in DTYPES order
    error: str

    def holds_for(self, dtype: str) -> bool:
        return dtype in self.dtypes


CORRECTLY_ROUNDED = 0.5
ULP_DTYPES = ("float32", "float64")
# Budgets may also name a complex input dtype, for the real results of complex inputs (abs of complex64).
ULP_INPUT_DTYPES = ("complex64", "complex128")
# Devices whose kernels may be held to budgets of their own (`accuracy: {..., cuda: {ulp: N, reason: ...}}`).
ACCURACY_DEVICES = ("cuda",)
ACCURACY_SCALES = ("result", "operands")


@dataclass(frozen=True)
class OpSpec:
    path: str  # relative to the repository root
    line: int  # of the `func` field
    text: str  # the spec file's exact contents (hashed for incremental regeneration)
    signature: Signature
    family: FamilyDef
    dtypes: tuple[str, ...]  # accepted input dtypes, in DTYPES order
    promotion: Promotion
    reference: Reference
    doc: str
    fields: tuple[tuple[str, str], ...]  # the family's C++ fields, e.g. (("expr", "x1 + x2"),)
    tags: tuple[str, ...] = ()
    variants: tuple[Variant, ...] = (Variant.function,)
    operators: tuple[str, ...] = ()
    tolerances: tuple[Tolerance, ...] = ()
    accuracy: Accuracy | None = None  # pointwise only; None: correctly rounded
    domain: tuple[DomainBound, ...] = ()
    proposer: str = "template"
    derivatives: Derivatives | None = None  # None: no derivative written yet (backward through it raises)
    kernel_text: str = ""  # `text` without the derivatives, which no kernel depends on (hashed for its verdict)

    @property
    def name(self) -> str:
        return self.signature.name

    @property
    def arity(self) -> int:
        return len(self.signature.tensor_arguments)

    def field(self, name: str) -> str | None:
        return dict(self.fields).get(name)

    def reference_callable(self) -> Callable[..., Any]:
        return _reference_callable(self.signature, self.reference)


@dataclass(frozen=True)
class AliasSpec:
    path: str
    line: int
    text: str
    signature: Signature
    alias_of: str
    doc: str
    alias_of_line: int

    @property
    def name(self) -> str:
        return self.signature.name


@dataclass(frozen=True)
class CompositeSpec:
    """An op the core implements by hand (`implementation`: the C++ function the binding calls, taking
    `const ts::Tensor&` for each tensor and `pybind11::handle` for every other argument)."""

    path: str
    line: int
    text: str
    signature: Signature
    implementation: str  # a qualified C++ name, ts::...
    reference: Reference
    doc: str
    # Calls the differential tests make: argument name -> value, where a tensor argument's value is its shape
    # (a tensor list's, a list of shapes)
    examples: tuple[tuple[tuple[str, Any], ...], ...]
    tags: tuple[str, ...] = ()
    derivatives: Derivatives | None = None
    # The dtypes its unconstrained tensor arguments accept (`dtypes:`, all when absent): where its derivative
    # formulas are checked in complex128 as well as float64.
    dtypes: tuple[str, ...] = DTYPES

    @property
    def name(self) -> str:
        return self.signature.name

    def reference_callable(self) -> Callable[..., Any]:
        return _reference_callable(self.signature, self.reference)


def _reference_callable(signature: Signature, reference: Reference) -> Callable[..., Any]:
    """An op's numpy reference as a callable: tensors positionally, options by keyword; an option a call does
    not give (sum's dtype=) takes its signature default, as the op's own binding does. A variadic argument
    (meshgrid's `*arrays`) takes the positional tensors from its place on, as the op does (its reference
    reads them as one list), or the list by keyword."""
    names = [a.name for a in signature.arguments]
    fn = reference.compile(names)
    defaults = {a.name: a.default_value for a in signature.arguments if a.default is not None}
    variadic = next((i for i, a in enumerate(signature.arguments) if a.kind == "variadic"), None)

    def call(*args: Any, **kwargs: Any) -> Any:
        if variadic is not None and names[variadic] not in kwargs:
            args = (*args[:variadic], list(args[variadic:]))
        absent = {n: defaults[n] for n in names[len(args) :] if n in defaults and n not in kwargs}
        return fn(*args, **kwargs, **absent)

    return call


@dataclass(frozen=True)
class Catalog:
    ops: tuple[OpSpec, ...]  # sorted by name
    aliases: tuple[AliasSpec, ...]
    composites: tuple[CompositeSpec, ...]

    def op(self, name: str) -> OpSpec:
        for spec in self.ops:
            if spec.name == name:
                return spec
        raise KeyError(name)


# ---- loading -----------------------------------------------------------------


def load_catalog(root: Path, spec_dir: str = "specs") -> Catalog:
    """Parses and validates every specs/*.yaml; raises the first SpecError."""
    paths = sorted((root / spec_dir).glob("*.yaml"))
    parsed = [parse_spec_file(root, path) for path in paths]
    return _check_catalog(parsed, helper_names(root))


def parse_spec_file(root: Path, path: Path) -> OpSpec | AliasSpec | CompositeSpec:
    relative = path.relative_to(root).as_posix()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise SpecError(Location(relative, line), None, "not valid UTF-8 text") from None
    return parse_spec(text, relative)


def parse_spec(text: str, path: str) -> OpSpec | AliasSpec | CompositeSpec:
    return _SpecParser(load_mapping(text, path), path, text).parse()


class _SpecParser:
    def __init__(self, mapping: LoadedMapping, path: str, text: str) -> None:
        self.values = mapping.values
        self.lines = mapping.lines
        self.line = mapping.line
        self.path = path
        self.text = text

    def error(self, field: str | None, message: str) -> SpecError:
        line = self.lines.get(field, self.line) if field else self.line
        return SpecError(Location(self.path, line), field, message)

    def parse(self) -> OpSpec | AliasSpec | CompositeSpec:
        is_alias = "alias_of" in self.values
        is_composite = "implementation" in self.values and not is_alias
        if not (is_alias or is_composite):
            self._family()  # first, so an unknown family is not reported as unknown fields
        if is_alias:
            allowed, kind = ALIAS_FIELDS, "an alias"
        elif is_composite:
            allowed, kind = COMPOSITE_FIELDS, "a composite op (one with 'implementation')"
        else:
            allowed, kind = COMMON_FIELDS + tuple(self._family_fields()), "this family"
        for key in self.values:
            if key not in allowed:
                raise self.error(key, f"unknown field for {kind} (allowed: {', '.join(allowed)})")
        signature = self._signature()
        if is_composite:
            return self._composite(signature)
        if is_alias:
            return AliasSpec(self.path, self.lines["func"], self.text, signature, self._str("alias_of"), self._str("doc"),
                             self.lines["alias_of"])  # fmt: skip
        family = self._family()
        self._check_signature(signature, family)
        promotion = self._enum("promotion", Promotion)
        if promotion not in family.promotions:
            allowed_p = ", ".join(p.value for p in family.promotions)
            raise self.error("promotion", f"{promotion.value!r} is not valid for family {family.name} ({allowed_p})")
        if len(signature.tensor_arguments) not in PROMOTION_ARITY[promotion]:
            raise self.error("promotion", f"{promotion.value!r} does not fit {len(signature.tensor_arguments)} inputs")
        params = [a.name for a in signature.arguments]
        return OpSpec(
            path=self.path,
            line=self.lines["func"],
            text=self.text,
            signature=signature,
            family=family,
            dtypes=self._dtypes(),
            promotion=promotion,
            reference=self._reference(params),
            doc=self._str("doc"),
            fields=self._cpp_fields(family, signature),
            tags=self._tags(),
            variants=tuple(self._enum_list("variants", Variant, default=[Variant.function.value])),
            operators=self._operators(signature),
            tolerances=self._tolerances(family),
            accuracy=self._accuracy(family),
            domain=self._domain(signature, family),
            proposer=self._choice("proposer", PROPOSERS, default="template"),
            derivatives=self._derivatives(signature),
            kernel_text=self._without("derivatives"),
        )

    def _composite(self, signature: Signature) -> CompositeSpec:
        returns = signature.returns
        named_tensors = isinstance(returns, ReturnTuple) and not returns.open and len(returns.names) == len(returns.fields) \
            and all(str(t) == "Tensor" for t in signature.return_types)
        if str(returns) not in COMPOSITE_RETURNS and not named_tensors:
            known = ", ".join(f"'{r}'" for r in COMPOSITE_RETURNS)
            raise self.error("func", f"composite ops return {known} (other returns are not bound yet), not {str(signature.returns)!r}")
        implementation = self._str("implementation")
        if not _CPP_NAME.match(implementation):
            raise self.error("implementation", f"expected a qualified C++ function name in namespace ts (ts::python::reshape), got {implementation!r}")
        params = [a.name for a in signature.arguments]
        return CompositeSpec(self.path, self.lines["func"], self.text, signature, implementation, self._reference(params),
                             self._str("doc"), self._examples(signature), self._tags(), self._derivatives(signature),
                             self._dtypes() if "dtypes" in self.values else DTYPES)  # fmt: skip

    def _examples(self, signature: Signature) -> tuple[tuple[tuple[str, Any], ...], ...]:
        raw = self._require("examples")
        shape = "a list of calls, each a mapping argument -> value (a tensor argument's value is its shape)"
        if not isinstance(raw, list) or not raw or not all(isinstance(call, dict) for call in raw):
            raise self.error("examples", f"expected {shape}, got {_describe(raw)}")
        by_name = {a.name: a for a in signature.arguments}
        required = [a.name for a in signature.arguments if a.default is None and a.kind != "variadic"]
        examples = []
        for i, call in enumerate(raw, start=1):
            for name, value in call.items():
                if name not in by_name:
                    raise self.error("examples", f"call {i}: {name!r} is not an argument ({', '.join(by_name)})")
                if by_name[name].kind == "variadic":
                    if not (isinstance(value, list) and all(map(_is_shape, value))):
                        raise self.error("examples", f"call {i}: variadic {name!r} takes a list of shapes, not {_describe(value)}")
                elif by_name[name].type.is_tensor and not _is_shape(value):
                    raise self.error("examples", f"call {i}: tensor {name!r} takes its shape, a list of extents, not {_describe(value)}")
                if by_name[name].type.is_tensor_list and not (isinstance(value, list) and value and all(map(_is_shape, value))):
                    raise self.error("examples", f"call {i}: tensor list {name!r} takes a non-empty list of shapes, not {_describe(value)}")
            missing = [name for name in required if name not in call]
            if missing:
                raise self.error("examples", f"call {i}: no value for required argument {missing[0]!r}")
            examples.append(tuple((name, _frozen(call[name])) for name in by_name if name in call))
        return tuple(examples)

    # -- fields

    def _derivatives(self, signature: Signature) -> Derivatives | None:
        if "derivatives" not in self.values:
            return None
        tensors = tuple(a.name for a in signature.arguments if a.type.is_tensor or a.type.is_tensor_list)
        lines = entry_lines(self.text, self.lines["derivatives"])
        try:
            return parse_derivatives(self.values["derivatives"], tensors, tuple(a.name for a in signature.arguments), lines,
                                     signature.returns_several)  # fmt: skip
        except FormulaError as exc:
            line = lines.get(exc.entry, self.lines["derivatives"]) if exc.entry else self.lines["derivatives"]
            raise SpecError(Location(self.path, line), "derivatives", str(exc)) from None

    def _without(self, field: str) -> str:
        """The spec text without `field` (its key line and the indented lines under it)."""
        if field not in self.values:
            return self.text
        lines = self.text.splitlines(keepends=True)
        start = self.lines[field] - 1
        end = start + 1
        while end < len(lines) and (not lines[end].strip() or lines[end][0].isspace()):
            end += 1
        return "".join(lines[:start] + lines[end:])

    def _family_fields(self) -> Iterable[str]:
        name = self.values.get("family")
        return FAMILIES[name].fields if name in FAMILIES else ()

    def _require(self, field: str) -> Any:
        if field not in self.values:
            raise self.error(None, f"missing required field '{field}'")
        return self.values[field]

    def _str(self, field: str, default: str | None = None) -> str:
        value = self.values.get(field, default) if default is not None else self._require(field)
        if not isinstance(value, str) or not value.strip():
            raise self.error(field, f"expected a non-empty string, got {_describe(value)}")
        return value.strip()

    def _choice(self, field: str, choices: tuple[str, ...], default: str) -> str:
        value = self._str(field, default)
        if value not in choices:
            raise self.error(field, f"unknown value {value!r} (known: {', '.join(choices)})")
        return value

    def _enum(self, field: str, enum: type[Enum]) -> Any:
        value = self._str(field)
        try:
            return enum(value)
        except ValueError:
            known = ", ".join(e.value for e in enum)
            raise self.error(field, f"unknown value {value!r} (known: {known})") from None

    def _list(self, field: str, default: list[Any] | None = None) -> list[Any]:
        value = self.values.get(field, default) if default is not None else self._require(field)
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(field, f"expected a list of strings, got {_describe(value)}")
        return value

    def _enum_list(self, field: str, enum: type[Enum], default: list[str]) -> list[Any]:
        result = []
        for value in self._list(field, default):
            try:
                result.append(enum(value))
            except ValueError:
                known = ", ".join(e.value for e in enum)
                raise self.error(field, f"unknown value {value!r} (known: {known})") from None
        return result

    def _signature(self) -> Signature:
        text = self._str("func")
        try:
            signature = parse_signature(text)
        except SignatureError as exc:
            raise self.error("func", f"bad signature: {exc}") from None
        for arg in signature.arguments:  # the language leaves dtype class names to the catalog
            for name in arg.type.dtype_constraint:
                if name not in DTYPE_CLASSES and name not in DTYPES:
                    known = ", ".join(list(DTYPE_CLASSES) + list(DTYPES))
                    raise self.error("func", f"argument {arg.name!r}: unknown dtype or dtype class {name!r} (known: {known})")
        return signature

    def _family(self) -> FamilyDef:
        name = self._str("family") if "family" in self.values else None
        if name is None:
            raise self.error(None, "missing required field 'family'")
        try:
            return lookup_family(name)
        except UnknownFamily as exc:
            raise self.error("family", exc.message) from None

    def _check_signature(self, signature: Signature, family: FamilyDef) -> None:
        if str(signature.returns) != "Tensor":
            raise self.error("func", f"ops return 'Tensor', not {str(signature.returns)!r}")
        tensors = signature.tensor_arguments
        if any(a.kind != "positional" or a.type.optional for a in tensors):
            raise self.error("func", "tensor arguments must be positional-only ('/' after them) and not optional")
        if len(tensors) not in family.arity or signature.arguments[: len(tensors)] != tensors:
            raise self.error("func", f"family {family.name} takes {_arity_text(family)} leading tensor arguments")
        rest = str(signature).split("(", 1)[1].rsplit(") ->", 1)[0].split(", ")[len(tensors) :]
        if family.own_scalars:
            own = signature.arguments[len(tensors) :]
            if rest[:2] != ["/", "*"] or not own or any(a.type != Type(BaseType.float) for a in own) or len(own) > MAX_OWN_SCALARS:
                raise self.error("func", f"family {family.name} takes '/, *' after its tensors, then 1 to {MAX_OWN_SCALARS} "
                                         "float keyword arguments (the op's own)")
            return
        if ", ".join(rest) not in family.argument_forms():
            raise self.error("func", f"family {family.name} expects the arguments after the tensors to be "
                                     f"'{family.arguments}' (bracketed ones may be left out)")

    def _dtypes(self) -> tuple[str, ...]:
        return self._dtype_names("dtypes", self._list("dtypes"))

    def _dtype_names(self, field: str, entries: object) -> tuple[str, ...]:
        """dtype names and classes (`numeric`, `integer`, ...) as the dtypes they stand for, in DTYPES order."""
        entries = [entries] if isinstance(entries, str) else entries
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            raise self.error(field, f"expected a list of dtypes or dtype classes, got {_describe(entries)}")
        names: set[str] = set()
        for entry in entries:
            if entry in DTYPE_CLASSES:
                names.update(DTYPE_CLASSES[entry])
            elif entry in DTYPES:
                names.add(entry)
            else:
                known = ", ".join(list(DTYPE_CLASSES) + list(DTYPES))
                raise self.error(field, f"unknown dtype or dtype class {entry!r} (known: {known})")
        return tuple(d for d in DTYPES if d in names)

    def _reference(self, params: list[str]) -> Reference:
        source = self._str("reference")
        try:
            return parse_reference(source, params)
        except ReferenceError_ as exc:
            # a block scalar (`reference: |`) starts on the line after the key
            block = self.text.splitlines()[self.lines["reference"] - 1].rstrip().endswith(("|", ">", "|-", ">-"))
            offset = exc.line - 1 + (1 if block else 0)
            message = str(exc).splitlines()[0]
            raise SpecError(Location(self.path, self.lines["reference"] + offset), "reference", message) from None

    def _cpp_fields(self, family: FamilyDef, signature: Signature) -> tuple[tuple[str, str], ...]:
        fields = []
        for name in family.fields:
            if name in family.assigned_fields:
                fields.append((name, self._assignments(name, signature)))
            elif name in self.values or name in family.required_fields:
                fields.append((name, self._expression(name, self._str(name))))
        for pair in family.field_pairs:
            given = [name for name in pair if name in self.values]
            if len(given) == 1:
                missing = next(name for name in pair if name not in given)
                raise self.error(given[0], f"goes with {missing!r}: give both or neither")
        return tuple(fields)

    def _expression(self, field: str, value: str) -> str:
        if any(bad in value for bad in (";", "{", "}", "#", "//", "/*")):
            raise self.error(field, "must be a single C++ expression (no ';', braces, comments or '#')")
        return value

    def _assignments(self, field: str, signature: Signature) -> str:
        """A mapping from each state tensor (every tensor but the last) to the C++ expression of its new value, as
        the C++ statements that compute them in the order written (each sees the new values before it)."""
        value = self._require(field)
        states = [a.name for a in signature.tensor_arguments[:-1]]
        if not isinstance(value, dict) or sorted(value) != sorted(states):
            raise self.error(field, f"expected a mapping from each state tensor ({', '.join(states)}) to the C++ "
                                    f"expression of its new value, got {_describe(value)}")
        statements = []
        for name, expression in value.items():
            if not isinstance(expression, str) or not expression.strip():
                raise self.error(field, f"{name}: expected a non-empty C++ expression, got {_describe(expression)}")
            statements.append(f"{name} = {self._expression(field, expression.strip())};")
        return "\n".join(statements)

    def _tags(self) -> tuple[str, ...]:
        tags = self._list("tags", default=[])
        for tag in tags:
            if tag not in TAGS:
                raise self.error("tags", f"unknown tag {tag!r} (known: {', '.join(sorted(TAGS))})")
        return tuple(tags)

    def _operators(self, signature: Signature) -> tuple[str, ...]:
        operators = self._list("operators", default=[])
        arity = len(signature.tensor_arguments)
        for op in operators:
            if op not in OPERATORS:
                raise self.error("operators", f"unknown operator {op!r} (known: {', '.join(OPERATORS)})")
            if (op in UNARY_OPERATORS) != (arity == 1) or arity > 2:
                raise self.error("operators", f"{op} does not fit an op with {arity} tensor inputs")
        return tuple(operators)

    def _tolerances(self, family: FamilyDef) -> tuple[Tolerance, ...]:
        raw = self.values.get("tolerances", {})
        if not isinstance(raw, dict):
            raise self.error("tolerances", f"expected a mapping dtype -> {{rtol, atol, reason}}, got {_describe(raw)}")
        result = []
        for dtype, entry in raw.items():
            if dtype not in DTYPES:
                raise self.error("tolerances", f"unknown dtype {dtype!r}")
            if not isinstance(entry, dict) or set(entry) - {"rtol", "atol", "reason"}:
                raise self.error("tolerances", f"{dtype}: expected keys rtol, atol, reason")
            reason = entry.get("reason")
            if not isinstance(reason, str) or not reason.strip():
                raise self.error("tolerances", f"{dtype}: an override must carry a 'reason'")
            rtol, atol = entry.get("rtol", 0.0), entry.get("atol", 0.0)
            if not all(_is_number(v) and v >= 0 and math.isfinite(v) for v in (rtol, atol)):
                raise self.error("tolerances", f"{dtype}: rtol and atol must be non-negative numbers")
            result.append(Tolerance(dtype, float(rtol), float(atol), reason.strip()))
        if result and family.judged_in_ulps:
            raise self.error("tolerances", f"{family.name} results are judged in ulps: declare a budget in 'accuracy' instead")
        return tuple(result)

    def _accuracy(self, family: FamilyDef) -> Accuracy | None:
        if "accuracy" not in self.values:
            return None
        raw = self.values["accuracy"]
        if not family.judged_in_ulps:
            raise self.error("accuracy", f"an ulp budget is for families judged in ulps (pointwise); {family.name} ops set 'tolerances'")
        shape = "{ulp: N or {float32: N, float64: N}, reason: \"why\"}"
        if not isinstance(raw, dict) or not {"ulp", "reason"} <= set(raw) or not set(raw) <= {"ulp", "reason", "relative_to", *ACCURACY_DEVICES}:
            raise self.error("accuracy", f"expected {shape[:-1]}, and optionally relative_to: operands, "
                                         f"{' or '.join(ACCURACY_DEVICES)}: {shape}}}")  # fmt: skip
        relative_to = raw.get("relative_to", "result")
        if relative_to not in ACCURACY_SCALES:
            raise self.error("accuracy", f"relative_to: one of {', '.join(ACCURACY_SCALES)}, not {relative_to!r}")
        devices = []
        for device in ACCURACY_DEVICES:
            if device in raw:
                if not isinstance(raw[device], dict) or set(raw[device]) != {"ulp", "reason"}:
                    raise self.error("accuracy", f"{device}: expected {shape}, the budgets {device} kernels are held to instead")
                devices.append((device, self._ulp_budgets(raw[device], device)))
        return replace(self._ulp_budgets(raw, None), devices=tuple(devices), relative_to=relative_to)

    def _ulp_budgets(self, raw: dict, device: str | None) -> Accuracy:
        where = f"{device}: " if device else ""
        reason = raw["reason"]
        if not isinstance(reason, str) or not reason.strip():
            raise self.error("accuracy", f"{where}an ulp budget must carry a 'reason'")
        ulp = raw["ulp"]
        budgets = dict(ulp) if isinstance(ulp, dict) else {dtype: ulp for dtype in ULP_DTYPES}
        for dtype, value in budgets.items():
            if dtype not in ULP_DTYPES + ULP_INPUT_DTYPES:
                known = ", ".join(ULP_DTYPES + ULP_INPUT_DTYPES)
                raise self.error("accuracy", f"{where}ulp budgets are per result dtype or complex input dtype ({known}), not {dtype!r}")
            if not (_is_number(value) and CORRECTLY_ROUNDED <= value <= 1e6 and math.isfinite(value)):
                raise self.error("accuracy", f"{where}{dtype}: an ulp budget is a number from {CORRECTLY_ROUNDED} (correctly rounded) up")
        return Accuracy(tuple((d, float(budgets[d])) for d in ULP_DTYPES + ULP_INPUT_DTYPES if d in budgets), reason.strip())

    def _domain(self, signature: Signature, family: FamilyDef) -> tuple[DomainBound, ...]:
        raw = self.values.get("domain", {})
        names = [a.name for a in signature.tensor_arguments]
        shape = "argument -> {bounds: [low, high], dtypes: [...], error: \"what numpy says\"}"
        if not isinstance(raw, dict):
            raise self.error("domain", f"expected a mapping {shape}, got {_describe(raw)}")
        if raw and not family.checks_domain:
            raise self.error("domain", f"the {family.name} engine checks no domain bounds (pointwise ops declare them)")
        result = []
        for arg, entry in raw.items():
            if arg not in names:
                raise self.error("domain", f"{arg!r} is not a tensor argument of this op ({', '.join(names)})")
            if not isinstance(entry, dict) or set(entry) != {"bounds", "dtypes", "error"}:
                raise self.error("domain", f"{arg}: expected {{bounds: [low, high], dtypes: [...], error: ...}}")
            bounds = entry["bounds"]
            if not (isinstance(bounds, list) and len(bounds) == 2 and all(_is_bound(b) for b in bounds) and bounds != [None, None]):
                raise self.error("domain", f"{arg}: bounds must be [low, high] with numbers or null (not both null)")
            error = entry["error"]
            if not isinstance(error, str) or not error.strip() or any(c in error for c in '"\\\n'):
                raise self.error("domain", f"{arg}: error must be a one-line message without quotes or backslashes")
            dtypes = self._dtype_names("domain", entry["dtypes"])
            result.append(DomainBound(arg, bounds[0], bounds[1], dtypes, error.strip()))
        return tuple(result)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_shape(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value)


def _frozen(value: Any) -> Any:
    """YAML lists as tuples, so specs stay hashable and immutable."""
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def _is_bound(value: object) -> bool:
    return value is None or _is_number(value)


def _arity_text(family: FamilyDef) -> str:
    counts = family.arity
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"


def _describe(value: object) -> str:
    return f"{type(value).__name__} {value!r}" if value is not None else "nothing"


# ---- cross-spec checks ---------------------------------------------------------------------------


def _check_catalog(parsed: list[OpSpec | AliasSpec | CompositeSpec], helpers: tuple[str, ...] = ()) -> Catalog:
    seen: dict[str, OpSpec | AliasSpec | CompositeSpec] = {}
    for spec in parsed:
        if spec.name in seen:
            first = seen[spec.name]
            raise SpecError(Location(spec.path, spec.line), "func", f"duplicate op name {spec.name!r} (first in {first.path})")
        seen[spec.name] = spec
    ops = tuple(sorted((s for s in parsed if isinstance(s, OpSpec)), key=lambda s: s.name))
    aliases = tuple(sorted((s for s in parsed if isinstance(s, AliasSpec)), key=lambda s: s.name))
    composites = tuple(sorted((s for s in parsed if isinstance(s, CompositeSpec)), key=lambda s: s.name))
    by_name = {op.name: op for op in ops}
    for alias in aliases:
        target = by_name.get(alias.alias_of)
        if target is None:
            raise SpecError(Location(alias.path, alias.alias_of_line), "alias_of", f"alias to an unknown op {alias.alias_of!r}")
        expected = str(target.signature).replace(f"{target.name}(", f"{alias.name}(", 1)
        if str(alias.signature) != expected:
            raise SpecError(Location(alias.path, alias.line), "func", f"an alias must have its target's signature: {expected!r}")
    # tensorsmith/_derivatives.py defines `<op>_backward` for every op with formulas, in the module whose globals
    # are the ops and helpers the formulas call by name: no op may share a name with either.
    backward_of = {f"{s.name}_backward": s.name for s in (*ops, *composites) if s.derivatives and s.derivatives.differentiable}
    for spec in parsed:
        if spec.name in backward_of:
            raise SpecError(Location(spec.path, spec.line), "func", f"{spec.name!r} is the name of {backward_of[spec.name]}'s "
                            "backward function in tensorsmith/_derivatives.py, where formulas call ops by name")  # fmt: skip
        if spec.name in helpers:
            raise SpecError(Location(spec.path, spec.line), "func", f"{spec.name!r} is the name of a derivative helper")
    callable_names = set(seen) | set(helpers)
    for spec in (*ops, *composites):
        for derivative in spec.derivatives.every_formula if spec.derivatives else ():
            unknown = sorted(set(derivative.calls) - callable_names)
            if unknown:
                raise SpecError(Location(spec.path, derivative.line), "derivatives",
                                f"{derivative.input}: {unknown[0]!r} is neither an op of the catalog nor a helper "
                                f"({', '.join(sorted(helpers))})")  # fmt: skip
    return Catalog(ops, aliases, composites)
