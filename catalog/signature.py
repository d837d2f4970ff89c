"""The op signature language: ``name(Type arg[=default], ..., /, *, ...) -> Returns``.

Parsed into frozen dataclasses that print back to exactly the text they came
from; `parse_signature` asserts the round trip on every parse, as torchgen does
for native_functions.yaml.

Types (``Base[(constraint)][{values}][[]][?]``, in that order):

- ``Tensor``, ``int``, ``float``, ``bool``; ``Scalar`` (a Python bool, int, float
  or complex); ``ScalarType`` (a dtype); ``Device``.
- ``str{left|right}``: a string enum naming its values (identifiers joined by
  ``|``, since arguments are split on commas); a bare ``str`` is refused.
- ``Tensor(integer)``, ``Tensor(integer|bool)``: a tensor that accepts only those
  dtype classes and takes no part in the op's type promotion (index tensors).
  This module does not know the class names; the spec model checks them.
- ``[]`` makes a list: ``Tensor[]``, ``int[]``, ``float[]`` only.
- ``?`` makes it optional (None allowed), after ``[]``: ``int[]?``.

Defaults: ``None`` (optional types only); ``True``/``False`` (bool, Scalar); an
int literal (int, float, Scalar); a float literal (float, Scalar); a single-quoted
value of a string enum (``str{left|right} side='left'``). Lists, tensors,
ScalarType and Device default to None only.

Arguments before ``/`` are positional-only, after ``*`` keyword-only. Outside
the keyword-only ones, an argument without a default may not follow one with.
A variadic argument, ``Tensor *arrays`` (Python's ``*arrays``: any number of
tensors, given positionally), comes first and alone of its kind; the arguments
after it are keyword-only, as in Python, with no ``*`` written.

Returns: one type (``-> Tensor``, ``-> Tensor[]``, ``-> bool``; ``Tensor[]`` is a
Python list) or a tuple of two or more, all named or none: ``-> (Tensor, Tensor)``,
``-> (Tensor values, Tensor indices)``, or a tuple of any length of one type,
``-> (Tensor, ...)``. A return takes no dtype constraint.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SIGNATURE = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)\((?P<args>.*)\) -> (?P<ret>.+)\Z")
_TYPE = re.compile(
    r"(?P<base>[A-Za-z_][A-Za-z0-9_]*)(?:\((?P<constraint>[^()]*)\))?(?:\{(?P<values>[^{}]*)\})?"
    r"(?P<list>\[\])?(?P<optional>\?)?\Z"
)
_INT = re.compile(r"-?[0-9]+\Z")
_FLOAT = re.compile(r"-?[0-9]+\.[0-9]*(e-?[0-9]+)?\Z")
_STRING = re.compile(r"'(?P<value>[A-Za-z_][A-Za-z0-9_]*)'\Z")


class SignatureError(ValueError):
    """A malformed signature; the message says what is wrong, not where (the caller knows)."""


class BaseType(Enum):
    Tensor = "Tensor"
    int = "int"
    float = "float"
    bool = "bool"
    Scalar = "Scalar"
    ScalarType = "ScalarType"
    Device = "Device"
    str = "str"


_BASES = {b.value: b for b in BaseType}
_LIST_BASES = (BaseType.Tensor, BaseType.int, BaseType.float)


@dataclass(frozen=True)
class Type:
    base: BaseType
    is_list: bool = False  # int[], Tensor[]
    optional: bool = False  # int?, int[]?
    dtype_constraint: tuple[str, ...] = ()  # Tensor(integer|bool): the dtype classes it accepts
    enum_values: tuple[str, ...] = ()  # str{left|right}: the values it accepts

    @property
    def is_tensor(self) -> bool:
        """One tensor (``Tensor``, ``Tensor?``, ``Tensor(integer)``), not a list of them."""
        return self.base is BaseType.Tensor and not self.is_list

    @property
    def is_tensor_list(self) -> bool:
        return self.base is BaseType.Tensor and self.is_list

    @staticmethod
    def parse(text: str) -> Type:
        match = _TYPE.match(text)
        base = _BASES.get(match["base"]) if match else None
        if base is None:
            known = ", ".join(t.value for t in BaseType if t is not BaseType.str)
            raise SignatureError(f"unknown type {text!r} (known: {known}, str{{a|b}}, with optional [] and ?)")
        constraint = _identifiers(text, match["constraint"], "dtype class")
        values = _identifiers(text, match["values"], "enum value")
        if constraint and base is not BaseType.Tensor:
            raise SignatureError(f"type {text!r}: only Tensor takes a dtype constraint")
        if base is BaseType.str and not values:
            raise SignatureError(f"type {text!r}: a string enum lists its values, as in str{{left|right}}")
        if values and base is not BaseType.str:
            raise SignatureError(f"type {text!r}: only str takes enum values")
        if match["list"] and base not in _LIST_BASES:
            raise SignatureError(f"list type {text!r}: only Tensor[], int[] and float[] are supported")
        return Type(base, bool(match["list"]), bool(match["optional"]), constraint, values)

    def __str__(self) -> str:
        constraint = f"({'|'.join(self.dtype_constraint)})" if self.dtype_constraint else ""
        values = f"{{{'|'.join(self.enum_values)}}}" if self.enum_values else ""
        return f"{self.base.value}{constraint}{values}{'[]' if self.is_list else ''}{'?' if self.optional else ''}"


def _identifiers(text: str, group: str | None, what: str) -> tuple[str, ...]:
    """The ``|``-joined names inside ``(...)`` or ``{...}`` of a type; () when the brackets are absent."""
    if group is None:
        return ()
    names = tuple(group.split("|"))
    for i, name in enumerate(names):
        if not _NAME.match(name):
            raise SignatureError(f"type {text!r}: {what} {name!r} is not an identifier")
        if name in names[:i]:
            raise SignatureError(f"type {text!r}: {what} {name!r} appears twice")
    return names


@dataclass(frozen=True)
class Argument:
    name: str
    type: Type
    default: str | None  # as written: None, True, False, an int or float literal, or 'value' of a string enum
    kind: str  # "positional" (before /), "either", "keyword" (after * or the variadic one), "variadic" (*name)

    @property
    def default_value(self) -> object:
        """The default as a Python value."""
        if self.default is None:
            raise SignatureError(f"argument {self.name!r} has no default")
        keywords: dict[str, object] = {"None": None, "True": True, "False": False}
        if self.default in keywords:
            return keywords[self.default]
        string = _STRING.match(self.default)
        return string["value"] if string else _number(self.default)

    def __str__(self) -> str:
        text = f"{self.type} {'*' if self.kind == 'variadic' else ''}{self.name}"
        return text if self.default is None else f"{text}={self.default}"


def _number(text: str) -> int | float:
    return int(text) if _INT.match(text) else float(text)


@dataclass(frozen=True)
class ReturnField:
    """One entry of a tuple return: a type, named or not."""

    type: Type
    name: str | None = None

    def __str__(self) -> str:
        return str(self.type) if self.name is None else f"{self.type} {self.name}"


@dataclass(frozen=True)
class ReturnTuple:
    """A tuple return, ``(Tensor values, Tensor indices)``; a single return stays a plain `Type`."""

    fields: tuple[ReturnField, ...]
    open: bool = False  # (Tensor, ...): any number of its one unnamed field

    @property
    def names(self) -> tuple[str, ...]:
        """The field names in order; () when the fields are unnamed."""
        return tuple(f.name for f in self.fields if f.name is not None)

    def __str__(self) -> str:
        return f"({', '.join([str(f) for f in self.fields] + (['...'] if self.open else []))})"


@dataclass(frozen=True)
class Signature:
    name: str
    arguments: tuple[Argument, ...]
    returns: Type | ReturnTuple

    @property
    def tensor_arguments(self) -> tuple[Argument, ...]:
        """The single-tensor arguments (constrained or not), in order; lists are `tensor_list_arguments`, the
        variadic one is `variadic`."""
        return tuple(a for a in self.arguments if a.type.is_tensor and a.kind != "variadic")

    @property
    def variadic(self) -> Argument | None:
        """The ``Tensor *name`` argument, if any."""
        return next((a for a in self.arguments if a.kind == "variadic"), None)

    @property
    def tensor_list_arguments(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if a.type.is_tensor_list)

    @property
    def promoted_arguments(self) -> tuple[Argument, ...]:
        """The tensor and tensor-list arguments whose dtypes the result type is promoted from: those
        without a dtype constraint."""
        return tuple(a for a in self.arguments if a.type.base is BaseType.Tensor and not a.type.dtype_constraint)

    @property
    def returns_tuple(self) -> bool:
        return isinstance(self.returns, ReturnTuple)

    @property
    def returns_several(self) -> bool:
        """Whether a call gives several tensors (a tuple, or a list: `Tensor[]`)."""
        return isinstance(self.returns, ReturnTuple) or self.returns.is_tensor_list

    @property
    def return_types(self) -> tuple[Type, ...]:
        """The returned types in order: one for a single return."""
        if isinstance(self.returns, ReturnTuple):
            return tuple(f.type for f in self.returns.fields)
        return (self.returns,)

    @property
    def return_names(self) -> tuple[str, ...]:
        """The named tuple's field names; () for a single return or an unnamed tuple."""
        return self.returns.names if isinstance(self.returns, ReturnTuple) else ()

    def __str__(self) -> str:
        parts: list[str] = []
        kinds = [a.kind for a in self.arguments]
        for i, arg in enumerate(self.arguments):
            if arg.kind == "keyword" and (i == 0 or kinds[i - 1] not in ("keyword", "variadic")):
                parts.append("*")
            parts.append(str(arg))
            if arg.kind == "positional" and (i + 1 == len(kinds) or kinds[i + 1] != "positional"):
                parts.append("/")
        return f"{self.name}({', '.join(parts)}) -> {self.returns}"


