"""The signature language: parse/print round trips, structure, and one clear error per mistake."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tensorsmith_forge.catalog.signature import (
    BaseType,
    ReturnField,
    ReturnTuple,
    SignatureError,
    Type,
    parse_signature,
)

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

# Array API 2024.12 signatures, one or more per new form
ARRAY_API = [
    "concat(Tensor[] arrays, /, *, int? axis=0) -> Tensor",
    "stack(Tensor[] arrays, /, *, int axis=0) -> Tensor",
    "broadcast_arrays(Tensor[] arrays) -> Tensor[]",
    "take(Tensor x, Tensor(integer) indices, /, *, int? axis=None) -> Tensor",
    "getitem(Tensor x, Tensor(integer|bool) key, /) -> Tensor",
    "unique_all(Tensor x, /) -> (Tensor values, Tensor indices, Tensor inverse_indices, Tensor counts)",
    "unique_inverse(Tensor x, /) -> (Tensor values, Tensor inverse_indices)",
    "frexp(Tensor x, /) -> (Tensor, Tensor)",
    "sort(Tensor x, /, *, int axis=-1, bool descending=False, bool stable=True) -> Tensor",
    "searchsorted(Tensor x1, Tensor x2, /, *, str{left|right} side='left', Tensor? sorter=None) -> Tensor",
    "cumulative_sum(Tensor x, /, *, int? axis=None, ScalarType? dtype=None, bool include_initial=False) -> Tensor",
    "full(int[] shape, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
    "clip(Tensor x, /, Scalar? min=None, Scalar? max=None) -> Tensor",
    "linspace(Scalar start, Scalar stop, int num, /, *, ScalarType? dtype=None, Device? device=None, bool endpoint=True) -> Tensor",
    "unstack(Tensor x, /, *, int axis=0) -> Tensor[]",
    "unstack(Tensor x, /, *, int axis=0) -> (Tensor, ...)",
    "meshgrid(Tensor[] arrays, *, str{xy|ij} indexing='xy') -> Tensor[]",
    "meshgrid(Tensor *arrays, str{xy|ij} indexing='xy') -> Tensor[]",
    "broadcast_arrays(Tensor *arrays) -> Tensor[]",
    "astype(Tensor x, ScalarType dtype, /, *, bool copy=True, Device? device=None) -> Tensor",
    "isdtype(ScalarType dtype, str{bool|signed_integer|integral|numeric} kind, /) -> bool",
    "result_type(Tensor[] arrays, /) -> ScalarType",
    # optional forms of every new type, and the defaults each type takes
    "opt(Tensor[]? xs=None, float[]? w=None, Tensor(integer)? i=None, Tensor(integer)[]? js=None) -> Tensor",
    "opt_enum(Tensor x, /, *, str{reduced|complete}? mode=None) -> Tensor",
    "scalars(float[] e, Scalar a=1, Scalar b=-2.5, Scalar c=True, Scalar? d=None) -> Tensor",
    "plain_float_list(float[] weights, /) -> float[]",
    "mixed_returns(Tensor x, /) -> (Tensor[], int[]?, bool)",
]


@pytest.mark.parametrize(("spec_file", "text"), SPEC_FUNCS, ids=[name for name, _ in SPEC_FUNCS])
def test_every_spec_signature_round_trips(spec_file: str, text: str) -> None:
    signature = parse_signature(text)
    assert str(signature) == text
    assert parse_signature(str(signature)) == signature


@pytest.mark.parametrize("text", HAND_WRITTEN + ARRAY_API)
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


def test_variadic_argument_and_open_tuple_return() -> None:
    sig = parse_signature("meshgrid(Tensor *arrays, str{xy|ij} indexing='xy') -> Tensor[]")
    assert [(a.name, a.kind) for a in sig.arguments] == [("arrays", "variadic"), ("indexing", "keyword")]
    assert sig.variadic is sig.arguments[0] and sig.tensor_arguments == ()
    assert parse_signature("f(Tensor x) -> Tensor").variadic is None
    returns = parse_signature("unstack(Tensor x, /, *, int axis=0) -> (Tensor, ...)").returns
    assert returns.open and [str(f) for f in returns.fields] == ["Tensor"]


@pytest.mark.parametrize(("text", "message"), [
    ("f(Tensor x, Tensor *a) -> Tensor", "the variadic argument 'Tensor \\*a' must come first"),
    ("f(*, Tensor *a) -> Tensor", "must come first"),
    ("f(Tensor *a, Tensor *b) -> Tensor", "must come first"),
    ("f(Tensor *a, *, int k=0) -> Tensor", "no '\\*' after a variadic argument"),
    ("f(Tensor *a, /) -> Tensor", "no '/' after a variadic argument"),
    ("f(int *a) -> Tensor", "a variadic argument is 'Tensor \\*name'"),
    ("f(Tensor *a=None) -> Tensor", "with no default"),
    ("f(Tensor x) -> (Tensor, ..., Tensor)", "unknown type '...'"),
])  # fmt: skip
def test_malformed_variadic_forms(text: str, message: str) -> None:
    with pytest.raises(SignatureError, match=message):
        parse_signature(text)


def test_signature_error_is_a_value_error() -> None:
    assert issubclass(SignatureError, ValueError)


MALFORMED = [
    # unknown types
    ("f(Tensr x, /) -> Tensor", "unknown type 'Tensr'"),
    ("f(Tensor x, /) -> Tensors", "unknown type 'Tensors'"),
    ("f(double x) -> Tensor", "unknown type 'double'"),
    ("f(bool[] x) -> Tensor", "list type 'bool[]': only Tensor[], int[] and float[] are supported"),
    ("f(Scalar[] x) -> Tensor", "list type 'Scalar[]': only Tensor[], int[] and float[] are supported"),
    ("f(str{a|b}[] x) -> Tensor", "list type 'str{a|b}[]'"),
    ("f(int?[] x) -> Tensor", "unknown type 'int?[]'"),
    ("f(Tensor[][] x) -> Tensor", "unknown type 'Tensor[][]'"),
    ("f(Dtype d) -> Tensor", "unknown type 'Dtype'"),
    ("f(scalar s) -> Tensor", "unknown type 'scalar'"),
    # string enums
    ("f(str mode) -> Tensor", "type 'str': a string enum lists its values, as in str{left|right}"),
    ("f(str{} mode) -> Tensor", "type 'str{}': enum value '' is not an identifier"),
    ("f(str{left|} mode) -> Tensor", "type 'str{left|}': enum value '' is not an identifier"),
    ("f(str{a-b|c} mode) -> Tensor", "enum value 'a-b' is not an identifier"),
    ("f(str{left|left} side) -> Tensor", "type 'str{left|left}': enum value 'left' appears twice"),
    ("f(int{a|b} n) -> Tensor", "type 'int{a|b}': only str takes enum values"),
    ("f(str{left|right} side='center') -> Tensor",
     "default \"'center'\" does not fit argument 'str{left|right} side': write one of 'left', 'right'"),
    ('f(str{left|right} side="left") -> Tensor', "write one of 'left', 'right'"),
    ("f(str{left|right} side=left) -> Tensor", "write one of 'left', 'right'"),
    ("f(str{left|right} side=None) -> Tensor", "default 'None' does not fit argument 'str{left|right} side'"),
    ("f(str{left|right}? side=0) -> Tensor", "default '0' does not fit argument 'str{left|right}? side'"),
    ("f(str{left|right} side='left'", "-> Type"),
    # dtype constraints
    ("f(int(integer) n) -> Tensor", "type 'int(integer)': only Tensor takes a dtype constraint"),
    ("f(ScalarType(float) d) -> Tensor", "only Tensor takes a dtype constraint"),
    ("f(Tensor() x, /) -> Tensor", "type 'Tensor()': dtype class '' is not an identifier"),
    ("f(Tensor(integer|) x, /) -> Tensor", "dtype class '' is not an identifier"),
    ("f(Tensor(integer|integer) x, /) -> Tensor", "dtype class 'integer' appears twice"),
    ("f(Tensor(int64) x, /) -> Tensor(integer)", "return type 'Tensor(integer)': a dtype constraint belongs on an argument"),
    ("f(Tensor?(integer) x=None) -> Tensor", "unknown type 'Tensor?(integer)'"),
    ("f(Tensor[](integer) xs) -> Tensor", "unknown type 'Tensor[](integer)'"),
    ("f(Tensor(integer bool) x, /) -> Tensor", "expected 'Type name'"),
    # defaults of the new types
    ("f(ScalarType dtype=None) -> Tensor", "default 'None' does not fit argument 'ScalarType dtype'"),
    ("f(ScalarType? dtype=0) -> Tensor", "default '0' does not fit argument 'ScalarType? dtype'"),
    ("f(ScalarType? dtype='float32') -> Tensor", "default \"'float32'\" does not fit argument 'ScalarType? dtype'"),
    ("f(Device? device='cpu') -> Tensor", "default \"'cpu'\" does not fit argument 'Device? device'"),
    ("f(Scalar fill_value=None) -> Tensor", "default 'None' does not fit argument 'Scalar fill_value'"),
    ("f(Scalar v=abc) -> Tensor", "default 'abc' does not fit argument 'Scalar v'"),
    ("f(Scalar v='a') -> Tensor", "default \"'a'\" does not fit argument 'Scalar v'"),
    ("f(Tensor[] xs=0) -> Tensor", "default '0' does not fit argument 'Tensor[] xs'"),
    ("f(float[] w=1.5) -> Tensor", "default '1.5' does not fit argument 'float[] w'"),
    ("f(float[] w=1) -> Tensor", "default '1' does not fit argument 'float[] w'"),
    ("f(Tensor(integer) i=None) -> Tensor", "default 'None' does not fit argument 'Tensor(integer) i'"),
    ("f(int n='a') -> Tensor", "default \"'a'\" does not fit argument 'int n'"),
    # returns
    ("f(Tensor x, /) -> (Tensor)", "a tuple return has two or more entries, got '(Tensor)'"),
    ("f(Tensor x, /) -> (Tensor values)", "a tuple return has two or more entries"),
    ("f(Tensor x, /) -> ()", "a tuple return has two or more entries, got '()'"),
    ("f(Tensor x, /) -> (Tensor values, Tensor)", "all named or all unnamed, got '(Tensor values, Tensor)'"),
    ("f(Tensor x, /) -> (Tensor, Tensor indices)", "all named or all unnamed"),
    ("f(Tensor x, /) -> (Tensor values, Tensor values)", "duplicate return field name 'values'"),
    ("f(Tensor x, /) -> (Tensor a, Tensr b)", "unknown type 'Tensr'"),
    ("f(Tensor x, /) -> (Tensor a b, Tensor c)", "expected 'Type' or 'Type name' in a tuple return, got 'Tensor a b'"),
    ("f(Tensor x, /) -> (Tensor 1a, Tensor b)", "expected 'Type' or 'Type name' in a tuple return, got 'Tensor 1a'"),
    ("f(Tensor x, /) -> (Tensor a, Tensor(integer) b)", "return type 'Tensor(integer)': a dtype constraint belongs"),
    ("f(Tensor x, /) -> (Tensor, Tensor", "a tuple return is '(Type, Type, ...)'"),
    ("f(Tensor x, /) -> (Tensor,Tensor)", "canonical form: write it as 'f(Tensor x, /) -> (Tensor, Tensor)'"),
    ("f(Tensor x, /) -> ( Tensor a, Tensor b)", "canonical form: write it as 'f(Tensor x, /) -> (Tensor a, Tensor b)'"),
    ("f(Tensor x, /) -> Tensor values", "unknown type 'Tensor values'"),
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
    for text in ("Tensor", "int", "float", "bool", "int[]", "int?", "int[]?", "Tensor?", "bool?", "float?",
                 "Tensor[]", "Tensor[]?", "float[]", "float[]?", "Scalar", "Scalar?", "ScalarType", "ScalarType?",
                 "Device", "Device?", "str{a}", "str{left|right}", "str{xy|ij}?", "Tensor(integer)",
                 "Tensor(integer|bool)?", "Tensor(real_floating)[]", "Tensor(numeric)[]?"):  # fmt: skip
        assert str(Type.parse(text)) == text
    assert Type.parse("int[]?") == Type(BaseType.int, is_list=True, optional=True)
    assert Type.parse("Tensor(integer|bool)[]?") == Type(
        BaseType.Tensor, is_list=True, optional=True, dtype_constraint=("integer", "bool")
    )
    assert Type.parse("str{xy|ij}?") == Type(BaseType.str, optional=True, enum_values=("xy", "ij"))


def test_tensor_and_tensor_list_predicates() -> None:
    assert Type.parse("Tensor").is_tensor and Type.parse("Tensor(integer)?").is_tensor
    assert not Type.parse("Tensor").is_tensor_list
    assert Type.parse("Tensor[]").is_tensor_list and Type.parse("Tensor(integer)[]?").is_tensor_list
    assert not Type.parse("Tensor[]").is_tensor
    assert Type.parse("Tensor[]").base is BaseType.Tensor  # lists keep their element's base, as int[] does
    for text in ("int", "int[]", "Scalar", "ScalarType", "Device", "str{a|b}"):
        assert not Type.parse(text).is_tensor and not Type.parse(text).is_tensor_list


def test_tensor_list_arguments_are_separate_from_tensor_arguments() -> None:
    sig = parse_signature("concat(Tensor[] arrays, /, *, int? axis=0) -> Tensor")
    (arrays, axis) = sig.arguments
    assert arrays.type == Type(BaseType.Tensor, is_list=True)
    assert (arrays.kind, axis.kind) == ("positional", "keyword")
    assert sig.tensor_arguments == ()
    assert sig.tensor_list_arguments == (arrays,)
    assert sig.promoted_arguments == (arrays,)
    assert axis.default_value == 0 and type(axis.default_value) is int
    assert str(sig.returns) == "Tensor" and not sig.returns_tuple


def test_dtype_constraint_marks_an_index_tensor_outside_promotion() -> None:
    sig = parse_signature("take(Tensor x, Tensor(integer) indices, /, *, int? axis=None) -> Tensor")
    x, indices, axis = sig.arguments
    assert x.type.dtype_constraint == ()
    assert indices.type.dtype_constraint == ("integer",)
    assert indices.type.base is BaseType.Tensor and indices.type.is_tensor
    assert [a.name for a in sig.tensor_arguments] == ["x", "indices"]
    assert [a.name for a in sig.promoted_arguments] == ["x"]
    assert axis.default_value is None

    (key,) = parse_signature("f(Tensor(integer|bool) key, /) -> Tensor").arguments
    assert key.type.dtype_constraint == ("integer", "bool")  # in the order written
    (opt,) = parse_signature("f(Tensor(integer)? i=None) -> Tensor").arguments
    assert opt.type.optional and opt.type.dtype_constraint == ("integer",) and opt.default_value is None
    sig = parse_signature("f(Tensor(bool)[] masks, Tensor[] arrays, /) -> Tensor")
    assert [a.name for a in sig.tensor_list_arguments] == ["masks", "arrays"]
    assert [a.name for a in sig.promoted_arguments] == ["arrays"]


def test_named_tuple_return() -> None:
    sig = parse_signature("unique_all(Tensor x, /) -> (Tensor values, Tensor indices, Tensor inverse_indices, Tensor counts)")
    assert sig.returns_tuple
    assert isinstance(sig.returns, ReturnTuple)
    assert sig.returns.fields[0] == ReturnField(Type(BaseType.Tensor), "values")
    assert sig.returns.names == ("values", "indices", "inverse_indices", "counts")
    assert sig.return_names == ("values", "indices", "inverse_indices", "counts")
    assert sig.return_types == (Type(BaseType.Tensor),) * 4
    assert str(sig.returns) == "(Tensor values, Tensor indices, Tensor inverse_indices, Tensor counts)"


def test_unnamed_tuple_and_single_returns() -> None:
    sig = parse_signature("frexp(Tensor x, /) -> (Tensor, Tensor[]?)")
    assert sig.returns_tuple and sig.return_names == ()
    assert sig.returns == ReturnTuple((ReturnField(Type(BaseType.Tensor)), ReturnField(Type(BaseType.Tensor, True, True))))
    assert sig.return_types == (Type(BaseType.Tensor), Type(BaseType.Tensor, is_list=True, optional=True))

    for text, returned in (("Tensor[]", Type(BaseType.Tensor, is_list=True)), ("bool", Type(BaseType.bool)),
                           ("int", Type(BaseType.int)), ("ScalarType", Type(BaseType.ScalarType))):  # fmt: skip
        sig = parse_signature(f"f(Tensor x, /) -> {returned}")
        assert str(sig.returns) == text
        assert sig.returns == returned and sig.return_types == (returned,)
        assert not sig.returns_tuple and sig.return_names == ()


def test_string_enum_argument() -> None:
    sig = parse_signature("searchsorted(Tensor x1, Tensor x2, /, *, str{left|right} side='left', Tensor? sorter=None) -> Tensor")
    side, sorter = sig.arguments[2:]
    assert side.type.base is BaseType.str
    assert side.type.enum_values == ("left", "right")
    assert side.default == "'left'"  # as written
    assert side.default_value == "left"
    assert side.kind == "keyword"
    assert sorter.type == Type(BaseType.Tensor, optional=True) and sorter.default_value is None
    assert [a.name for a in sig.tensor_arguments] == ["x1", "x2", "sorter"]

    sig = parse_signature("meshgrid(Tensor[] arrays, *, str{xy|ij} indexing='ij') -> Tensor[]")
    assert sig.arguments[1].default_value == "ij"
    assert sig.arguments[0].kind == "either"
    (mode,) = parse_signature("f(str{reduced|complete}? mode=None) -> Tensor").arguments
    assert mode.type.optional and mode.type.enum_values == ("reduced", "complete") and mode.default_value is None
    (mode,) = parse_signature("f(str{reduced|complete} mode) -> Tensor").arguments
    assert mode.default is None


def test_scalar_scalar_type_and_device_arguments() -> None:
    sig = parse_signature("full(int[] shape, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> Tensor")
    assert [(a.name, a.type.base, a.kind) for a in sig.arguments] == [
        ("shape", BaseType.int, "either"),
        ("fill_value", BaseType.Scalar, "either"),
        ("dtype", BaseType.ScalarType, "keyword"),
        ("device", BaseType.Device, "keyword"),
    ]
    assert sig.arguments[2].type.optional and sig.arguments[2].default_value is None
    assert sig.tensor_arguments == () and sig.tensor_list_arguments == () and sig.promoted_arguments == ()

    sig = parse_signature("clip(Tensor x, /, Scalar? min=None, Scalar? max=None) -> Tensor")
    assert [(a.name, str(a.type), a.kind, a.default_value) for a in sig.arguments[1:]] == [
        ("min", "Scalar?", "either", None),
        ("max", "Scalar?", "either", None),
    ]
    sig = parse_signature("f(Scalar a=1, Scalar b=-2.5, Scalar c=True, Scalar d=False) -> Tensor")
    values = [a.default_value for a in sig.arguments]
    assert values == [1, -2.5, True, False]
    assert [type(v) for v in values] == [int, float, bool, bool]

    (dtype,) = parse_signature("f(ScalarType dtype, /) -> Tensor").arguments
    assert dtype.type == Type(BaseType.ScalarType) and dtype.default is None


def test_array_api_keyword_options() -> None:
    sig = parse_signature(ARRAY_API[10])
    assert sig.name == "cumulative_sum"
    assert {a.name: (a.kind, a.default_value) for a in sig.arguments[1:]} == {
        "axis": ("keyword", None),
        "dtype": ("keyword", None),
        "include_initial": ("keyword", False),
    }
    sig = parse_signature("sort(Tensor x, /, *, int axis=-1, bool descending=False, bool stable=True) -> Tensor")
    assert [a.default_value for a in sig.arguments[1:]] == [-1, False, True]
    sig = parse_signature(ARRAY_API[13])
    assert sig.name == "linspace"
    assert [a.kind for a in sig.arguments] == ["positional"] * 3 + ["keyword"] * 3
    assert sig.arguments[-1].default_value is True


def test_float_lists() -> None:
    (weights,) = parse_signature("f(float[]? weights=None) -> float[]").arguments
    assert weights.type == Type(BaseType.float, is_list=True, optional=True)
    assert parse_signature("f(float[]? weights=None) -> float[]").returns == Type(BaseType.float, is_list=True)


def test_enum_and_constraint_text_survives_the_model_argument_split() -> None:
    # the spec model splits the printed arguments on ", "; the new forms contain neither ',' nor ' '
    sig = parse_signature("f(Tensor x, Tensor(integer|bool) k, /, *, str{left|right} side='left') -> Tensor")
    inner = str(sig).split("(", 1)[1].rsplit(") ->", 1)[0]
    assert inner.split(", ") == ["Tensor x", "Tensor(integer|bool) k", "/", "*", "str{left|right} side='left'"]
