"""The op signature language: ``name(Type arg[=default], ..., /, *, ...) -> Tensor``.

Parsed into frozen dataclasses that print back to exactly the text they came
from; `parse_signature` asserts the round trip on every parse, as torchgen does
for native_functions.yaml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SIGNATURE = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)\((?P<args>.*)\) -> (?P<ret>.+)\Z")
_INT = re.compile(r"-?[0-9]+\Z")
_FLOAT = re.compile(r"-?[0-9]+\.[0-9]*(e-?[0-9]+)?\Z")


class SignatureError(ValueError):
    """A malformed signature; the message says what is wrong, not where (the caller knows)."""


class BaseType(Enum):
    Tensor = "Tensor"
    int = "int"
    float = "float"
    bool = "bool"


@dataclass(frozen=True)
class Type:
    base: BaseType
    is_list: bool = False  # int[]
    optional: bool = False  # int?, int[]?

    @staticmethod
    def parse(text: str) -> Type:
        optional = text.endswith("?")
        core = text[:-1] if optional else text
        is_list = core.endswith("[]")
        core = core[:-2] if is_list else core
        try:
            base = BaseType(core)
        except ValueError:
            known = ", ".join(t.value for t in BaseType)
            raise SignatureError(f"unknown type {text!r} (known: {known}, with optional [] and ?)") from None
        if is_list and base is not BaseType.int:
            raise SignatureError(f"list type {text!r}: only int[] is supported")
        return Type(base, is_list, optional)

    def __str__(self) -> str:
        return f"{self.base.value}{'[]' if self.is_list else ''}{'?' if self.optional else ''}"


@dataclass(frozen=True)
class Argument:
    name: str
    type: Type
    default: str | None  # the default as written: None, True, False, an int or a float literal
    kind: str  # "positional" (before /), "either", "keyword" (after *)

    @property
    def default_value(self) -> object:
        """The default as a Python value."""
        if self.default is None:
            raise SignatureError(f"argument {self.name!r} has no default")
        keywords: dict[str, object] = {"None": None, "True": True, "False": False}
        return keywords[self.default] if self.default in keywords else _number(self.default)

    def __str__(self) -> str:
        text = f"{self.type} {self.name}"
        return text if self.default is None else f"{text}={self.default}"


def _number(text: str) -> int | float:
    return int(text) if _INT.match(text) else float(text)


@dataclass(frozen=True)
class Signature:
    name: str
    arguments: tuple[Argument, ...]
    returns: Type

    @property
    def tensor_arguments(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if a.type.base is BaseType.Tensor)

    def __str__(self) -> str:
        parts: list[str] = []
        kinds = [a.kind for a in self.arguments]
        for i, arg in enumerate(self.arguments):
            if arg.kind == "keyword" and (i == 0 or kinds[i - 1] != "keyword"):
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
    seen_slash = seen_star = False
    for token in tokens:
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
        arguments.append(_parse_argument(token, kind))
    _check_arguments(arguments)
    returns = Type.parse(match["ret"])
    signature = Signature(match["name"], tuple(arguments), returns)
    if str(signature) != text:  # the dataclasses must print back to the spec text exactly
        raise SignatureError(f"not in canonical form: write it as {str(signature)!r}")
    return signature


def _parse_argument(token: str, kind: str) -> Argument:
    decl, _, default = token.partition("=")
    pieces = decl.split(" ")
    if len(pieces) != 2 or not _NAME.match(pieces[1]):
        raise SignatureError(f"expected 'Type name' or 'Type name=default', got {token!r}")
    arg_type = Type.parse(pieces[0])
    if default == "":
        return Argument(pieces[1], arg_type, None, kind)
    _check_default(pieces[1], arg_type, default)
    return Argument(pieces[1], arg_type, default, kind)


def _check_default(name: str, arg_type: Type, default: str) -> None:
    if default == "None":
        ok = arg_type.optional
    elif default in ("True", "False"):
        ok = arg_type.base is BaseType.bool and not arg_type.is_list
    elif _INT.match(default):
        ok = arg_type.base in (BaseType.int, BaseType.float) and not arg_type.is_list
    elif _FLOAT.match(default):
        ok = arg_type.base is BaseType.float
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