def parse_signature(text: str) -> Signature:
    match = _SIGNATURE.match(text)
    if not match:
        raise SignatureError(f"expected 'name(Type arg, ...) -> Type', got {text!r}")
    tokens = [t.strip() for t in match["args"].split(",")] if match["args"].strip() else []
    arguments: list[Argument] = []
    kind = "either"
    seen_slash = seen_star = variadic = False
    for token in tokens:
        if token in ("/", "*") and variadic:
            raise SignatureError(f"no {token!r} after a variadic argument: the arguments after it are keyword-only")
        if token == "/":
            if seen_slash or seen_star or not arguments:
                raise SignatureError("'/' must follow the positional arguments, once, before '*'")
            seen_slash = True
            arguments = [Argument(a.name, a.type, a.default, "positional") for a in arguments]
            continue
        if token == "*":
            if seen_star:
                raise SignatureError("'*' appears twice")
            seen_star, kind = True, "keyword"
            continue
        argument = _parse_argument(token, kind)
        if argument.kind == "variadic":
            if arguments or seen_star:
                raise SignatureError(f"the variadic argument {token!r} must come first")
            variadic, kind = True, "keyword"
        arguments.append(argument)
    _check_arguments(arguments)
    returns = _parse_returns(match["ret"])
    signature = Signature(match["name"], tuple(arguments), returns)
    if str(signature) != text:  # the dataclasses must print back to the spec text exactly
        raise SignatureError(f"not in canonical form: write it as {str(signature)!r}")
    return signature


