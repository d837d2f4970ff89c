"""The signature language: parse/print round trips, structure, and one clear error per mistake."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tensorsmith_forge.catalog.signature import BaseType, SignatureError, Type, parse_signature

ROOT = Path(__file__).resolve().parents[2]
SPEC_FUNCS = sorted((p.name, yaml.safe_load(p.read_text(encoding="utf-8"))["func"]) for p in (ROOT / "specs").glob("*.yaml"))

HAND_WRITTEN = [
    "f() -> Tensor",
    "neg(Tensor x, /) -> Tensor",
    "add(Tensor x1, Tensor x2, /) -> Tensor",
    "where(Tensor condition, Tensor x1, Tensor x2, /) -> Tensor",
    "sum(Tensor x, /, *, int[]? axis=None, bool keepdims=False) -> Tensor",
    "argmax(Tensor x, /, *, int? axis=None, bool keepdims=False) -> Tensor",
    "softmax(Tensor x, /, *, int axis=-1) -> Tensor",
    "clip(Tensor x, /, float? low=None, float? high=None) -> Tensor",
    "scale(Tensor x, /, float factor=1.5, *, bool inplace=True) -> Tensor",
    "eps(Tensor x, /, *, float eps=1.0e-5, float tiny=-0.5) -> Tensor",
    "mixed(int a, float b=2) -> int",
    "kw(*, int k, bool flag=False) -> Tensor",
    "permute(Tensor x, int[] dims, /) -> Tensor",
    "maybe(Tensor? x=None) -> Tensor",
    "pred(Tensor a, Tensor b, Tensor c, /) -> bool",
    "shape(Tensor x, /) -> int[]",
    "opt_list(int[]? sizes=None) -> int[]?",
]


@pytest.mark.parametrize(("spec_file", "text"), SPEC_FUNCS, ids=[name for name, _ in SPEC_FUNCS])
def test_every_spec_signature_round_trips(spec_file: str, text: str) -> None:
    signature = parse_signature(text)
    assert str(signature) == text
    assert parse_signature(str(signature)) == signature


@pytest.mark.parametrize("text", HAND_WRITTEN)
def test_hand_written_signature_round_trips(text: str) -> None:
    signature = parse_signature(text)
    assert str(signature) == text
    assert parse_signature(str(signature)) == signature


def test_spec_funcs_were_found() -> None:
    assert len(SPEC_FUNCS) >= 40  # the catalog; guards against a glob that silently finds nothing


def test_parsed_structure_of_a_reduction_signature() -> None:
    sig = parse_signature("sum(Tensor x, /, *, int[]? axis=None, bool keepdims=False) -> Tensor")
    assert sig.name == "sum"
    assert [(a.name, str(a.type), a.kind) for a in sig.arguments] == [
        ("x", "Tensor", "positional"),
        ("axis", "int[]?", "keyword"),
        ("keepdims", "bool", "keyword"),
    ]
    axis, keepdims = sig.arguments[1:]
    assert axis.type == Type(BaseType.int, is_list=True, optional=True)
    assert axis.default_value is None
    assert keepdims.default_value is False
    assert [a.name for a in sig.tensor_arguments] == ["x"]
    assert sig.returns == Type(BaseType.Tensor)


def test_argument_kinds_and_default_values() -> None:
    sig = parse_signature("scale(Tensor x, /, float factor=1.5, *, int axis=-1, bool inplace=True) -> Tensor")
    kinds = {a.name: a.kind for a in sig.arguments}
    assert kinds == {"x": "positional", "factor": "either", "axis": "keyword", "inplace": "keyword"}
    values = {a.name: a.default_value for a in sig.arguments if a.default is not None}
    assert values == {"factor": 1.5, "axis": -1, "inplace": True}
    assert type(values["axis"]) is int and type(values["factor"]) is float
    with pytest.raises(SignatureError, match="'x' has no default"):
        _ = sig.arguments[0].default_value


def test_int_default_for_float_argument_stays_as_written() -> None:
    (arg,) = parse_signature("f(float b=2) -> Tensor").arguments
    assert arg.default == "2"
    assert arg.default_value == 2


def test_tensor_arguments_in_order() -> None:
    sig = parse_signature("where(Tensor condition, Tensor x1, Tensor x2, /) -> Tensor")
    assert [a.name for a in sig.tensor_arguments] == ["condition", "x1", "x2"]
    assert all(a.kind == "positional" for a in sig.arguments)


def test_signature_error_is_a_value_error() -> None:
    assert issubclass(SignatureError, ValueError)


MALFORMED = [
    # unknown types
    ("f(Tensr x, /) -> Tensor", "unknown type 'Tensr'"),
    ("f(Tensor x, /) -> Tensors", "unknown type 'Tensors'"),
    ("f(double x) -> Tensor", "unknown type 'double'"),
    ("f(float[] x) -> Tensor", "only int[] is supported"),
    ("f(Tensor[] xs, /) -> Tensor", "only int[] is supported"),
    ("f(int?[] x) -> Tensor", "unknown type 'int?[]'"),
    # the arrow and the overall shape
    ("f(Tensor x, /) Tensor", "-> Type"),
    ("f(Tensor x, /)", "-> Type"),
    ("f(Tensor x, /) => Tensor", "-> Type"),
    ("f Tensor x -> Tensor", "-> Type"),
    ("1f(Tensor x, /) -> Tensor", "-> Type"),
    # defaults that do not fit their argument
    ("f(int n=1.5) -> Tensor", "default '1.5' does not fit argument 'int n'"),
    ("f(int n=None) -> Tensor", "default 'None' does not fit argument 'int n'"),
    ("f(bool b=1) -> Tensor", "default '1' does not fit argument 'bool b'"),
    ("f(int b=True) -> Tensor", "default 'True' does not fit argument 'int b'"),
    ("f(float x=abc) -> Tensor", "default 'abc' does not fit argument 'float x'"),
    ("f(int[] a=1) -> Tensor", "default '1' does not fit argument 'int[] a'"),
    ("f(Tensor x=0) -> Tensor", "default '0' does not fit argument 'Tensor x'"),
    ("f(bool b=true) -> Tensor", "default 'true' does not fit"),
    # duplicates
    ("f(Tensor x, Tensor x, /) -> Tensor", "duplicate argument name 'x'"),
    ("f(Tensor x, /, *, int x=0) -> Tensor", "duplicate argument name 'x'"),
    # spacing and layout that do not print back the same
    ("f(Tensor x,Tensor y, /) -> Tensor", "canonical form: write it as 'f(Tensor x, Tensor y, /) -> Tensor'"),
    ("f( Tensor x, /) -> Tensor", "canonical form: write it as 'f(Tensor x, /) -> Tensor'"),
    ("f(Tensor x, / ) -> Tensor", "canonical form: write it as 'f(Tensor x, /) -> Tensor'"),
    ("f(Tensor x, /, *) -> Tensor", "canonical form: write it as 'f(Tensor x, /) -> Tensor'"),
    ("f(Tensor x, /)->Tensor", "-> Type"),
    ("f(Tensor  x, /) -> Tensor", "expected 'Type name'"),
    ("f(int n = 1) -> Tensor", "expected 'Type name'"),
    ("f(Tensor x, /, ) -> Tensor", "expected 'Type name'"),
    ("f(Tensor 1x, /) -> Tensor", "expected 'Type name'"),
    ("f(x, /) -> Tensor", "expected 'Type name'"),
    # '/' and '*' in the wrong place
    ("f(/, Tensor x) -> Tensor", "'/' must follow the positional arguments"),
    ("f(Tensor x, /, /) -> Tensor", "'/' must follow the positional arguments"),
    ("f(Tensor x, *, int k, /) -> Tensor", "'/' must follow the positional arguments"),
    ("f(Tensor x, /, *, int a, *, int b) -> Tensor", "'*' appears twice"),
    # ordering of defaults
    ("f(int a=1, int b) -> Tensor", "argument 'b' without a default follows one with a default"),
]


@pytest.mark.parametrize(("text", "message"), MALFORMED, ids=[t for t, _ in MALFORMED])
def test_malformed_signature_is_rejected_with_a_useful_message(text: str, message: str) -> None:
    with pytest.raises(SignatureError) as info:
        parse_signature(text)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_keyword_arguments_may_follow_defaults_without_their_own() -> None:
    # after '*' arguments are passed by name, so a required one may follow a defaulted one
    sig = parse_signature("f(int a=1, *, int b) -> Tensor")
    assert [(a.name, a.kind, a.default) for a in sig.arguments] == [("a", "either", "1"), ("b", "keyword", None)]


def test_type_parse_and_print() -> None:
    for text in ("Tensor", "int", "float", "bool", "int[]", "int?", "int[]?", "Tensor?", "bool?", "float?"):
        assert str(Type.parse(text)) == text
    assert Type.parse("int[]?") == Type(BaseType.int, is_list=True, optional=True)
