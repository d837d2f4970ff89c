"""In-place operators (x += y and friends) from the specs' `operators`: numpy's semantics, where the op
writes into its left operand through out= (same_kind casting, broadcasting into x's shape, views write
through, aliasing is safe)."""

from __future__ import annotations

import operator
from pathlib import Path

import numpy as np
import pytest

import tensorsmith as ts
from tensorsmith_forge.catalog.model import INPLACE_OPERATORS, load_catalog

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(ROOT)
INPLACE = [(spec, dunder) for spec in CATALOG.ops for dunder in spec.operators if dunder in INPLACE_OPERATORS]
PYTHON = {"__iadd__": operator.iadd, "__isub__": operator.isub, "__imul__": operator.imul,
          "__itruediv__": operator.itruediv, "__ipow__": operator.ipow, "__ifloordiv__": operator.ifloordiv,
          "__imod__": operator.imod, "__iand__": operator.iand, "__ior__": operator.ior, "__ixor__": operator.ixor,
          "__ilshift__": operator.ilshift, "__irshift__": operator.irshift, "__imatmul__": operator.imatmul}  # fmt: skip


def test_every_inplace_operator_is_declared_by_some_spec() -> None:
    assert {dunder for _, dunder in INPLACE} == set(INPLACE_OPERATORS)


@pytest.mark.parametrize(("left", "right"), [("float32", "float32"), ("float64", "int8"), ("int32", "int16"),
                                             ("float32", "float64"), ("int64", "bool")])  # fmt: skip
@pytest.mark.parametrize(("spec", "dunder"), INPLACE, ids=[d for _, d in INPLACE])
def test_inplace_matches_numpy(spec, dunder: str, left: str, right: str) -> None:
    rng = np.random.default_rng(7)
    a = (rng.integers(1, 5, size=(3, 4))).astype(left)
    b = (rng.integers(1, 3, size=(4, 4) if dunder == "__imatmul__" else (4,))).astype(right)  # x @= y keeps x's shape
    expected = a.copy()
    try:
        PYTHON[dunder](expected, b)
    except TypeError as refused:  # numpy refuses the cast (int32 /= ...) or has no loop (float &= ...): so must we
        no_loop = "not supported for the input types" in str(refused)  # the runtime: NotImplementedError (no kernel)
        with pytest.raises((TypeError, NotImplementedError) if no_loop else TypeError):
            PYTHON[dunder](ts.asarray(a), ts.asarray(b))
        return
    t = ts.asarray(a.copy())
    before = t
    t = PYTHON[dunder](t, ts.asarray(b))
    assert t is before  # the same tensor, written in place
    assert t.dtype == ts.dtype(expected.dtype)
    np.testing.assert_allclose(np.asarray(t), expected, rtol=1e-6)


def test_inplace_writes_through_views_and_survives_aliasing() -> None:
    base = ts.asarray(np.arange(6.0).reshape(2, 3))
    row = base[1]
    row += 10  # a view: the base sees it
    assert np.asarray(base).tolist() == [[0, 1, 2], [13, 14, 15]]
    base *= base[::-1]  # reads overlap the output: computed from a copy, as numpy does
    assert np.asarray(base).tolist() == [[0, 14, 30], [0, 14, 30]]
    x = ts.asarray(np.ones(3))
    x += ts.asarray(np.arange(3.0)) * 2
    assert np.asarray(x).tolist() == [1, 3, 5]


def test_inplace_errors_follow_numpy() -> None:
    x = ts.asarray(np.ones(3))
    with pytest.raises(ValueError):
        x += ts.asarray(np.ones((2, 3)))  # the result does not fit x's shape
    i = ts.asarray(np.arange(3))
    with pytest.raises(TypeError):
        i /= 2  # float64 into int64 is not same_kind
    view = ts.broadcast_to(ts.asarray(np.ones(3)), (2, 3))
    with pytest.raises(ValueError):
        view += 1  # a broadcast view shares its elements


def test_inplace_matmul_stores_the_product_as_numpy() -> None:
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(9.0).reshape(3, 3)
    t = ts.asarray(a.copy())
    same = t
    t @= ts.asarray(b)
    assert t is same and np.asarray(t).tolist() == (a @ b).tolist()
    with pytest.raises(ValueError, match="shape"):
        t @= ts.asarray(np.ones((3, 2)))  # (2, 3) @ (3, 2) is (2, 2): numpy refuses too
    i = ts.asarray(np.ones((2, 2), dtype=np.int32))
    with pytest.raises(TypeError, match="same_kind"):
        i @= ts.asarray(np.ones((2, 2)))
    view = ts.broadcast_to(ts.asarray(np.ones(2)), (2, 2))
    with pytest.raises(ValueError, match="read-only"):
        view @= ts.asarray(np.eye(2))
