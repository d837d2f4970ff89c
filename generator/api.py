"""Every name and type mapping from specs to C++ and Python, in one place.

Pure functions of the model: dest.py asks here for kernel names, C++ types,
dtype enumerators, binding argument types and Python stub types, so no other
module spells a generated name.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes  # noqa: F401  (numpy's bfloat16: np.dtype("bfloat16") works once it is imported)
import numpy as np

from tensorsmith_forge.catalog.dtypes import COMPLEX, COMPLEX_PART, DTYPES, FLOATING, HALF, Promotion
from tensorsmith_forge.catalog.model import INPLACE_OPERATORS, REFLECTED_OPERATORS, CompositeSpec, OpSpec
from tensorsmith_forge.catalog.signature import Argument, BaseType, ReturnTuple, Signature

DEVICES = ("cpu", "cuda")  # every op gets a kernel for each; an op missing on one is left out of the runtime
SOURCE_SUFFIX = {"cpu": ".cpp", "cuda": ".cu"}
# The macro a device's kernels are compiled under; None: always built.
DEVICE_GUARD = {"cpu": None, "cuda": "TS_WITH_CUDA"}

CPP_TYPE = {
    "bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float32": "float", "float64": "double", "float16": "ts::float16", "bfloat16": "ts::bfloat16",
    "complex64": "ts::complex64", "complex128": "ts::complex128",
}  # fmt: skip
DTYPE_ENUM = {
    "bool": "ts::DType::Bool", "int8": "ts::DType::Int8", "int16": "ts::DType::Int16",
    "int32": "ts::DType::Int32", "int64": "ts::DType::Int64", "uint8": "ts::DType::UInt8",
    "uint16": "ts::DType::UInt16", "uint32": "ts::DType::UInt32", "uint64": "ts::DType::UInt64",
    "float32": "ts::DType::Float32", "float64": "ts::DType::Float64", "float16": "ts::DType::Float16",
    "bfloat16": "ts::DType::BFloat16", "complex64": "ts::DType::Complex64", "complex128": "ts::DType::Complex128",
}  # fmt: skip
DEVICE_ENUM = {"cpu": "ts::DeviceType::CPU", "cuda": "ts::DeviceType::CUDA"}
PROMOTION_ENUM = {
    Promotion.same: "ts::Promotion::Same",
    Promotion.real_valued: "ts::Promotion::RealValued",
    Promotion.float: "ts::Promotion::Float",
    Promotion.binary: "ts::Promotion::Binary",
    Promotion.binary_float: "ts::Promotion::BinaryFloat",
    Promotion.comparison: "ts::Promotion::Comparison",
    Promotion.logical: "ts::Promotion::Logical",
    Promotion.where: "ts::Promotion::Where",
    Promotion.reduce_same: "ts::Promotion::ReduceSame",
    Promotion.reduce_sum: "ts::Promotion::ReduceSum",
    Promotion.reduce_mean: "ts::Promotion::ReduceMean",
    Promotion.reduce_index: "ts::Promotion::ReduceIndex",
    Promotion.reduce_bool: "ts::Promotion::ReduceBool",
}
def domain_rules(spec: OpSpec) -> list[dict[str, str]]:
    """The spec's domain bounds as the C++ ts::DomainRule initialisers registration passes to OpDef::require."""
    names = [a.name for a in spec.signature.tensor_arguments]
    rules = []
    for bound in spec.domain:
        mask = sum(1 << DTYPES.index(d) for d in bound.dtypes)
        rules.append({"input": str(names.index(bound.argument)), "dtypes": f"0x{mask:x}u",
                      "low": _bound_literal(bound.low, "-"), "high": _bound_literal(bound.high, ""),
                      "message": f'"{bound.error}"'})  # fmt: skip
    return rules


def _bound_literal(value: float | None, sign: str) -> str:
    return f"{sign}std::numeric_limits<double>::infinity()" if value is None else repr(float(value))


# Operator dunder -> whether the tensor is the right operand (reflected).
REFLECTED = frozenset(REFLECTED_OPERATORS)
INPLACE = frozenset(INPLACE_OPERATORS)


# ---- dtypes -------------------------------------------------------------------------------------


def promote(a: str, b: str) -> str:
    """numpy.result_type for two arrays (with ml_dtypes' rules for bfloat16); TypeError where they have no
    common dtype (bfloat16 with float16 or integers wider than 8 bits). The C++ runtime's promote_types
    must agree (tested)."""
    return np.result_type(np.dtype(a), np.dtype(b)).name  # numpy's DTypePromotionError is a TypeError


