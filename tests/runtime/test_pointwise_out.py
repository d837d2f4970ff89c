"""out= on the pointwise functions (numpy's ufunc keyword): the result written into a given tensor.

The outputs here are zero-copy views of numpy buffers filled with a canary, so the tests see every byte the op
wrote, inside the view and around it.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import tensorsmith as ts
from tensorsmith_forge.catalog.model import OpSpec, load_catalog
from tensorsmith_forge.validators import inputs

from tests.helpers import op_function

ROOT = Path(__file__).resolve().parents[2]
POINTWISE = [s for s in load_catalog(ROOT).ops if s.family.name == "pointwise"]
SALT = b"tensorsmith-out-tests"
NATIVE = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
          "float64"]  # fmt: skip
CANARY = 0xA5


def canary_buffer(n: int, dtype) -> np.ndarray:
    buffer = np.empty(n, dtype=np.dtype(dtype))
    buffer.view(np.uint8)[...] = CANARY
    return buffer


def raw(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def untouched(buffer: np.ndarray, written: np.ndarray) -> bool:
    """Whether every byte of `buffer` outside the elements marked in `written` still holds the canary."""
    elements = buffer.view(np.uint8).reshape(buffer.size, buffer.itemsize)
    return bool((elements[~written.reshape(-1)] == CANARY).all())


def fresh_results(spec: OpSpec, dtype: str):
    """(input tensors, fresh result) for the op's shown cases in `dtype` that do not raise."""
    op = op_function(spec.name)
    for case in inputs.generate_cases(spec, dtype, salt=SALT, hidden=False):
        if case.kwargs:
            continue
        tensors = [ts.asarray(a) for a in case.arrays()]
        try:
            result = np.array(op(*tensors), copy=True)
        except (ValueError, TypeError, OverflowError):
            continue
        yield tensors, result


@pytest.mark.parametrize(("spec", "dtype"), [pytest.param(s, d, id=f"{s.name}-{d}") for s in POINTWISE for d in s.dtypes])
def test_out_holds_exactly_the_fresh_result_and_nothing_around_it_changes(spec: OpSpec, dtype: str) -> None:
    op = op_function(spec.name)
    checked = 0
    for tensors, fresh in fresh_results(spec, dtype):
        n = fresh.size
        # Contiguous, at an offset (the kernel writes it), then every other element backwards (a temporary is
        # written, then copied in).
        for layout in ("contiguous", "strided"):
            buffer = canary_buffer(2 * n + 3, fresh.dtype)
            view = buffer[1 : n + 1] if layout == "contiguous" else buffer[2 * n + 1 : 0 : -2][:n]
            view = view.reshape(fresh.shape)
            out = ts.asarray(view)
            assert op(*tensors, out=out) is out
            assert np.array_equal(raw(view), raw(fresh)), f"{layout}: not the fresh result's bytes"
            written = np.zeros(buffer.size, dtype=bool)
            written[1 : n + 1] = layout == "contiguous"
            if layout == "strided":
                written[2 * n + 1 : 0 : -2][:n] = True
            assert untouched(buffer, written), f"{layout}: bytes outside out changed"
        checked += 1
    assert checked > 0, f"no case of {spec.name}[{dtype}] ran"


def test_large_contiguous_out_takes_the_threaded_streamed_path() -> None:
    # 16 MiB of output: split over threads and written with non-temporal stores (TS_STREAM_MIN_BYTES).
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(1 << 22).astype(np.float32) for _ in range(2))
    buffer = canary_buffer((1 << 22) + 32, np.float32)
    out = ts.asarray(buffer[16:-16])
    assert ts.add(ts.asarray(a), ts.asarray(b), out=out) is out
    assert np.array_equal(buffer[16:-16], a + b)
    assert untouched(buffer, np.r_[np.zeros(16, bool), np.ones(1 << 22, bool), np.zeros(16, bool)])


@pytest.mark.parametrize("result_dtype", NATIVE)
def test_casting_to_out_follows_numpys_same_kind_rule(result_dtype: str) -> None:
    x = np.array([0, 1, 3, 5], dtype=result_dtype)
    for out_dtype in NATIVE:
        ours = ts.asarray(np.zeros(4, dtype=out_dtype))
        theirs = np.zeros(4, dtype=out_dtype)
        if np.can_cast(result_dtype, out_dtype, casting="same_kind"):
            with np.errstate(all="ignore"):
                np.add(x, x, out=theirs)
            ts.add(ts.asarray(x), ts.asarray(x), out=ours)
            assert np.array_equal(np.asarray(ours), theirs), out_dtype
        else:
            with pytest.raises(TypeError, match=rf"add: cannot cast the {result_dtype} result to out's dtype {out_dtype} "
                               "with casting rule 'same_kind'"):  # fmt: skip
                ts.add(ts.asarray(x), ts.asarray(x), out=ours)
            assert not np.asarray(ours).any(), "a refused out was written"


def test_the_result_is_cast_once_from_the_computed_dtype() -> None:
    # int8 + int8 wraps in int8 before the cast to float32, as numpy's int8 loop does.
    x = np.array([100, -100, 7], dtype=np.int8)
    theirs = np.add(x, x, out=np.zeros(3, dtype=np.float32))
    ours = ts.add(ts.asarray(x), ts.asarray(x), out=ts.asarray(np.zeros(3, dtype=np.float32)))
    assert np.array_equal(np.asarray(ours), theirs)
    # bfloat16 out: float32 results rounded once.
    y = np.array([1.0 / 3.0, 1e-3, 300.5], dtype=np.float32)
    ours = ts.multiply(ts.asarray(y), 3, out=ts.asarray(np.zeros(3, dtype=ml_dtypes.bfloat16)))
    assert np.array_equal(np.asarray(ours).astype(np.float32), (y * 3).astype(ml_dtypes.bfloat16).astype(np.float32))


