"""api.py: dtype classes, promotion, kernel dtypes and types, checked against numpy itself.

The runtime picks a kernel dtype from the input dtypes by the rule of the op's Promotion
(runtime/include/tensorsmith/dispatch.h); `runtime_kernel_dtype` below restates that rule. For
every catalog op and every combination of accepted input dtypes we check that a kernel is
registered under the dtype the runtime will ask for, that every registered kernel can be reached,
and that the kernel's output C++ type is the dtype numpy's own reference returns.
"""

from __future__ import annotations

import functools

import itertools
import warnings
from pathlib import Path

import numpy as np
import pytest

from tensorsmith_forge.catalog.dtypes import COMPLEX, DTYPE_CLASSES, DTYPES, FLOATING, Promotion
from tensorsmith_forge.catalog.model import OpSpec, load_catalog, parse_spec
from tensorsmith_forge.catalog.signature import parse_signature
from tensorsmith_forge.generator import api

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(ROOT)
KIND = {"bool": "b", "signed": "i", "unsigned": "u", "floating": "f", "complex": "c"}


def kind(dtype: str) -> str:
    """numpy's kind letter; ml_dtypes' bfloat16 is a floating type numpy files under 'V'."""
    return "f" if dtype == "bfloat16" else np.dtype(dtype).kind


def stand_in(dtype: str) -> str:
    """numpy has no bfloat16 loops of its own (ml_dtypes' promote differently: bfloat16 matmul gives float32);
    the runtime follows float16's rules for it, so references run on float16 in its place."""
    return "float16" if dtype == "bfloat16" else dtype


def reference_dtype(result: np.dtype, inputs) -> str:
    """The result dtype of a reference run on float16 stand-ins for bfloat16, mapped back: bfloat16 where it
    was an input and the stand-in result is float16, but float32 where float16 was an input too (ml_dtypes
    0.7: bfloat16 and float16 meet at float32)."""
    if "bfloat16" in inputs and result.name == "float16":
        return "float32" if "float16" in inputs else "bfloat16"
    return result.name


def op(name: str) -> OpSpec:
    return CATALOG.op(name)


def spec_with(dtypes: str, promotion: str = "same", func: str = "t(Tensor x, /) -> Tensor") -> OpSpec:
    first = func.split("Tensor ")[1].split(",")[0]
    text = f"func: {func}\nfamily: pointwise\npromotion: {promotion}\ndtypes: {dtypes}\nexpr: {first}\nreference: {first}\ndoc: d\n"
    spec = parse_spec(text, "specs/t.yaml")
    assert isinstance(spec, OpSpec)
    return spec


# ---- dtype classes ----------------------------------------------------------------------------------


def test_dtype_classes_match_numpy_kinds() -> None:
    for name, letter in KIND.items():
        assert DTYPE_CLASSES[name], name
        assert all(kind(d) == letter for d in DTYPE_CLASSES[name]), name
    every_kind = {kind(d) for d in DTYPES}
    assert every_kind == set(KIND.values())
    # each class holds every dtype of its kind
    for name, letter in KIND.items():
        assert set(DTYPE_CLASSES[name]) == {d for d in DTYPES if kind(d) == letter}


def test_dtype_classes_compose() -> None:
    c = {k: set(v) for k, v in DTYPE_CLASSES.items()}
    assert c["all"] == set(DTYPES) and len(DTYPES) == len(set(DTYPES)) == 15
    assert c["integer"] == c["signed"] | c["unsigned"] and not c["signed"] & c["unsigned"]
    assert c["real"] == c["integer"] | c["floating"] and not c["real"] & c["complex"]
    assert c["numeric"] == c["real"] | c["complex"]
    assert c["all"] == c["numeric"] | c["bool"] and "bool" not in c["numeric"]


def test_spec_dtypes_expand_classes_dedupe_and_keep_canonical_order() -> None:
    spec = spec_with("[float64, floating, uint8, bool, unsigned]")
    assert spec.dtypes == ("bool", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "float16", "bfloat16")
    assert spec_with("[all]").dtypes == DTYPES
    assert spec_with("signed").dtypes == ("int8", "int16", "int32", "int64")  # a bare string is a one-item list