def float_result(dtype: str) -> str:
    """The float dtype numpy computes float functions of `dtype` in (bool, int8, uint8 -> float16)."""
    return dtype if dtype in FLOATING + COMPLEX else np.result_type(np.dtype(dtype), np.float16).name


def real_part(dtype: str) -> str:
    """The real dtype of a complex dtype's parts (complex64 -> float32); any other dtype is its own."""
    return COMPLEX_PART.get(dtype, dtype)


def compatible(a: str, b: str) -> bool:
    """Whether two dtypes have a common dtype (see promote)."""
    try:
        promote(a, b)
    except TypeError:
        return False
    return True


def sum_result(dtype: str) -> str:
    return np.sum(np.zeros(1, dtype=dtype)).dtype.name


def common_dtypes(spec: OpSpec) -> set[str]:
    """The dtypes the op's promoted inputs can share: each accepted dtype, or for several inputs every
    promotion of two accepted dtypes that is accepted too (numpy has no bitwise_and loop for int64 and
    uint64, whose promotion is float64)."""
    if spec.promotion in (Promotion.binary, Promotion.binary_float, Promotion.comparison, Promotion.where) or (
        spec.promotion in (Promotion.logical, Promotion.float) and spec.arity > 1
    ):
        return {common for a in spec.dtypes for b in spec.dtypes if compatible(a, b) and (common := promote(a, b)) in spec.dtypes}
    return set(spec.dtypes)


def kernel_dtype(spec: OpSpec, common: str) -> str:
    """The dtype of the kernel that inputs promoted to `common` run (see Promotion in dispatch.h)."""
    p = spec.promotion
    if p is Promotion.float:
        return float_result(common)
    if p is Promotion.binary_float:
        return common if common in FLOATING + COMPLEX else "float64"
    if p is Promotion.logical:
        return "bool"
    return common


def result_dtype(spec: OpSpec, common: str) -> str:
    """numpy's result dtype for inputs promoted to `common`."""
    kernel = kernel_dtype(spec, common)
    p = spec.promotion
    if p in (Promotion.comparison, Promotion.logical, Promotion.reduce_bool):
        return "bool"
    if p is Promotion.reduce_sum:
        return sum_result(kernel)
    if p is Promotion.reduce_mean:
        return kernel if kernel in FLOATING + COMPLEX else "float64"
    if p is Promotion.real_valued:
        return real_part(kernel)
    if p is Promotion.reduce_index:
        return "int64"
    return kernel


def type_table(spec: OpSpec) -> list[tuple[str, str, str]]:
    """The op's type table, the runtime's data for promotion: (common, kernel, result) for every dtype the
    promoted inputs can share (numpy's ufunc.types); inputs that promote to any other dtype are refused
    (atan2 of two int8 tensors: the op declares floating dtypes only)."""
    common = common_dtypes(spec)
    return [(d, kernel_dtype(spec, d), result_dtype(spec, d)) for d in DTYPES if d in common]


def promoted_inputs(spec: OpSpec) -> int:
    """Bit i: tensor input i takes part in promotion. numpy's where casts its condition to bool and promotes
    the two branches alone (NEP 50)."""
    return sum(1 << i for i in range(spec.arity) if not (spec.promotion is Promotion.where and i == 0))


def kernel_dtypes(spec: OpSpec) -> tuple[str, ...]:
    """The dtypes the op's kernels are registered under."""
    found = {kernel_dtype(spec, common) for common in common_dtypes(spec)}
    return tuple(d for d in DTYPES if d in found)


@dataclass(frozen=True)
class KernelTypes:
    """C++ types one kernel instantiation works with."""

    dtype: str
    scalar: str  # T: the kernel dtype's C++ type (how elements are stored)
    acc: str  # accumulator type (reductions, normalization, contraction); T elsewhere
    out: str  # the output element type
    compute: str  # compute_t: what spec expressions are evaluated in (float for float16/bfloat16, else T)


