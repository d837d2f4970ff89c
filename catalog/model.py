"""The spec data model: one frozen OpSpec per file under specs/, validated.

Everything a spec may say is defined here (fields, families, dtype classes,
promotion kinds, tags); mapping it to C++/Python names lives in api.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from .errors import Location, SpecError
from .reference import Reference, ReferenceError_, parse_reference
from .signature import Signature, SignatureError, parse_signature
from .yaml_lines import LoadedMapping, load_mapping

DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
    "float16", "bfloat16",
)  # fmt: skip  (the runtime's DType order: the 16-bit floats came last)
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
FLOATING = ("float32", "float64", "float16", "bfloat16")
HALF = ("float16", "bfloat16")  # stored in 16 bits, computed in float
DTYPE_CLASSES: dict[str, tuple[str, ...]] = {
    "all": DTYPES,
    "numeric": SIGNED + UNSIGNED + FLOATING,
    "integer": SIGNED + UNSIGNED,
    "signed": SIGNED,
    "unsigned": UNSIGNED,
    "floating": FLOATING,
    "bool": ("bool",),
}

TAGS = {
    "core": "part of the Array API / numpy core catalog",
    "activation": "a neural-network activation function",
    "comparison": "elementwise comparison returning bool",
    "logical": "elementwise logical operation returning bool",
    "linalg": "linear algebra",
    "nan_propagating": "a NaN input gives a NaN output",
}


class Family(Enum):
    pointwise = "pointwise"
    reduction = "reduction"
    index_reduction = "index_reduction"
    normalization = "normalization"
    contraction = "contraction"


class Promotion(Enum):
    same = "same"
    float = "float"
    binary = "binary"
    binary_float = "binary_float"
    comparison = "comparison"
    logical = "logical"
    where = "where"
    reduce_same = "reduce_same"
    reduce_sum = "reduce_sum"
    reduce_mean = "reduce_mean"
    reduce_index = "reduce_index"


class Variant(Enum):
    function = "function"
    method = "method"


# Per family: the promotion kinds it allows, its C++ fields (required, optional),
# and the canonical argument list its engine expects after the tensor inputs.
FAMILY_PROMOTIONS: dict[Family, tuple[Promotion, ...]] = {
    Family.pointwise: (
        Promotion.same, Promotion.float, Promotion.binary, Promotion.binary_float,
        Promotion.comparison, Promotion.logical, Promotion.where,
    ),
    Family.reduction: (Promotion.reduce_same, Promotion.reduce_sum, Promotion.reduce_mean),
    Family.index_reduction: (Promotion.reduce_index,),
    Family.normalization: (Promotion.float,),
    Family.contraction: (Promotion.binary,),
}  # fmt: skip
FAMILY_FIELDS: dict[Family, tuple[tuple[str, ...], tuple[str, ...]]] = {
    Family.pointwise: (("expr",), ()),
    Family.reduction: (("combine",), ("identity", "finalize")),
    Family.index_reduction: (("better",), ()),
    Family.normalization: (("output",), ()),
    Family.contraction: ((), ()),
}
FAMILY_ARGUMENTS: dict[Family, str] = {
    Family.reduction: "/, *, int[]? axis=None, bool keepdims=False",
    Family.index_reduction: "/, *, int? axis=None, bool keepdims=False",
    Family.normalization: "/, *, int axis=-1",
    Family.contraction: "/",
    Family.pointwise: "/",
}
FAMILY_ARITY: dict[Family, tuple[int, ...]] = {
    Family.pointwise: (1, 2, 3),
    Family.reduction: (1,),
    Family.index_reduction: (1,),
    Family.normalization: (1,),
    Family.contraction: (2,),
}
PROMOTION_ARITY: dict[Promotion, tuple[int, ...]] = {
    Promotion.same: (1,), Promotion.float: (1,), Promotion.binary: (1, 2, 3), Promotion.binary_float: (2,),
    Promotion.comparison: (2,), Promotion.logical: (1, 2), Promotion.where: (3,),
}  # fmt: skip

OPERATORS = (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
    "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__neg__", "__abs__",
)  # fmt: skip
UNARY_OPERATORS = ("__neg__", "__abs__")

COMMON_FIELDS = ("func", "family", "dtypes", "promotion", "reference", "doc", "tags", "variants", "operators",
                 "tolerances", "accuracy", "domain", "proposer")  # fmt: skip
ALIAS_FIELDS = ("func", "alias_of", "doc")
PROPOSERS = ("template", "claude")


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
    float32's, since kernels compute them in float and round once). An op without one must be correctly
    rounded (0.5 ulp: the result numpy's float64 arithmetic rounds to)."""

    ulp: tuple[tuple[str, float], ...]  # (result dtype, budget)
    reason: str

    def budget(self, dtype: str) -> float | None:
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