# ---- promotion ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("a", DTYPES)
def test_promote_matches_numpy_arithmetic_for_all_pairs(a: str) -> None:
    for b in DTYPES:
        try:
            np.result_type(np.dtype(a), np.dtype(b))
        except TypeError:  # ml_dtypes: bfloat16 has no common dtype with float16 or wider integers
            with pytest.raises(TypeError):
                api.promote(a, b)
            assert not api.compatible(a, b) and not api.compatible(b, a)
            continue
        computed = np.add(np.ones(2, dtype=a), np.ones(2, dtype=b)).dtype.name
        assert api.promote(a, b) == computed, (a, b)
        assert api.promote(a, b) == api.promote(b, a)
        assert api.promote(a, api.promote(a, b)) == api.promote(a, b)  # promoting again changes nothing
    assert api.promote(a, a) == a


@pytest.mark.parametrize(
    ("a", "b", "result"),
    [
        ("bool", "bool", "bool"),
        ("bool", "int8", "int8"),
        ("bool", "float32", "float32"),
        ("int8", "uint8", "int16"),
        ("int32", "uint32", "int64"),
        ("int64", "uint64", "float64"),  # no integer type holds both
        ("uint8", "uint64", "uint64"),
        ("int16", "float32", "float32"),
        ("int32", "float32", "float64"),
        ("uint16", "float32", "float32"),
        ("float32", "float64", "float64"),
        ("int8", "float16", "float16"),
        ("int16", "float16", "float32"),
        ("uint8", "bfloat16", "bfloat16"),
        ("bool", "bfloat16", "bfloat16"),
        ("bfloat16", "float32", "float32"),
        ("float16", "float64", "float64"),
    ],
)
def test_promote_known_cases(a: str, b: str, result: str) -> None:
    assert api.promote(a, b) == result


def test_float_result_is_what_numpy_computes_float_functions_in() -> None:
    for d in DTYPES:
        assert api.float_result(d) == np.exp(np.ones(2, dtype=d)).dtype.name, d  # bfloat16 too (ml_dtypes' loop)
    assert api.float_result("int8") == "float16" and api.float_result("bool") == "float16"
    assert api.float_result("int16") == "float32" and api.float_result("int32") == "float64"


def test_sum_result() -> None:
    expected = {"bool": "int64", "int8": "int64", "int32": "int64", "uint8": "uint64", "uint64": "uint64",
                "float32": "float32", "float64": "float64", "float16": "float16", "bfloat16": "bfloat16"}  # fmt: skip
    for d, result in expected.items():
        assert api.sum_result(d) == result
        assert np.prod(np.ones(3, dtype=d)).dtype.name == result  # prod shares the rule


# ---- kernel dtypes per promotion kind -------------------------------------------------------------------


def test_kernel_dtypes_of_catalog_ops() -> None:
    assert api.kernel_dtypes(op("divide")) == ("float32", "float64", "float16", "bfloat16", "complex64", "complex128")
    assert api.kernel_dtypes(op("exp")) == ("float32", "float64", "float16", "bfloat16", "complex64", "complex128")
    assert api.kernel_dtypes(op("softmax")) == ("float32", "float64", "float16", "bfloat16")
    assert api.kernel_dtypes(op("logical_and")) == ("bool",)
    assert api.kernel_dtypes(op("logical_not")) == ("bool",)
    assert "bool" not in api.kernel_dtypes(op("subtract"))
    assert api.kernel_dtypes(op("subtract")) == DTYPE_CLASSES["numeric"]
    assert api.kernel_dtypes(op("add")) == DTYPES
    assert api.kernel_dtypes(op("equal")) == DTYPES  # compares in the promoted dtype
    assert api.kernel_dtypes(op("sum")) == DTYPES
    assert api.kernel_dtypes(op("negative")) == DTYPE_CLASSES["numeric"]


