"""Bad input to the runtime raises a Python exception with a clear message; nothing crashes the interpreter.

Each test names the exception type numpy (or Python) would raise and matches
the key words of the message, so that a vague or misleading message fails the
test too. The last test runs a batch of bad calls in a fresh interpreter and
checks that it survives them all.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorsmith as ts

AXIS_OUT_OF_BOUNDS = r"axis -?\d+ is out of bounds for tensor of dimension \d+"
NOT_AN_INDEX = r"only integers, slices \(`:`\), ellipsis \(`\.\.\.`\) and None are valid indices"


def t23() -> ts.Tensor:
    return ts.asarray(np.arange(6.0).reshape(2, 3))


# ---- shapes -------------------------------------------------------------------------------


def test_add_shape_mismatch_names_both_shapes() -> None:
    a, b = ts.asarray(np.zeros((2, 3))), ts.asarray(np.zeros((4, 5)))
    with pytest.raises(ValueError, match=r"could not be broadcast together with shapes \(2,3\) \(4,5\)"):
        ts.add(a, b)
    with pytest.raises(ValueError, match=r"could not be broadcast together with shapes \(2,3\) \(4,5\)"):
        a + b


def test_where_shape_mismatch_names_all_shapes() -> None:
    with pytest.raises(ValueError, match=r"could not be broadcast together with shapes \(1,\) \(2,3\) \(4,\)"):
        ts.where(ts.asarray([True]), t23(), ts.asarray(np.zeros(4)))


def test_broadcast_to_incompatible_shape() -> None:
    with pytest.raises(ValueError, match=r"cannot broadcast a tensor of shape \(2,3\) to shape \(3,3\)"):
        ts.broadcast_to(t23(), (3, 3))
    with pytest.raises(ValueError, match=r"cannot broadcast a tensor of shape \(2,3\) to shape \(3,\)"):
        ts.broadcast_to(t23(), (3,))


def test_setitem_value_of_wrong_shape() -> None:
    t = ts.asarray(np.zeros((4, 5, 6)))
    with pytest.raises(ValueError, match=r"cannot broadcast a tensor of shape \(4,\) to shape \(5,6\)"):
        t[0] = np.zeros(4)
    with pytest.raises(ValueError, match=r"cannot broadcast a tensor of shape \(4,\) to shape \(5,6\)"):
        t[0] = ts.asarray(np.zeros(4))


@pytest.mark.parametrize(
    ("a", "b", "pattern"),
    [
        ((2, 3), (4, 5), r"matmul: .*mismatch in its core dimension 0.*\(size 4 is different from 3\)"),
        ((3,), (4,), r"matmul: .*mismatch in its core dimension 0.*\(size 4 is different from 3\)"),
        (
            (2, 3, 4),
            (3, 4, 5),
            r"matmul: the batch dimensions of shapes \(2, 3, 4\) and \(3, 4, 5\) cannot be broadcast",
        ),
        ((), (2, 2), r"matmul: Input operand 0 does not have enough dimensions"),
    ],
    ids=["core", "vectors", "batch", "0-d"],
)
def test_matmul_shape_errors(a, b, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        ts.matmul(ts.asarray(np.zeros(a)), ts.asarray(np.zeros(b)))
    with pytest.raises(ValueError, match=pattern):
        ts.asarray(np.zeros(a)) @ ts.asarray(np.zeros(b))


@pytest.mark.parametrize(
    ("shape", "pattern"),
    [
        ((4, 2), r"cannot reshape tensor of size 6 into shape \(4,2\)"),
        ((7,), r"cannot reshape tensor of size 6 into shape \(7,\)"),
        ((-1, 4), r"cannot reshape tensor of size 6 into shape \(-1,4\)"),
        ((-1, -1), r"can only specify one unknown dimension"),
        ((-2, 3), r"negative dimensions are not allowed"),
        ((), r"cannot reshape tensor of size 6 into shape \(\)"),
    ],
    ids=str,
)
def test_reshape_to_a_wrong_size(shape, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        t23().reshape(shape)
    with pytest.raises(ValueError, match=pattern):
        ts.reshape(t23(), shape)


def test_reshape_copy_false_when_a_copy_is_needed() -> None:
    with pytest.raises(ValueError, match=r"reshape\(copy=False\).*shape \(3, 2\) cannot be viewed as shape \(6,\)"):
        ts.reshape(t23().T, (6,), copy=False)


def test_negative_dimensions() -> None:
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        ts.broadcast_to(ts.asarray([1.0]), (-1,))


@pytest.mark.parametrize(
    "make",
    [
        lambda: ts.broadcast_to(ts.asarray(1.0), (2**61,)),
        lambda: ts.broadcast_to(ts.asarray(1.0), (2**62, 2**62, 4)),
        lambda: ts.asarray(np.zeros(0)).reshape(2**62, 2**62),
        lambda: ts.asarray(np.zeros(0)).reshape(2**62, 2**62, 0),
        lambda: ts.broadcast_to(ts.asarray(1, dtype=ts.int16), (2**62,)),
    ],
    ids=["bytes-overflow", "elements-overflow", "reshape-empty", "reshape-empty-0", "int16"],
)
def test_shapes_too_big_to_address_are_refused(make) -> None:
    """numpy: 'array is too big'. Before, numel() wrapped around and a copy wrote past a tiny block (segfault)."""
    with pytest.raises(ValueError, match="too big"):
        make()


# ---- dtypes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "exc", "pattern"),
    [
        (
            lambda: ts.subtract(ts.asarray([True]), ts.asarray([False])),
            NotImplementedError,
            r"subtract is not implemented .*dtype bool",
        ),
        (
            lambda: ts.asarray([True]) - ts.asarray([False]),
            NotImplementedError,
            r"subtract is not implemented .*dtype bool",
        ),
        (lambda: ts.negative(ts.asarray([True])), NotImplementedError, r"negative is not implemented .*dtype bool"),
        (lambda: -ts.asarray([True]), NotImplementedError, r"negative is not implemented .*dtype bool"),
        (lambda: ts.sign(ts.asarray([True])), NotImplementedError, r"sign is not implemented .*dtype bool"),
    ],
    ids=["subtract", "sub-operator", "negative", "neg-operator", "sign"],
)
def test_unsupported_dtype_names_the_op_or_dtype(call, exc, pattern: str) -> None:
    with pytest.raises(exc, match=pattern):
        call()


@pytest.mark.parametrize(
    "a",
    [
        np.zeros(2, np.clongdouble),
        np.array([None, 1], dtype=object),
        np.array(["a", "bc"]),
        np.array([b"abc"]),
        np.array(["2020-01-01"], dtype="datetime64[D]"),
        np.zeros(2, np.longdouble),
        np.zeros(2, dtype=[("a", "i4")]),
    ],
    ids=lambda a: str(a.dtype),
)
def test_asarray_of_unsupported_numpy_dtype_names_it(a: np.ndarray) -> None:
    with pytest.raises(TypeError, match=re.escape(f"numpy dtype '{a.dtype}' is not supported by tensorsmith")):
        ts.asarray(a)
    with pytest.raises(TypeError, match=re.escape(f"numpy dtype '{a.dtype}' is not supported")):
        ts.add(ts.asarray([1.0]), a)


@pytest.mark.parametrize("obj", [["a"], None, {1, 2}, 2**64, [1, "a"], object()],
                         ids=["str-list", "None", "set", "2**64", "mixed-list", "object"])  # stable ids for xdist
def test_asarray_of_python_objects_without_a_numeric_dtype(obj) -> None:
    with pytest.raises(TypeError, match=r"numpy dtype '.+' is not supported by tensorsmith"):
        ts.asarray(obj)


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", np.clongdouble, "U3", object, "nope", None, 3.5])
def test_unsupported_dtype_arguments(dtype) -> None:
    pattern = {
        "nope": r"data type 'nope' not understood",
        None: r"dtype must be a tensorsmith dtype.*not None",
        3.5: r"Cannot interpret '3.5' as a data type",
    }.get(dtype, r"numpy dtype '.+' is not supported by tensorsmith")
    with pytest.raises(TypeError, match=pattern):
        ts.dtype(dtype)
    if dtype is not None:  # dtype=None means "infer" in asarray and is refused by astype
        with pytest.raises(TypeError, match=pattern):
            ts.asarray([1], dtype=dtype)
    with pytest.raises(TypeError, match=pattern):
        ts.asarray([1]).astype(dtype)


def test_asarray_copy_false_when_a_copy_is_needed() -> None:
    t = ts.asarray(np.arange(3.0))
    with pytest.raises(ValueError, match=r"asarray\(copy=False\): casting a float64 tensor to int32 requires a copy"):
        ts.asarray(t, dtype=ts.int32, copy=False)
    with pytest.raises(ValueError, match=r"Unable to avoid copy"):  # numpy's own message for a list or a cast
        ts.asarray([1, 2], copy=False)
    with pytest.raises(ValueError, match=r"Unable to avoid copy"):
        ts.asarray(np.arange(3), dtype=ts.float32, copy=False)
    read_only = np.arange(3.0)
    read_only.flags.writeable = False
    with pytest.raises(
        ValueError, match=r"asarray\(copy=False\): the array's memory cannot be shared \(it is read-only"
    ):
        ts.asarray(read_only, copy=False)


def test_ragged_nested_lists() -> None:
    with pytest.raises(ValueError, match="inhomogeneous shape"):
        ts.asarray([[1], [1, 2]])
    with pytest.raises(ValueError, match="inhomogeneous shape"):
        ts.add(t23(), [[1, 2], [3]])


# ---- axes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda t: ts.sum(t, axis=2),
        lambda t: ts.sum(t, axis=(0, 5)),
        lambda t: t.sum(axis=-3),
        lambda t: ts.mean(t, axis=2),
        lambda t: ts.max(t, axis=-3),
        lambda t: ts.prod(t, axis=7),
        lambda t: ts.softmax(t, axis=5),
        lambda t: ts.log_softmax(t, axis=-3),
        lambda t: ts.argmax(t, axis=2),
        lambda t: ts.argmin(t, axis=-3),
        lambda t: t.squeeze(5),
        lambda t: t.expand_dims(3),
        lambda t: ts.expand_dims(t, axis=-4),
        lambda t: t.permute_dims(0, 5),
        lambda t: ts.sum(t[0, 0], axis=0),
        lambda t: ts.sum(t, axis=2**62),
    ],
    ids=[
        "sum",
        "sum-tuple",
        "sum-method",
        "mean",
        "max",
        "prod",
        "softmax",
        "log_softmax",
        "argmax",
        "argmin",
        "squeeze",
        "expand_dims",
        "ts.expand_dims",
        "permute_dims",
        "0-d",
        "huge",
    ],
)
def test_axis_out_of_range_raises_axis_error(call) -> None:
    with pytest.raises(ts.AxisError, match=AXIS_OUT_OF_BOUNDS):
        call(t23())
    with pytest.raises(ValueError):  # numpy's AxisError is both: code catching either keeps working
        call(t23())
    with pytest.raises(IndexError):
        call(t23())


def test_axis_error_is_value_error_and_index_error() -> None:
    assert issubclass(ts.AxisError, ValueError) and issubclass(ts.AxisError, IndexError)
    assert ts.AxisError.__module__ == "tensorsmith"
    with pytest.raises(ts.AxisError, match=r"axis 2 is out of bounds for tensor of dimension 2"):
        ts.sum(t23(), axis=2)


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: ts.sum(t23(), axis=(0, 0)), r"duplicate value in 'axis'"),
        (lambda: ts.sum(t23(), axis=(1, -1)), r"duplicate value in 'axis'"),
        (lambda: ts.mean(t23(), axis=[0, -2]), r"duplicate value in 'axis'"),
        (lambda: ts.squeeze(ts.asarray(np.zeros((1, 3))), axis=(0, 0)), r"duplicate value in 'axis'"),
        (lambda: t23().permute_dims(1, 1), r"repeated axis in transpose"),
        (lambda: t23().permute_dims(0), r"axes don't match tensor"),
    ],
    ids=["sum", "sum-negative", "mean", "squeeze", "permute", "permute-too-few"],
)
def test_duplicate_or_missing_axes(call, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        call()


def test_squeeze_of_an_axis_longer_than_one() -> None:
    with pytest.raises(ValueError, match="cannot select an axis to squeeze out which has size not equal to one"):
        t23().squeeze(0)


def test_matrix_transpose_needs_two_dimensions() -> None:
    with pytest.raises(ValueError, match=r"ndim < 2"):
        _ = ts.asarray([1, 2]).mT


# ---- indexing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "pattern"),
    [
        (2, r"index 2 is out of bounds for axis 0 with size 2"),
        (-3, r"index -3 is out of bounds for axis 0 with size 2"),
        ((0, 5), r"index 5 is out of bounds for axis 1 with size 3"),
        ((Ellipsis, 3), r"index 3 is out of bounds for axis 1 with size 3"),
        ((None, 1, -4), r"index -4 is out of bounds for axis 1 with size 3"),
        (2**70, r"cannot fit 'int' into an index-sized integer"),
        (-(2**62), r"index -4611686018427387904 is out of bounds for axis 0"),
    ],
    ids=repr,
)
def test_index_out_of_range(key, pattern: str) -> None:
    with pytest.raises(IndexError, match=pattern):
        t23()[key]
    with pytest.raises(IndexError, match=pattern):
        t23()[key] = 1


def test_too_many_indices() -> None:
    with pytest.raises(IndexError, match=r"too many indices for tensor: tensor is 2-dimensional, but 3 were indexed"):
        t23()[0, 0, 0]
    with pytest.raises(IndexError, match=r"too many indices.*0-dimensional, but 1 were indexed"):
        ts.asarray(1.0)[0]
    with pytest.raises(IndexError, match=r"too many indices"):
        t23()[0, 0, 0] = 1


def test_more_than_one_ellipsis() -> None:
    with pytest.raises(IndexError, match=r"an index can only have a single ellipsis"):
        t23()[..., 0, ...]


@pytest.mark.parametrize(
    ("key", "pattern"),
    [
        ((0, False), r"boolean indices are not supported"),
        ((0, ts.asarray(True)), r"a 0-d bool tensor is not an index; " + NOT_AN_INDEX),
        (1.5, NOT_AN_INDEX + ", integer or boolean arrays \\(numpy's advanced indexing\\), not float"),
        ("a", NOT_AN_INDEX + ".*, not str"),
        ({}, NOT_AN_INDEX + ".*, not dict"),
        (slice(1.5, None), r"slice indices must be integers or None or have an __index__ method"),  # numpy's words
    ],
    ids=["bool-in-tuple", "0d-bool-tensor-in-tuple", "float", "str", "dict", "float-slice"],
)
def test_unsupported_index_types_say_so(key, pattern: str) -> None:
    with pytest.raises(TypeError, match=pattern):
        t23()[key]
    with pytest.raises(TypeError, match=pattern):
        t23()[key] = 0


def test_a_bad_item_among_index_arrays_says_so() -> None:
    with pytest.raises(TypeError, match=NOT_AN_INDEX + ".*, not float"):
        t23()[[0], 1.5]
    with pytest.raises(IndexError, match=r"arrays used as indices must be of integer \(or boolean\) type, not float64"):
        t23()[0, [0.5]]
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for axis 1 with size 3"):
        t23()[[0, 1], [0, 3]]
    with pytest.raises(IndexError, match=r"index -3 is out of bounds for axis 0 with size 2"):
        t23()[-3, [0]]
    with pytest.raises(IndexError, match=r"too many indices for tensor: tensor is 2-dimensional, but 3 were indexed"):
        t23()[[0], 0, 0]
    with pytest.raises(IndexError, match=r"boolean index did not match indexed array along axis 1; size of axis is 3 "
                                         r"but size of corresponding boolean axis is 2"):
        t23()[0, [True, False]]
    with pytest.raises(ValueError, match=r"shape mismatch|broadcast"):
        t23()[[0, 1], [0, 1, 2]]


def test_assigning_through_index_arrays_checks_the_value_shape() -> None:
    with pytest.raises(ValueError, match=r"shape mismatch: value array of shape \(3,\) could not be broadcast to indexing "
                                         r"result of shape \(2,\)"):
        t23()[[0, 1], 0] = [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match=r"shape mismatch: value array of shape \(2,\) could not be broadcast"):
        t23()[t23() > 1] = [1.0, 2.0]  # four selected elements
    with pytest.raises(ValueError, match=r"assignment destination is read-only"):
        ts.broadcast_to(ts.asarray([1.0, 2.0, 3.0]), (2, 3))[[0], [1]] = 5.0


def test_slice_step_zero() -> None:
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        t23()[::0]


# ---- argument types -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: ts.sum("abc"), r"argument 'x' must be a tensor, an array-like or a Python scalar, not str"),
        (lambda: ts.sum(t23(), keepdims="x"), r"sum\(\): incompatible function arguments"),
        (lambda: ts.sum(t23(), badkw=1), r"sum\(\): incompatible function arguments"),
        (lambda: ts.matmul([[1.0]], object()), r"argument 'x2' must be a tensor, an array-like or a Python scalar, not object"),
        (lambda: ts.asarray([1], copy="yes"), r"asarray\(\): incompatible function arguments"),
        (lambda: ts.add(object(), 1), r"argument 'x1' must be a tensor, an array-like or a Python scalar, not object"),
        (
            lambda: ts.add(t23(), None),
            r"argument 'x2' must be a tensor, an array-like or a Python scalar, not NoneType",
        ),
        (lambda: t23() + "a", r"unsupported operand type\(s\) for \+: '.*Tensor' and 'str'"),  # Python's protocol
        (
            lambda: ts.multiply(t23(), {}),
            r"argument 'x2' must be a tensor, an array-like or a Python scalar, not dict",
        ),
        (lambda: ts.where(t23() > 1, t23(), "x"), r"argument 'x2' must be .* not str"),
        (lambda: ts.sum(t23(), axis="x"), r"axis must be an int or a sequence of ints, not str"),
        (lambda: ts.sum(t23(), axis=1.0), r"axis must be an int or a sequence of ints, not float"),
        (lambda: ts.sum(t23(), axis=True), r"axis must be an int or a sequence of ints, not bool"),
        (lambda: ts.sum(t23(), axis=[0, "a"]), r"axis must be an int or a sequence of ints, but it contains a str"),
        (lambda: ts.argmax(t23(), axis=(0,)), r"axis must be an int, not tuple"),
        (lambda: ts.softmax(t23(), axis=None), r"softmax\(\): incompatible function arguments"),
        (lambda: t23().reshape("ab"), r"shape must be an int or a sequence of ints, not str"),
        (lambda: t23().reshape(2.0), r"shape must be an int or a sequence of ints, not float"),
        (lambda: t23().reshape(True, 6), r"shape must be an int, not bool"),
        (lambda: t23().reshape([[2, 3]]), r"shape must be an int or a sequence of ints, but it contains a list"),
        (lambda: t23().reshape(), r"shape is required"),
        (lambda: ts.broadcast_to(t23(), None), r"shape must be an int or a sequence of ints, not NoneType"),
        (lambda: t23().expand_dims((0, 1)), r"axis must be an int, not tuple"),
    ],
    ids=lambda x: None if callable(x) else re.sub(r"\W+", "-", x)[:40].strip("-"),
)
def test_wrong_argument_types(call, pattern: str) -> None:
    with pytest.raises(TypeError, match=pattern):
        call()


# ---- devices ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda d: ts.asarray([1], device=d),
        lambda d: ts.asarray([1]).astype(ts.float32, device=d),
        lambda d: ts.from_dlpack(np.arange(3.0), device=d),
    ],
    ids=["asarray", "astype", "from_dlpack"],
)
@pytest.mark.parametrize("device", ["cuda", "cuda:1", ts.Device("cuda:0")], ids=str)
@pytest.mark.skipif(ts.cuda.is_available(), reason="a CUDA device is available: CUDA devices are not refused")
def test_cuda_device_is_refused_clearly(call, device) -> None:
    why = "no CUDA device/driver available" if ts.build_info()["cuda"] else "tensorsmith was built without CUDA"
    with pytest.raises(ValueError, match=rf"device '{device}' is not available: {why}"):
        call(device)


def test_malformed_devices() -> None:
    with pytest.raises(ValueError, match=r"expected a device like 'cpu', 'cuda' or 'cuda:1', got 'tpu'"):
        ts.asarray([1], device="tpu")
    with pytest.raises(ValueError, match=r"got 'tpu'"):
        ts.Device("tpu")
    with pytest.raises(TypeError, match=r"device must be a string such as 'cpu' or a tensorsmith Device, not int"):
        ts.asarray([1], device=0)


# ---- reductions -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: ts.max(ts.asarray(np.zeros(0))), r"zero-size array to reduction operation max which has no identity"),
        (lambda: ts.min(ts.asarray(np.zeros(0))), r"zero-size array to reduction operation min which has no identity"),
        (lambda: ts.max(ts.asarray(np.zeros((0, 3))), axis=0), r"zero-size array to reduction operation max"),
        (lambda: ts.asarray(np.zeros((2, 0))).min(axis=1), r"zero-size array to reduction operation min"),
        (lambda: ts.argmax(ts.asarray(np.zeros(0))), r"attempt to get argmax of an empty sequence"),
        (lambda: ts.argmin(ts.asarray(np.zeros((3, 0))), axis=1), r"attempt to get argmin of an empty sequence"),
    ],
    ids=["max", "min", "max-axis", "min-method", "argmax", "argmin-axis"],
)
def test_empty_reductions_without_identity(call, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        call()


def test_empty_reductions_with_identity_or_nothing_to_reduce_succeed() -> None:
    empty = np.zeros((0, 3))
    np.testing.assert_array_equal(np.asarray(ts.sum(ts.asarray(empty), axis=0)), np.sum(empty, axis=0))
    np.testing.assert_array_equal(np.asarray(ts.prod(ts.asarray(empty))), np.prod(empty))
    assert ts.max(ts.asarray(empty), axis=1).shape == np.max(empty, axis=1).shape == (0,)


# ---- Python scalar conversions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "exc", "pattern"),
    [
        (lambda: int(ts.asarray([1, 2])), TypeError, r"only tensors of size 1 can be converted to Python scalars"),
        (
            lambda: float(ts.asarray([1.0, 2.0])),
            TypeError,
            r"only tensors of size 1 can be converted to Python scalars",
        ),
        (lambda: float(ts.asarray(np.zeros(0))), TypeError, r"only tensors of size 1"),
        (
            lambda: bool(ts.asarray([1, 2])),
            ValueError,
            r"truth value of a tensor with more than one element is ambiguous",
        ),
        (lambda: bool(ts.asarray(np.zeros(0))), ValueError, r"truth value of an empty tensor is ambiguous"),
        (lambda: ts.asarray([1, 2]).item(), ValueError, r"can only convert a tensor of size 1 to a Python scalar"),
        (
            lambda: ts.asarray(1.0).__index__(),
            TypeError,
            r"only integer scalar tensors can be converted to a scalar index",
        ),
        (lambda: [1, 2][ts.asarray([1])], TypeError, r"only integer scalar tensors"),
        (lambda: [1, 2][ts.asarray(True)], TypeError, r"only integer scalar tensors"),
        (lambda: len(ts.asarray(1)), TypeError, r"len\(\) of a 0-d tensor"),
        (lambda: iter(ts.asarray(1)), TypeError, r"iteration over a 0-d tensor"),
    ],
    ids=[
        "int",
        "float",
        "float-empty",
        "bool",
        "bool-empty",
        "item",
        "index-float",
        "index-1d",
        "index-bool",
        "len",
        "iter",
    ],
)
def test_scalar_conversions(call, exc, pattern: str) -> None:
    with pytest.raises(exc, match=pattern):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda: ts.asarray([1], dtype=ts.uint8) + 300,
        lambda: ts.asarray([1], dtype=ts.uint8) + (-1),
        lambda: ts.asarray([1], dtype=ts.int8) * 128,
        lambda: ts.asarray([1], dtype=ts.uint8).__setitem__(0, 300),
        lambda: ts.asarray(-1, dtype=ts.uint8),
    ],
    ids=["add", "add-negative", "mul-int8", "setitem", "asarray"],
)
def test_python_int_out_of_range_for_the_dtype(call) -> None:
    with pytest.raises(OverflowError, match=r"Python integer -?\d+ out of bounds for u?int8"):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda: ts.pow(ts.asarray([2]), ts.asarray([-1])),
        lambda: ts.asarray([2, 3]) ** -1,
        lambda: ts.power(ts.asarray([2], dtype=ts.int8), ts.asarray([-2], dtype=ts.int8)),
    ],
    ids=["pow", "operator", "power-int8"],
)
def test_integer_to_negative_integer_power(call) -> None:
    """numpy raises instead of returning a wrong integer (2 ** -1 is not 0): the spec's domain, which the engine
    checks before any kernel runs."""
    with pytest.raises(ValueError, match=r"negative integer powers"):
        call()


# ---- DLPack -----------------------------------------------------------------------------------------------


def test_dlpack_export_errors() -> None:
    t = ts.asarray([1.0])
    with pytest.raises(BufferError, match=r"can only be exported to dl_device \(1, 0\), not \(2, 0\)"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(ValueError, match=r"stream must be None for a CPU tensor"):
        t.__dlpack__(stream=1)
    with pytest.raises(TypeError, match=r"dl_device\[0\] must be an int, not str"):
        t.__dlpack__(dl_device=("cpu", 0))


def test_from_dlpack_of_non_producers() -> None:
    with pytest.raises(
        TypeError, match=r"from_dlpack\(\) needs an object implementing the DLPack protocol \(__dlpack__\), not list"
    ):
        ts.from_dlpack([1, 2])
    with pytest.raises(TypeError, match=r"not PyCapsule"):
        ts.from_dlpack(ts.asarray([1]).__dlpack__())


def test_from_dlpack_of_bad_producers() -> None:
    class NotACapsule:
        def __dlpack__(self, **kwargs):
            return 5

    class OnCuda:
        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be asked for a capsule")

        def __dlpack_device__(self):
            return (2, 0)

    class Failing:
        def __dlpack__(self, **kwargs):
            raise RuntimeError("producer failed")

    with pytest.raises(TypeError, match=r"NotACapsule.__dlpack__\(\) did not return a DLPack capsule"):
        ts.from_dlpack(NotACapsule())
    if not ts.cuda.is_available():
        why = r"no CUDA device/driver is available" if ts.build_info()["cuda"] else r"tensorsmith was built without CUDA"
        with pytest.raises(BufferError, match=rf"lives on (a )?CUDA device .*{why}"):
            ts.from_dlpack(OnCuda())
    with pytest.raises(RuntimeError, match="producer failed"):
        ts.from_dlpack(Failing())


def test_from_dlpack_capsule_is_consumed_once() -> None:
    capsule = ts.asarray([1.0, 2.0]).__dlpack__()

    class Replays:
        def __dlpack__(self, **kwargs):
            return capsule

    assert ts.from_dlpack(Replays()).tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match=r"did not return a DLPack capsule"):
        ts.from_dlpack(Replays())


def test_array_namespace_of_unsupported_version() -> None:
    with pytest.raises(ValueError, match=r"implements Array API version 2024.12, not '2021.12'"):
        ts.asarray([1]).__array_namespace__(api_version="2021.12")


# ---- the interpreter survives -------------------------------------------------------------------------------------

SURVIVAL_SCRIPT = textwrap.dedent(
    """
    import gc
    import numpy as np
    import tensorsmith as ts

    t = ts.asarray(np.arange(6.0).reshape(2, 3))
    bad_calls = [
        lambda: ts.add(ts.asarray(np.zeros((2, 3))), ts.asarray(np.zeros((4, 5)))),
        lambda: ts.matmul(t, t),
        lambda: ts.subtract(ts.asarray([True]), ts.asarray([True])),
        lambda: repr(ts.Tensor.__new__(ts.Tensor)), lambda: repr(ts.DType.__new__(ts.DType)),
        lambda: ts.broadcast_to(t, (2, 2, 3)).__setitem__(0, 1.0), lambda: t[(None,) * 100_000],
        lambda: ts.sum(t, axis=2), lambda: ts.softmax(t, axis=-3), lambda: ts.argmax(t, axis=9),
        lambda: ts.sum(t, axis=(0, 0)), lambda: t.reshape(4, 2), lambda: t[2], lambda: t[0, 0, 0], lambda: t[[5]],
        lambda: t[ts.asarray([True, False, True])], lambda: ts.sum("abc"), lambda: ts.add(object(), 1),
        lambda: ts.sum(t, axis="x"), lambda: ts.asarray(np.zeros(2, np.clongdouble)),
        lambda: ts.asarray(np.array([None])),
        lambda: ts.asarray(np.array(["s"])), lambda: ts.asarray([1], device="cuda"),
        lambda: ts.max(ts.asarray(np.zeros(0))), lambda: int(ts.asarray([1, 2])),
        lambda: ts.broadcast_to(ts.asarray(1.0), (2**61,)).copy(),
        lambda: ts.broadcast_to(ts.asarray(1.0), (2**62, 2**62, 4)).reshape(-1),
        lambda: ts.asarray(np.zeros(0)).reshape(2**62, 2**62).sum(),
        lambda: t[2**70], lambda: t[-(2**63)], lambda: t[..., ...], lambda: t[::0],
        lambda: t.permute_dims(2**62, 0), lambda: t.expand_dims(-(2**62)), lambda: t.squeeze(2**62),
        lambda: t.__dlpack__(dl_device=5), lambda: t.__dlpack__(dl_device=(1,)), lambda: t.__dlpack__(max_version=5),
        lambda: t.__dlpack__(max_version=()), lambda: t.__dlpack__(stream=3),
        lambda: ts.from_dlpack(t.__dlpack__()), lambda: ts.less(ts.asarray([1j]), 1),
        lambda: t.__setitem__(0, np.zeros(7)), lambda: t.__setitem__((0, 0, 0), 1), lambda: t.__setitem__(0, "x"),
        lambda: ts.asarray([1], dtype=ts.uint8) + 300, lambda: ts.asarray([[1], [1, 2]]),
        lambda: ts.dtype(None), lambda: ts.dtype([1]), lambda: ts.asarray(t, dtype=ts.int32, copy=False),
        lambda: ts.reshape(t.T, (6,), copy=False), lambda: ts.matmul(ts.asarray(1.0), t),
    ]
    survived = 0
    for i, call in enumerate(bad_calls):
        try:
            call()
        except SystemError as e:
            raise SystemExit(f"call {i} raised SystemError (an internal error), not a proper exception: {e}")
        except Exception:
            survived += 1
        else:
            raise SystemExit(f"call {i} did not raise")

    # Things that are not errors but must not crash either.
    v = ts.add(t, 1).numpy(); gc.collect(); assert v[1, 2] == 6.0
    for _ in range(50):
        cap = ts.asarray(np.arange(100.0)).__dlpack__(max_version=(1, 0))  # never consumed: freed by the capsule
        del cap
    x = ts.asarray(np.arange(10.0)); x[1:] = x[:-1]; assert x.tolist() == [0.0, 0, 1, 2, 3, 4, 5, 6, 7, 8]
    a = np.arange(4.0); y = ts.from_dlpack(a); del a; gc.collect(); assert y.tolist() == [0.0, 1.0, 2.0, 3.0]
    m = memoryview(ts.add(t, 0)); gc.collect(); assert m.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    gc.collect()
    print(f"survived {survived} of {len(bad_calls)}")
    """
)


def test_bad_calls_do_not_crash_a_fresh_interpreter() -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", SURVIVAL_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"exit status {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    match = re.search(r"survived (\d+) of (\d+)", proc.stdout)
    assert match and match.group(1) == match.group(2), proc.stdout