def test_out_may_have_a_shape_the_inputs_broadcast_to() -> None:
    x = np.arange(3.0)
    out = ts.asarray(np.zeros((2, 3)))
    ts.add(ts.asarray(x), 1.0, out=out)
    assert np.array_equal(np.asarray(out), np.add(x, 1.0, out=np.zeros((2, 3))))
    ts.negative(2.0, out=out)  # a scalar fills it
    assert np.array_equal(np.asarray(out), np.full((2, 3), -2.0))


def test_an_out_of_the_wrong_shape_is_refused_and_left_alone() -> None:
    x = ts.asarray(np.ones((2, 3)))
    for shape in [(3,), (4,), (2, 3, 1), (1, 3)]:
        out = np.zeros(shape)
        with pytest.raises(ValueError, match=r"shape"):
            ts.add(x, x, out=ts.asarray(out))
        assert not out.any()
    out = ts.asarray(np.zeros(3))
    with pytest.raises(ValueError, match=r"add: out has shape \(3,\), which is not the broadcast shape \(2, 3\)"):
        ts.add(x, x, out=out)


def test_inputs_in_outs_memory_are_read_before_they_are_overwritten() -> None:
    base = np.arange(10.0)
    expected = base.copy()
    np.add(expected[:-1], expected[1:], out=expected[1:])  # numpy: as if the inputs were copied first
    x = ts.asarray(base)
    ts.add(x[:-1], x[1:], out=x[1:])
    assert np.array_equal(base, expected)

    # In place, the same view as input and output.
    base = np.arange(6.0).reshape(2, 3)
    x = ts.asarray(base)
    assert ts.multiply(x, x, out=x) is x
    assert np.array_equal(base, np.arange(6.0).reshape(2, 3) ** 2)

    # Two tensors made separately over one numpy buffer: the overlap is found through their memory.
    base = np.arange(8, dtype=np.int32)
    expected = base.copy()
    np.subtract(expected[::-1], 1, out=expected)
    ts.subtract(ts.asarray(base[::-1]), 1, out=ts.asarray(base))
    assert np.array_equal(base, expected)

    # A broadcast input read while the output is written row by row.
    base = np.arange(6.0).reshape(2, 3)
    expected = base + base[0]
    x = ts.asarray(base)
    ts.add(x, x[0], out=x)
    assert np.array_equal(base, expected)


def test_bad_out_arguments_are_clear_errors() -> None:
    x = ts.asarray(np.ones(3, dtype=np.float32))
    with pytest.raises(TypeError, match=r"add: out must be a tensorsmith Tensor, not ndarray"):
        ts.add(x, x, out=np.zeros(3, dtype=np.float32))
    with pytest.raises(TypeError, match=r"add: out must be a tensorsmith Tensor, not list"):
        ts.add(x, x, out=[0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"add: out must be a Tensor or a tuple of one, got a tuple of 2"):
        ts.add(x, x, out=(x, x))
    out = ts.asarray(np.zeros(3, dtype=np.float32))
    assert ts.add(x, x, out=(out,)) is out  # numpy's tuple form
    assert np.array_equal(np.asarray(out), np.full(3, 2.0, np.float32))
    with pytest.raises(ValueError, match=r"add: out is a broadcast view \(a stride-0 axis\)"):
        ts.add(x, x, out=ts.broadcast_to(ts.asarray(np.zeros(1, dtype=np.float32)), (3,)))
    with pytest.raises(TypeError):  # positional: out= is keyword-only, as in numpy
        ts.add(x, x, out)
    with pytest.raises(TypeError):  # methods and operators have no out=
        x.add(x, out=out)


def test_zero_size_and_zero_dim_outs() -> None:
    out = ts.asarray(np.zeros((0, 3), dtype=np.float32))
    assert ts.add(ts.asarray(np.ones((0, 3), dtype=np.float32)), 1, out=out) is out
    scalar = np.zeros((), dtype=np.float64)
    ts.exp(ts.asarray(np.array(1.0)), out=ts.asarray(scalar))
    assert scalar == np.asarray(ts.exp(ts.asarray(np.array(1.0))))  # the kernel's own result (within 1 ulp of e)
    assert abs(float(scalar) - np.exp(1.0)) <= np.spacing(np.exp(1.0))


@pytest.mark.skipif(not ts.cuda.is_available(), reason="no CUDA device: ts.cuda.is_available() is False "
                    "(scripts/device_check.sh runs this on a GPU)")  # fmt: skip
def test_out_on_cuda() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = ts.asarray(a).to("cuda")
    out = ts.asarray(np.zeros((3, 4), dtype=np.float32)).to("cuda")
    assert ts.add(x, 1, out=out) is out
    assert np.array_equal(np.asarray(out.cpu()), a + 1)
    strided = ts.asarray(np.zeros((3, 8), dtype=np.float64)).to("cuda")[:, ::2]
    ts.multiply(x, x, out=strided)
    assert np.array_equal(np.asarray(strided.cpu()), (a * a).astype(np.float64))
    with pytest.raises(ValueError, match=r"add: out is on cpu, the inputs on cuda:0"):
        ts.add(x, x, out=ts.asarray(np.zeros((3, 4), dtype=np.float32)))