def test_kernel_dtypes_of_synthetic_specs() -> None:
    # float: bool, int8 and uint8 compute in float16, as numpy
    assert api.kernel_dtypes(spec_with("[int8, uint8, bool]", "float")) == ("float16",)
    assert api.kernel_dtypes(spec_with("[bfloat16]", "float")) == ("bfloat16",)
    assert api.kernel_dtypes(spec_with("[int16]", "float")) == ("float32",)
    assert api.kernel_dtypes(spec_with("[uint32]", "float")) == ("float64",)
    # binary: every pairwise promotion that is a declared dtype (the dtypes are the op's loops, as numpy's
    # ufunc.types): int64 with uint64 promotes to float64, which bitwise_and has no loop for
    two = "t(Tensor x1, Tensor x2, /) -> Tensor"
    assert api.kernel_dtypes(spec_with("[int64, uint64]", "binary", two)) == ("int64", "uint64")
    assert api.kernel_dtypes(spec_with("[int64, uint64, float64]", "binary", two)) == ("int64", "uint64", "float64")
    assert api.kernel_dtypes(spec_with("[int8, uint8]", "binary", two)) == ("int8", "uint8")
    assert api.kernel_dtypes(spec_with("[int8, uint8, int16]", "binary", two)) == ("int8", "int16", "uint8")
    # pairs without a common dtype (bfloat16 with float16) need no kernel: the runtime raises TypeError
    assert api.kernel_dtypes(spec_with("[int16, float16, bfloat16, float32]", "binary", two)) == (
        "int16", "float32", "float16", "bfloat16")
    # float over two inputs: the float numpy computes their promotion in (atan2(int8, int8) is float16)
    assert api.kernel_dtypes(spec_with("[int8, int32]", "float", two)) == ("float64", "float16")
    # binary_float: integers divide in float64, float32 stays float32
    assert api.kernel_dtypes(spec_with("[int8, float32]", "binary_float", two)) == ("float32", "float64")
    assert api.kernel_dtypes(spec_with("[int8]", "binary_float", two)) == ("float64",)
    assert api.kernel_dtypes(spec_with("[float32]", "binary_float", two)) == ("float32",)
    assert api.kernel_dtypes(spec_with("[numeric]", "logical", two)) == ("bool",)


def runtime_kernel_dtype(spec: OpSpec, inputs: tuple[str, ...]) -> str:
    """The kernel dtype the runtime asks for (the rules in dispatch.h's enum Promotion)."""
    p = spec.promotion
    if p in (Promotion.same, Promotion.real_valued, Promotion.reduce_same, Promotion.reduce_sum, Promotion.reduce_mean,
             Promotion.reduce_index, Promotion.reduce_bool):
        return inputs[0]
    if p is Promotion.float:
        return api.float_result(functools.reduce(api.promote, inputs))
    if p is Promotion.logical:
        return "bool"
    operands = inputs[1:] if p is Promotion.where else inputs
    promoted = operands[0]
    for d in operands[1:]:
        promoted = api.promote(promoted, d)
    if p is Promotion.binary_float and promoted not in FLOATING + COMPLEX:
        return "float64"
    return promoted


ELEMENTWISE = [s.name for s in CATALOG.ops if s.family.name in ("pointwise", "contraction")]
WHOLE_TENSOR = [s.name for s in CATALOG.ops if s.family.name not in ("pointwise", "contraction")]


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_kernels_cover_what_numpy_computes(name: str) -> None:
    spec = op(name)
    params = [a.name for a in spec.signature.arguments]
    reference = spec.reference.compile(params)
    shape = (2, 2)
    choices = [spec.dtypes] * spec.arity
    if spec.promotion is Promotion.where:
        choices[0] = ("bool",)  # the condition is cast to bool before the kernel
    reached = set()
    for inputs in itertools.product(*choices):
        operands = inputs[1:] if spec.promotion is Promotion.where else inputs
        if not all(api.compatible(a, b) for a in operands for b in operands):
            continue  # the runtime raises TypeError, as np.result_type does (tests/runtime/test_half.py)
        if spec.promotion is not Promotion.logical and functools.reduce(api.promote, operands) not in api.common_dtypes(spec):
            continue  # no loop for their promotion (bitwise_and of int8 and uint64 is float64): refused, as numpy's
        kernel = runtime_kernel_dtype(spec, inputs)
        assert kernel in api.kernel_dtypes(spec), (name, inputs, kernel)
        reached.add(kernel)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = np.asarray(reference(*(np.ones(shape, dtype=stand_in(d)) for d in inputs)))
        out_dtype = reference_dtype(out.dtype, inputs)
        assert api.CPP_TYPE[out_dtype] == api.kernel_types(spec, kernel).out, (name, inputs, out_dtype)
    assert reached == set(api.kernel_dtypes(spec)), f"{name}: kernels no input combination reaches"