def kernel_types(spec: OpSpec, dtype: str) -> KernelTypes:
    scalar = CPP_TYPE[dtype]
    compute = "float" if dtype in HALF else scalar
    out = CPP_TYPE[result_dtype(spec, dtype)]  # the type table's result: one rule for both
    if spec.promotion is Promotion.reduce_sum:
        # float32 and the 16-bit floats sum and multiply in double: partial products of a float accumulator
        # overflow and underflow where numpy's float64 ones do not (inf * 0 in a regrouped product); complex64
        # in complex128 alike
        acc = "double" if dtype == "float32" or dtype in HALF else "ts::complex128" if dtype == "complex64" else out
    elif spec.promotion is Promotion.reduce_mean:
        acc = "ts::complex128" if dtype in COMPLEX else "double"
    elif spec.promotion is Promotion.reduce_bool:  # all, any: each element's truth value, folded
        acc = "bool"
    else:  # max/min (exact), softmax, matmul: 16-bit floats in float
        acc = spec.family.accumulator_for(dtype) or scalar
    return KernelTypes(dtype, scalar, acc, out, compute)


def own_scalars(spec: OpSpec) -> tuple[str, ...]:
    """The op's own float arguments (families with own_scalars: update), in the order its kernel reads them."""
    return tuple(a.name for a in spec.signature.arguments if a.kind == "keyword") if spec.family.own_scalars else ()


def interface(spec: OpSpec) -> str:
    """What the shared files (op table, bindings) assume of an op's kernels: a kernel file built
    from an older spec with the same interface can stay in the runtime."""
    return f"{spec.signature}|{spec.family.name}|{spec.promotion.value}|{bool(spec.field('identity'))}|{kernel_dtypes(spec)}"


def input_cpp_type(spec: OpSpec, index: int) -> str:
    """C++ type of tensor input `index` in memory (T, or bool for where's condition)."""
    return "bool" if spec.promotion is Promotion.where and index == 0 else "T"


def input_load_type(spec: OpSpec, index: int) -> str:
    """What a body reads tensor input `index` through: its C++ type, except that a bool is read as the
    byte it is stored in (0 or 1) and converted (x != 0). GCC does not vectorise a select on a loaded `bool`
    among wider elements (where on float32 ran a branch per element: 34 ms for 16M elements)."""
    return "uint8_t" if input_cpp_type(spec, index) == "bool" else input_cpp_type(spec, index)


def input_compute_type(spec: OpSpec, index: int) -> str:
    """C++ type tensor input `index` is loaded into for the spec expression (compute_t, or bool)."""
    return "bool" if spec.promotion is Promotion.where and index == 0 else "compute_t"


# ---- C++ names ------------------------------------------------------------------------------------


def sort_output(spec: OpSpec) -> str:
    """The ts::SortOutput a sort op's kernels are compiled for: the positions where its result is them (argsort,
    whose engine passes the kernel indices alone), else the values."""
    return "ts::SortOutput::Positions" if spec.promotion is Promotion.reduce_index else "ts::SortOutput::Values"


def kernel_struct(spec: OpSpec, device: str) -> str:
    return f"{spec.name}_{device}_kernel"


def register_function(spec: OpSpec, device: str) -> str:
    return f"register_{spec.name}_{device}"


def kernel_path(spec: OpSpec, device: str) -> str:
    """Output path of the op's kernel translation unit, relative to generated/."""
    return f"{device}/{spec.name}{SOURCE_SUFFIX[device]}"


def transcript_path(spec: OpSpec, device: str) -> str:
    """Where the record of how a model wrote the op's kernel is kept, relative to generated/."""
    return f"transcripts/{spec.name}.{device}.jsonl"


def template_path(spec: OpSpec, device: str) -> str:
    """The translation-unit template an op's kernel is rendered into (relative to templates/)."""
    return spec.family.template(device, SOURCE_SUFFIX[device])


def body_template_path(spec: OpSpec, device: str) -> str:
    """The template proposer's body template for the op's family."""
    return spec.family.body_template(device, SOURCE_SUFFIX[device])


# ---- Python bindings -----------------------------------------------------------------------------


def binding_cpp_type(spec: OpSpec, arg: Argument) -> str:
    """C++ parameter type in the pybind11 lambda for one signature argument."""
    if arg.type.is_tensor:
        return "pybind11::object"  # a Tensor, an array-like or a Python scalar: ts::python::tensor_operands
    if arg.type.optional or arg.type.is_list:
        return "pybind11::object"  # None / int / sequence, converted by ts::python helpers
    return {BaseType.int: "int64_t", BaseType.bool: "bool", BaseType.float: "double"}[arg.type.base]