@dataclass(frozen=True)
class OpSpec:
    path: str  # relative to the repository root
    line: int  # of the `func` field
    text: str  # the spec file's exact contents (hashed for incremental regeneration)
    signature: Signature
    family: Family
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

    @property
    def name(self) -> str:
        return self.signature.name

    @property
    def arity(self) -> int:
        return len(self.signature.tensor_arguments)

    def field(self, name: str) -> str | None:
        return dict(self.fields).get(name)


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
class Catalog:
    ops: tuple[OpSpec, ...]  # sorted by name
    aliases: tuple[AliasSpec, ...]

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
    return _check_catalog(parsed)


def parse_spec_file(root: Path, path: Path) -> OpSpec | AliasSpec:
    relative = path.relative_to(root).as_posix()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise SpecError(Location(relative, line), None, "not valid UTF-8 text") from None
    return parse_spec(text, relative)


def parse_spec(text: str, path: str) -> OpSpec | AliasSpec:
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

    def parse(self) -> OpSpec | AliasSpec:
        is_alias = "alias_of" in self.values
        if not is_alias:
            self._family()  # first, so an unknown family is not reported as unknown fields
        allowed = ALIAS_FIELDS if is_alias else COMMON_FIELDS + tuple(self._family_fields())
        for key in self.values:
            if key not in allowed:
                kind = "an alias" if is_alias else "this family"
                raise self.error(key, f"unknown field for {kind} (allowed: {', '.join(allowed)})")
        signature = self._signature()
        if is_alias:
            return AliasSpec(self.path, self.lines["func"], self.text, signature, self._str("alias_of"), self._str("doc"),
                             self.lines["alias_of"])  # fmt: skip
        family = self._family()
        self._check_signature(signature, family)
        promotion = self._enum("promotion", Promotion)
        if promotion not in FAMILY_PROMOTIONS[family]:
            allowed_p = ", ".join(p.value for p in FAMILY_PROMOTIONS[family])
            raise self.error("promotion", f"{promotion.value!r} is not valid for family {family.value} ({allowed_p})")
        if family is Family.pointwise and len(signature.tensor_arguments) not in PROMOTION_ARITY[promotion]:
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
            fields=self._cpp_fields(family),
            tags=self._tags(),
            variants=tuple(self._enum_list("variants", Variant, default=[Variant.function.value])),
            operators=self._operators(signature),
            tolerances=self._tolerances(family),
            accuracy=self._accuracy(family),
            domain=self._domain(signature, family),
            proposer=self._choice("proposer", PROPOSERS, default="template"),
        )

    # -- fields

    def _family_fields(self) -> Iterable[str]:
        try:
            family = Family(self.values.get("family"))
        except ValueError:
            return ()
        required, optional = FAMILY_FIELDS[family]
        return required + optional

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
            return parse_signature(text)
        except SignatureError as exc:
            raise self.error("func", f"bad signature: {exc}") from None

    def _family(self) -> Family:
        if "family" not in self.values:
            raise self.error(None, "missing required field 'family'")
        return self._enum("family", Family)

    def _check_signature(self, signature: Signature, family: Family) -> None:
        if str(signature.returns) != "Tensor":
            raise self.error("func", f"ops return 'Tensor', not {str(signature.returns)!r}")
        tensors = signature.tensor_arguments
        if any(a.kind != "positional" or a.type.optional for a in tensors):
            raise self.error("func", "tensor arguments must be positional-only ('/' after them) and not optional")
        if len(tensors) not in FAMILY_ARITY[family] or signature.arguments[: len(tensors)] != tensors:
            raise self.error("func", f"family {family.value} takes {_arity_text(family)} leading tensor arguments")
        rest = str(signature).split("(", 1)[1].rsplit(") ->", 1)[0].split(", ")[len(tensors) :]
        expected = FAMILY_ARGUMENTS[family]
        if ", ".join(rest) != expected:
            raise self.error("func", f"family {family.value} expects the arguments after the tensors to be '{expected}'")

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

    def _cpp_fields(self, family: Family) -> tuple[tuple[str, str], ...]:
        required, optional = FAMILY_FIELDS[family]
        fields = []
        for name in required + optional:
            if name in self.values or name in required:
                value = self._str(name)
                if any(bad in value for bad in (";", "{", "}", "#", "//", "/*")):
                    raise self.error(name, "must be a single C++ expression (no ';', braces, comments or '#')")
                fields.append((name, value))
        return tuple(fields)

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

    def _tolerances(self, family: Family) -> tuple[Tolerance, ...]:
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
        if result and family is Family.pointwise:
            raise self.error("tolerances", "pointwise results are judged in ulps: declare a budget in 'accuracy' instead")
        return tuple(result)

    def _accuracy(self, family: Family) -> Accuracy | None:
        if "accuracy" not in self.values:
            return None
        raw = self.values["accuracy"]
        if family is not Family.pointwise:
            raise self.error("accuracy", "an ulp budget is for pointwise ops; other families set 'tolerances'")
        if not isinstance(raw, dict) or set(raw) != {"ulp", "reason"}:
            raise self.error("accuracy", "expected {ulp: N or {float32: N, float64: N}, reason: \"why\"}")
        reason = raw["reason"]
        if not isinstance(reason, str) or not reason.strip():
            raise self.error("accuracy", "an ulp budget must carry a 'reason'")
        ulp = raw["ulp"]
        budgets = dict(ulp) if isinstance(ulp, dict) else {dtype: ulp for dtype in ULP_DTYPES}
        for dtype, value in budgets.items():
            if dtype not in ULP_DTYPES:
                raise self.error("accuracy", f"ulp budgets are per result dtype ({', '.join(ULP_DTYPES)}), not {dtype!r}")
            if not (_is_number(value) and CORRECTLY_ROUNDED <= value <= 1e6 and math.isfinite(value)):
                raise self.error("accuracy", f"{dtype}: an ulp budget is a number from {CORRECTLY_ROUNDED} (correctly rounded) up")
        return Accuracy(tuple((d, float(budgets[d])) for d in ULP_DTYPES if d in budgets), reason.strip())

    def _domain(self, signature: Signature, family: Family) -> tuple[DomainBound, ...]:
        raw = self.values.get("domain", {})
        names = [a.name for a in signature.tensor_arguments]
        shape = "argument -> {bounds: [low, high], dtypes: [...], error: \"what numpy says\"}"
        if not isinstance(raw, dict):
            raise self.error("domain", f"expected a mapping {shape}, got {_describe(raw)}")
        if raw and family is not Family.pointwise:
            raise self.error("domain", "domain checks run in the pointwise engine: pointwise ops only")
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


