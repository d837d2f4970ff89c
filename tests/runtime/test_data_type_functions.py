"""The Array API's data type functions (astype, can_cast, finfo, iinfo, isdtype, result_type) against numpy,
and against what the runtime's own ops do with the same operands."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import tensorsmith as ts

DTYPES = [ts.bool, ts.int8, ts.int16, ts.int32, ts.int64, ts.uint8, ts.uint16, ts.uint32, ts.uint64, ts.float16,
          ts.bfloat16, ts.float32, ts.float64]  # fmt: skip
NUMPY_DTYPES = [d for d in DTYPES if d != ts.bfloat16]  # numpy cannot promote ml_dtypes' bfloat16 with others
PAIRS = list(itertools.product(DTYPES, DTYPES))


def ids(pair: tuple[ts.DType, ts.DType]) -> str:
    return f"{pair[0].name}-{pair[1].name}"


@pytest.mark.parametrize("pair", PAIRS, ids=[ids(p) for p in PAIRS])
def test_result_type_is_what_add_gives(pair: tuple[ts.DType, ts.DType]) -> None:
    a, b = pair
    got = ts.result_type(a, b)
    assert got == ts.promote_types(a, b)
    assert got == ts.add(ts.zeros((2,), dtype=a), ts.zeros((2,), dtype=b)).dtype
    assert ts.result_type(ts.zeros((3,), dtype=a), b) == got  # a tensor stands for its dtype
    if a in NUMPY_DTYPES and b in NUMPY_DTYPES:
        assert got.name == np.result_type(np.dtype(a.name), np.dtype(b.name)).name


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("scalar", [True, 7, 2.5], ids=["bool", "int", "float"])
def test_python_scalars_are_weak_as_the_ops_take_them(dtype: ts.DType, scalar: object) -> None:
    got = ts.result_type(dtype, scalar)
    assert got == ts.add(ts.ones((2,), dtype=dtype), scalar).dtype
    if dtype in NUMPY_DTYPES:
        assert got.name == np.result_type(np.dtype(dtype.name), scalar).name


def test_result_type_tells_weak_kinds_apart_one_after_another() -> None:
    """result_type remembers its answers by kind of weak scalar: equal values of different kinds (True, 1,
    1.0, 1j compare equal) must not share an answer, in whichever order they are asked."""
    for dtype in NUMPY_DTYPES:
        for scalars in itertools.permutations([True, 1, 1.0, 1j]):
            for scalar in scalars:
                want = np.result_type(np.dtype(dtype.name), scalar).name
                assert ts.result_type(dtype, scalar).name == want, (dtype.name, scalar)


def test_result_type_of_many_and_its_errors() -> None:
    assert ts.result_type(ts.int8, ts.uint8, ts.float16).name == np.result_type(np.int8, np.uint8, np.float16).name
    assert ts.result_type(ts.bool, 1, 1.0).name == np.result_type(np.bool_, 1, 1.0).name
    assert ts.result_type(ts.bfloat16, ts.int8, 1.0) == ts.bfloat16 and ts.result_type(ts.bfloat16, ts.int16) == ts.float32
    with pytest.raises(ValueError, match="at least one dtype or tensor"):
        ts.result_type()
    with pytest.raises(ValueError, match="besides Python scalars"):
        ts.result_type(1, 2.0)
    with pytest.raises(TypeError, match="argument 1 must be a tensorsmith dtype or tensor, not str"):
        ts.result_type(ts.int8, "int8")


@pytest.mark.parametrize("pair", PAIRS, ids=[ids(p) for p in PAIRS])
def test_can_cast_is_safe_casting(pair: tuple[ts.DType, ts.DType]) -> None:
    a, b = pair
    got = ts.can_cast(a, b)
    assert got is (ts.promote_types(a, b) == b)
    assert ts.can_cast(ts.zeros((1,), dtype=a), b) is got
    if a in NUMPY_DTYPES and b in NUMPY_DTYPES:
        assert got is bool(np.can_cast(np.dtype(a.name), np.dtype(b.name), casting="safe"))


@pytest.mark.parametrize("dtype", [ts.float16, ts.bfloat16, ts.float32, ts.float64], ids=lambda d: d.name)
def test_finfo(dtype: ts.DType) -> None:
    info, want = ts.finfo(dtype), ml_dtypes.finfo(np.dtype(dtype.name))
    assert (info.bits, info.eps, info.max, info.min, info.smallest_normal) == (
        want.bits, float(want.eps), float(want.max), float(want.min), float(want.smallest_normal))  # fmt: skip
    assert info.dtype == dtype and ts.finfo(ts.ones((2,), dtype=dtype)) == info
    assert isinstance(info.eps, float) and isinstance(info.bits, int)


@pytest.mark.parametrize("dtype", [ts.int8, ts.int16, ts.int32, ts.int64, ts.uint8, ts.uint16, ts.uint32, ts.uint64],
                         ids=lambda d: d.name)  # fmt: skip
def test_iinfo(dtype: ts.DType) -> None:
    info, want = ts.iinfo(dtype), np.iinfo(np.dtype(dtype.name))
    assert (info.bits, info.max, info.min, info.dtype) == (want.bits, want.max, want.min, dtype)


def test_info_of_the_wrong_kind_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="finfo: int32 is not a floating dtype"):
        ts.finfo(ts.int32)
    with pytest.raises(TypeError, match="iinfo: float32 is not an integer dtype"):
        ts.iinfo(ts.float32)
    with pytest.raises(TypeError, match="iinfo: bool is not an integer dtype"):
        ts.iinfo(ts.bool)


KINDS = {
    "bool": np.bool_, "signed integer": np.signedinteger, "unsigned integer": np.unsignedinteger,
    "integral": np.integer, "real floating": np.floating, "complex floating": np.complexfloating, "numeric": np.number,
}  # fmt: skip


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("kind", KINDS)
def test_isdtype_kinds_agree_with_numpy(dtype: ts.DType, kind: str) -> None:
    assert ts.isdtype(dtype, kind) is np.isdtype(np.dtype(dtype.name), kind)


def test_isdtype_of_bfloat16_dtypes_and_tuples() -> None:
    assert ts.isdtype(ts.bfloat16, "real floating") and ts.isdtype(ts.bfloat16, "numeric")
    assert not ts.isdtype(ts.bfloat16, "integral")
    assert ts.isdtype(ts.int8, ts.int8) and not ts.isdtype(ts.int8, ts.int16)
    assert ts.isdtype(ts.uint8, ("bool", "unsigned integer")) and not ts.isdtype(ts.uint8, ("bool", ts.int8))
    with pytest.raises(ValueError, match="unknown kind 'integer'"):
        ts.isdtype(ts.int8, "integer")
    with pytest.raises(TypeError, match="dtype must be a tensorsmith dtype"):
        ts.isdtype("int8", "integral")


def test_astype_converts_copies_and_may_not() -> None:
    x = ts.asarray([1.7, -2.5, 300.0])
    y = ts.astype(x, ts.uint8)
    np.testing.assert_array_equal(np.asarray(y), np.asarray([1.7, -2.5, 300.0]).astype(np.uint8))
    same = ts.astype(x, ts.float64, copy=False)
    same[0] = 5.0
    assert float(x[0]) == 5.0  # no copy: the same memory
    copied = ts.astype(x, ts.float64)
    copied[0] = 7.0
    assert float(x[0]) == 5.0 and float(copied[0]) == 7.0
    with pytest.raises(TypeError, match="astype: x must be a tensorsmith tensor, not list"):
        ts.astype([1, 2], ts.int8)