def binding_argument_names(spec: OpSpec | CompositeSpec) -> tuple[str, ...]:
    """The arguments of an op's binding, in order: its signature's, then out= where it takes one."""
    names = tuple(a.name for a in spec.signature.arguments)
    return names + ("out",) if isinstance(spec, OpSpec) and takes_out(spec) else names


def autograd_kind(spec: OpSpec | CompositeSpec) -> str:
    """The ts::autograd::Kind of an op: its spec's derivatives, none declared, or none written yet."""
    if spec.derivatives is None:
        return "ts::autograd::Kind::NotImplemented"
    return "ts::autograd::Kind::Formulas" if spec.derivatives.differentiable else "ts::autograd::Kind::NotDifferentiable"


def differentiable_positions(spec: OpSpec | CompositeSpec) -> tuple[int, ...]:
    """Binding argument positions gradients flow to: each tensor argument with a formula (or, without
    derivatives yet, every tensor argument, so backward names the missing formula)."""
    names = binding_argument_names(spec)
    if spec.derivatives is None:
        tensors = [a.name for a in spec.signature.arguments if a.type.is_tensor or a.type.is_tensor_list or a.kind == "variadic"]
        return tuple(names.index(n) for n in tensors)
    return tuple(names.index(d.input) for d in spec.derivatives.formulas if d.differentiable)


def saved_positions(spec: OpSpec | CompositeSpec) -> tuple[int, ...]:
    """Binding argument positions the formulas read (kept alive and version-checked for backward)."""
    if spec.derivatives is None:
        return ()
    names = binding_argument_names(spec)
    return tuple(names.index(n) for n in spec.derivatives.saved_arguments())


def takes_out(spec: OpSpec) -> bool:
    """Whether the op's function takes numpy's keyword out= (a tensor the result is written into): the
    pointwise ops, as numpy's ufuncs do. Methods and operators never take it."""
    return spec.family.takes_out


def binding_default(arg: Argument) -> str | None:
    """The pybind11 default expression for `py::arg(...) = default`."""
    if arg.default is None:
        return None
    value = arg.default_value
    if value is None:
        return "pybind11::none()"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):  # a string enum's value
        return f'pybind11::str("{value}")'
    return arg.default


PYI_RETURN = {BaseType.Tensor: "Tensor", BaseType.int: "int", BaseType.bool: "builtins.bool", BaseType.float: "float"}
PYI_BASE = {BaseType.int: "int", BaseType.bool: "builtins.bool", BaseType.float: "float",
            BaseType.Scalar: "builtins.bool | int | float | complex", BaseType.ScalarType: "DType | Any",
            BaseType.Device: "Device | str"}  # fmt: skip


def pyi_type(arg: Argument, array_like: bool = True) -> str:
    """The stub's type of an argument; `array_like`: tensor arguments also take what ts.asarray takes."""
    tensor = "Tensor | ArrayLike" if array_like else "Tensor"
    if arg.type.is_tensor:
        text = tensor
    elif arg.type.is_tensor_list:
        text = f"Sequence[{tensor}]"
    elif arg.type.base is BaseType.str:
        text = f"Literal[{', '.join(repr(v) for v in arg.type.enum_values)}]"
    else:
        base = PYI_BASE[arg.type.base]
        text = f"{base} | tuple[{base}, ...]" if arg.type.is_list else base
    return f"{text} | None" if arg.type.optional else text


def pyi_return(signature: Signature) -> str:
    """The stub's return type: ``Tensor[]`` is a list (the Array API's broadcast_arrays and meshgrid),
    ``(Tensor, ...)`` a tuple of any length (unstack), ``(Tensor, Tensor)`` a fixed tuple."""
    types = [f"list[{PYI_RETURN[t.base]}]" if t.is_list else PYI_RETURN[t.base] for t in signature.return_types]
    returns = signature.returns
    if isinstance(returns, ReturnTuple):
        return f"tuple[{types[0]}, ...]" if returns.open else f"tuple[{', '.join(types)}]"
    return types[0]


def is_reflected(dunder: str) -> bool:
    """Whether the tensor is the right operand of the operator (``2 - t`` calls ``t.__rsub__(2)``)."""
    return dunder in REFLECTED


def is_inplace(dunder: str) -> bool:
    """Whether the operator writes its result into the tensor (``t += 1`` calls ``t.__iadd__(1)``)."""
    return dunder in INPLACE