@pytest.mark.parametrize("name", WHOLE_TENSOR)
def test_reduction_and_normalization_output_types_match_numpy(name: str) -> None:
    spec = op(name)
    params = [a.name for a in spec.signature.arguments]
    reference = spec.reference.compile(params)
    tensors = len(spec.signature.tensor_arguments)  # one, or (g, x) for a standardization's gradient
    options = [a.default_value if a.default is not None else 0.5 for a in spec.signature.arguments[tensors:]]  # update: lr
    reached = set()
    for d in spec.dtypes:
        kernel = runtime_kernel_dtype(spec, (d,) * tensors)
        assert kernel in api.kernel_dtypes(spec), (name, d)
        reached.add(kernel)
        shape = (6,) if spec.family.name == "scan" else (2, 3)  # scans take no axis only on 1-D inputs
        out = np.asarray(reference(*(np.ones(shape, dtype=stand_in(d)) for _ in range(tensors)), *options))
        types = api.kernel_types(spec, kernel)
        assert api.CPP_TYPE[reference_dtype(out.dtype, (d,))] == types.out, (name, d, out.dtype)
    assert reached == set(api.kernel_dtypes(spec))


def test_accumulator_types() -> None:
    assert api.kernel_types(op("sum"), "float32").acc == "double"  # float32 sums accumulate in double
    assert api.kernel_types(op("sum"), "int8").acc == "int64_t"
    assert api.kernel_types(op("mean"), "int32") == api.KernelTypes("int32", "int32_t", "double", "double", "int32_t")
    assert api.kernel_types(op("mean"), "float32").out == "float"
    # softmax rows fold in their own float type (as numpy's and torch's do): exp then vectorises in float
    assert api.kernel_types(op("softmax"), "float32").acc == "float"
    assert api.kernel_types(op("log_softmax"), "float64").acc == "double"
    assert api.kernel_types(op("matmul"), "float32").acc == "double"
    assert api.kernel_types(op("matmul"), "int32").acc == "int32_t"
    assert api.kernel_types(op("argmax"), "uint8").out == "int64_t"
    # float16/bfloat16: stored narrow, computed in float; sums, products and means accumulate in double as float32's
    for half, cpp in (("float16", "ts::float16"), ("bfloat16", "ts::bfloat16")):
        assert api.kernel_types(op("exp"), half) == api.KernelTypes(half, cpp, cpp, cpp, "float")
        assert api.kernel_types(op("less"), half).out == "bool"
        for name in ("max", "softmax", "matmul"):
            assert api.kernel_types(op(name), half) == api.KernelTypes(half, cpp, "float", cpp, "float"), name
        for name in ("sum", "prod", "mean"):
            assert api.kernel_types(op(name), half) == api.KernelTypes(half, cpp, "double", cpp, "float"), name
    assert api.kernel_types(op("add"), "float32").compute == "float"


def test_where_condition_is_bool_and_other_inputs_are_t() -> None:
    where = op("where")
    assert [api.input_cpp_type(where, i) for i in range(3)] == ["bool", "T", "T"]
    assert [api.input_compute_type(where, i) for i in range(3)] == ["bool", "compute_t", "compute_t"]
    assert api.input_cpp_type(op("add"), 0) == "T"


def test_bodies_read_a_bool_input_as_its_byte() -> None:
    # GCC vectorises `c != 0 ? x1 : x2` on a uint8_t, not the same select on a loaded bool.
    where = op("where")
    assert [api.input_load_type(where, i) for i in range(3)] == ["uint8_t", "T", "T"]
    assert api.input_load_type(op("add"), 1) == "T"


# ---- names and bindings -----------------------------------------------------------------------------------


def test_cpp_type_and_enum_tables_cover_every_dtype() -> None:
    assert set(api.CPP_TYPE) == set(DTYPES) == set(api.DTYPE_ENUM)
    assert set(api.PROMOTION_ENUM) == set(Promotion)
    for d in DTYPES:
        if d.startswith(("int", "uint")):
            assert api.CPP_TYPE[d] == f"{d}_t"
    assert api.CPP_TYPE["float16"] == "ts::float16" and api.CPP_TYPE["bfloat16"] == "ts::bfloat16"
    assert len(set(api.DTYPE_ENUM.values())) == len(DTYPES)