def _is_bound(value: object) -> bool:
    return value is None or _is_number(value)


def _arity_text(family: Family) -> str:
    counts = FAMILY_ARITY[family]
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"


def _describe(value: object) -> str:
    return f"{type(value).__name__} {value!r}" if value is not None else "nothing"


# ---- cross-spec checks ---------------------------------------------------------------------------


def _check_catalog(parsed: list[OpSpec | AliasSpec]) -> Catalog:
    seen: dict[str, OpSpec | AliasSpec] = {}
    for spec in parsed:
        if spec.name in seen:
            first = seen[spec.name]
            raise SpecError(Location(spec.path, spec.line), "func", f"duplicate op name {spec.name!r} (first in {first.path})")
        seen[spec.name] = spec
    ops = tuple(sorted((s for s in parsed if isinstance(s, OpSpec)), key=lambda s: s.name))
    aliases = tuple(sorted((s for s in parsed if isinstance(s, AliasSpec)), key=lambda s: s.name))
    by_name = {op.name: op for op in ops}
    for alias in aliases:
        target = by_name.get(alias.alias_of)
        if target is None:
            raise SpecError(Location(alias.path, alias.alias_of_line), "alias_of", f"alias to an unknown op {alias.alias_of!r}")
        expected = str(target.signature).replace(f"{target.name}(", f"{alias.name}(", 1)
        if str(alias.signature) != expected:
            raise SpecError(Location(alias.path, alias.line), "func", f"an alias must have its target's signature: {expected!r}")
    return Catalog(ops, aliases)