def _parse_argument(token: str, kind: str) -> Argument:
    decl, _, default = token.partition("=")
    pieces = decl.split(" ")
    if len(pieces) == 2 and pieces[1].startswith("*") and _NAME.match(pieces[1][1:]):
        if pieces[0] != "Tensor" or default:
            raise SignatureError(f"a variadic argument is 'Tensor *name', with no default, got {token!r}")
        return Argument(pieces[1][1:], Type.parse("Tensor"), None, "variadic")
    if len(pieces) != 2 or not _NAME.match(pieces[1]):
        raise SignatureError(f"expected 'Type name' or 'Type name=default', got {token!r}")
    arg_type = Type.parse(pieces[0])
    if default == "":
        return Argument(pieces[1], arg_type, None, kind)
    _check_default(pieces[1], arg_type, default)
    return Argument(pieces[1], arg_type, default, kind)


def _check_default(name: str, arg_type: Type, default: str) -> None:
    single = not arg_type.is_list  # a list defaults to None only
    base = arg_type.base
    if default == "None":
        ok = arg_type.optional
    elif base is BaseType.str:
        string = _STRING.match(default)
        if not string or string["value"] not in arg_type.enum_values:
            values = ", ".join(f"'{v}'" for v in arg_type.enum_values)
            raise SignatureError(f"default {default!r} does not fit argument '{arg_type} {name}': write one of {values}")
        ok = True
    elif default in ("True", "False"):
        ok = single and base in (BaseType.bool, BaseType.Scalar)
    elif _INT.match(default):
        ok = single and base in (BaseType.int, BaseType.float, BaseType.Scalar)
    elif _FLOAT.match(default):
        ok = single and base in (BaseType.float, BaseType.Scalar)
    else:
        ok = False
    if not ok:
        raise SignatureError(f"default {default!r} does not fit argument '{arg_type} {name}'")


def _check_arguments(arguments: list[Argument]) -> None:
    names = [a.name for a in arguments]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SignatureError(f"duplicate argument name {duplicates[0]!r}")
    seen_default = False
    for arg in arguments:
        if arg.kind == "keyword":
            continue
        if arg.default is not None:
            seen_default = True
        elif seen_default:
            raise SignatureError(f"argument {arg.name!r} without a default follows one with a default")


def _parse_returns(text: str) -> Type | ReturnTuple:
    if not text.startswith("("):
        return _return_type(text)
    if not text.endswith(")"):
        raise SignatureError(f"a tuple return is '(Type, Type, ...)' or '(Type name, Type name, ...)', got {text!r}")
    inner = text[1:-1]
    entries = [entry.strip() for entry in inner.split(",")]
    if len(entries) == 2 and entries[1] == "...":
        return ReturnTuple((ReturnField(_return_type(entries[0])),), open=True)
    fields = tuple(_return_field(entry) for entry in entries) if inner.strip() else ()
    if len(fields) < 2:
        raise SignatureError(f"a tuple return has two or more entries, got {text!r}; write a single return without parentheses")
    names = [f.name for f in fields if f.name is not None]
    if names and len(names) != len(fields):
        raise SignatureError(f"the entries of a tuple return are all named or all unnamed, got {text!r}")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SignatureError(f"duplicate return field name {duplicates[0]!r}")
    return ReturnTuple(fields)


def _return_field(entry: str) -> ReturnField:
    pieces = entry.split(" ")
    if len(pieces) > 2 or (len(pieces) == 2 and not _NAME.match(pieces[1])):
        raise SignatureError(f"expected 'Type' or 'Type name' in a tuple return, got {entry!r}")
    return ReturnField(_return_type(pieces[0]), pieces[1] if len(pieces) == 2 else None)


def _return_type(text: str) -> Type:
    result = Type.parse(text)
    if result.dtype_constraint:
        raise SignatureError(f"return type {text!r}: a dtype constraint belongs on an argument, not a return")
    return result