def test_binding_defaults_and_stub_types() -> None:
    sig = op("sum").signature  # (Tensor x, /, *, int[]? axis=None, ScalarType? dtype=None, bool keepdims=False)
    x, axis, dtype, keepdims = sig.arguments
    assert api.binding_default(x) is None
    assert api.binding_default(axis) == "pybind11::none()" and api.binding_default(dtype) == "pybind11::none()"
    assert api.binding_default(keepdims) == "false"
    assert api.binding_default(op("softmax").signature.arguments[1]) == "-1"
    assert api.pyi_type(axis) == "int | tuple[int, ...] | None"
    assert api.pyi_type(keepdims) == "builtins.bool"
    # every op converts its tensor arguments with ts.asarray's rules, so array-likes are accepted everywhere
    assert api.pyi_type(x) == "Tensor | ArrayLike"
    assert api.pyi_type(op("add").signature.arguments[0]) == "Tensor | ArrayLike"
    assert api.pyi_type(x, array_like=False) == "Tensor"  # composite ops take tensorsmith Tensors only
    # the whole signature language has a stub type
    wide = parse_signature("f(Tensor(integer)[] xs, Scalar? s=None, ScalarType? dtype=None, Device? device=None, "
                           "str{left|right} side='left', float[]? f=None) -> Tensor").arguments  # fmt: skip
    assert [api.pyi_type(a) for a in wide] == [
        "Sequence[Tensor | ArrayLike]", "builtins.bool | int | float | complex | None", "DType | Any | None",
        "Device | str | None", "Literal['left', 'right']", "float | tuple[float, ...] | None"]  # fmt: skip
    assert api.binding_default(wide[4]) == 'pybind11::str("left")'


def test_only_pointwise_functions_take_out() -> None:
    takes = {spec.name for spec in CATALOG.ops if api.takes_out(spec)}
    assert {"add", "exp", "where"} <= takes
    assert not takes & {"sum", "mean", "argmax", "softmax", "matmul"}


def test_reflected_operators() -> None:
    from tensorsmith_forge.catalog.model import OPERATORS

    for dunder in OPERATORS:  # __rsub__ is sub's reflection; __rshift__ is no reflection of a "__shift__"
        assert api.is_reflected(dunder) == (dunder.startswith("__r") and f"__{dunder[3:]}" in OPERATORS), dunder
    assert api.is_reflected("__rsub__") and not api.is_reflected("__sub__")
    assert api.is_reflected("__rrshift__") and not api.is_reflected("__rshift__")


def test_generated_names() -> None:
    add = op("add")
    assert api.kernel_path(add, "cpu") == "cpu/add.cpp"
    assert api.kernel_struct(add, "cpu") == "add_cpu_kernel"
    assert api.register_function(add, "cpu") == "register_add_cpu"
    assert api.template_path(op("sum"), "cpu") == "cpu/reduction.cpp.j2"
    assert (ROOT / "templates" / api.body_template_path(op("sum"), "cpu")).is_file()


# ---- promotion as data: the type table the runtime reads -------------------------------------------------


@pytest.mark.parametrize(("name", "common", "kernel", "result"), [
    ("exp", "int8", "float16", "float16"),  # numpy computes float functions of small ints in float16
    ("exp", "int64", "float64", "float64"),
    ("divide", "int32", "float64", "float64"),
    ("divide", "float16", "float16", "float16"),
    ("less", "uint8", "uint8", "bool"),
    ("logical_and", "float32", "bool", "bool"),
    ("sum", "int8", "int8", "int64"),
    ("sum", "uint16", "uint16", "uint64"),
    ("mean", "int32", "int32", "float64"),
    ("argmax", "float32", "float32", "int64"),
    ("softmax", "uint8", "float16", "float16"),
    ("matmul", "bool", "bool", "bool"),
])  # fmt: skip
def test_type_table_rows_follow_numpy(name: str, common: str, kernel: str, result: str) -> None:
    rows = {c: (k, r) for c, k, r in api.type_table(op(name))}
    assert set(rows) == set(op(name).dtypes)  # a row for every dtype the op declares
    assert rows[common] == (kernel, result)


def test_type_table_agrees_with_numpy_on_every_accepted_dtype() -> None:
    spec = op("exp")
    for dtype in spec.dtypes:
        if dtype in ("float16", "bfloat16"):
            continue  # numpy's own float16 loops compute these; the table says what our kernels do
        _, result = next((k, r) for c, k, r in api.type_table(spec) if c == dtype)
        assert result == np.exp(np.ones(2, dtype=dtype)).dtype.name, dtype


def test_promoted_inputs_leave_out_the_condition_of_where() -> None:
    assert api.promoted_inputs(op("where")) == 0b110
    assert api.promoted_inputs(op("add")) == 0b11
    assert api.promoted_inputs(op("sum")) == 0b1
