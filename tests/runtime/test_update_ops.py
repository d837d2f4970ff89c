"""The update family's ops (an optimizer's fused step): each updates its state tensors in place in one call, as
its spec's float64 reference computes them, and refuses what it cannot update in place."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import tensorsmith as ts
from tensorsmith import _C

RNG = np.random.default_rng(20261205)
ADAMW = {"lr": 0.01, "weight_decay": 0.1, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
         "bias_correction1": 1 - 0.9**3, "bias_correction2_sqrt": math.sqrt(1 - 0.999**3)}  # fmt: skip
SGD = {"lr": 0.05, "weight_decay": 0.01, "momentum": 0.9}


def adamw_reference(p, m, v, g, lr, weight_decay, beta1, beta2, eps, bias_correction1, bias_correction2_sqrt):
    m = m + (1 - beta1) * (g - m)
    v = beta2 * v + (1 - beta2) * g * g
    return p * (1 - lr * weight_decay) - lr / bias_correction1 * m / (np.sqrt(v) / bias_correction2_sqrt + eps), m, v


def momentum_reference(p, b, g, lr, weight_decay, momentum, nesterov=False):
    b = momentum * b + (g + weight_decay * p)
    step = g + weight_decay * p + momentum * b if nesterov else b
    return p - lr * step, b


def draw(shape, dtype, positive=False):
    values = RNG.standard_normal(shape)
    return (np.abs(values) if positive else values).astype(dtype)


def wide(*arrays):
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def assert_step(got, want, operands, dtype) -> None:
    """`got` near the float64 reference rounded to `dtype`, measured at the larger of the result and the element's
    largest operand (a step's rounding is relative to its terms, not to a result that cancels to near zero): the
    step in double rounded once is within an ulp or two of it below float64, a dozen roundings in float64."""
    expected = want.astype(dtype).astype(np.float64)
    scale = np.maximum(np.abs(expected), np.max([np.abs(a) for a in wide(*operands)], axis=0))
    error = np.abs(np.asarray(got).astype(np.float64) - expected)
    ulps = 16 if np.dtype(dtype) == np.float64 else 2
    assert np.all(error <= ulps * float(ml_dtypes.finfo(dtype).eps) * scale), np.max(error / np.maximum(scale, 1e-300))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("shape", [(), (0,), (7,), (33, 5), (300_001,)], ids=["0d", "empty", "7", "33x5", "threaded"])
def test_adamw_update_is_the_reference_rounded_once_in_place(dtype, shape) -> None:
    arrays = [draw(shape, dtype), draw(shape, dtype), draw(shape, dtype, positive=True), draw(shape, dtype)]
    p, m, v, g = (ts.asarray(a.copy()) for a in arrays)
    returned = _C._adamw_update(p, m, v, g, **ADAMW)
    assert returned is p  # the parameter object itself, as PyTorch's in-place ops return self
    want = adamw_reference(*wide(*arrays), **ADAMW)
    for got, expected in zip((p, m, v), want, strict=True):
        assert_step(got, expected, arrays, dtype)
    np.testing.assert_array_equal(np.asarray(g), arrays[3])  # the gradient is read only


@pytest.mark.parametrize(("op", "nesterov"), [("_sgd_momentum_update", False), ("_sgd_nesterov_update", True)])
def test_sgd_momentum_updates_parameter_and_buffer(op, nesterov) -> None:
    arrays = [draw((40, 3), np.float32) for _ in range(3)]
    p, b, g = (ts.asarray(a.copy()) for a in arrays)
    getattr(_C, op)(p, b, g, **SGD)
    want_p, want_b = momentum_reference(*wide(*arrays), **SGD, nesterov=nesterov)
    assert_step(p, want_p, arrays, np.float32)
    assert_step(b, want_b, arrays, np.float32)


def test_sgd_update_without_state() -> None:
    p0, g0 = draw((9,), np.float64), draw((9,), np.float64)
    p, g = ts.asarray(p0.copy()), ts.asarray(g0)
    _C._sgd_update(p, g, lr=0.1, weight_decay=0.5)
    assert_step(p, p0 - 0.1 * (g0 + 0.5 * p0), [p0, g0], np.float64)


def test_a_strided_state_is_updated_where_it_lies() -> None:
    # A transposed parameter (a view of another block) and a strided gradient: the engine updates the
    # parameter through a contiguous copy and writes it back, so the caller's view and its base both see it.
    base = ts.asarray(draw((4, 6), np.float64))
    before = np.asarray(base).copy()
    param = base.mT  # (6, 4), not contiguous
    buffer = ts.zeros((6, 4), dtype=ts.float64)
    grad_base = draw((6, 8), np.float64)
    grad = ts.asarray(grad_base)[:, ::2]
    _C._sgd_momentum_update(param, buffer, grad, **SGD)
    want_p, want_b = momentum_reference(before.T, np.zeros((6, 4)), grad_base[:, ::2], **SGD)
    operands = [before.T, grad_base[:, ::2]]
    assert_step(np.asarray(base).T, want_p, operands, np.float64)
    assert_step(buffer, want_b, operands, np.float64)


def test_an_update_moves_the_version_of_its_state_only() -> None:
    p, m, v, g = (ts.ones((3,), dtype=ts.float32) for _ in range(4))
    versions = [t._version for t in (p, m, v, g)]
    _C._adamw_update(p, m, v, g, **ADAMW)
    assert [t._version for t in (p, m, v, g)] == [n + 1 for n in versions[:3]] + [versions[3]]


def test_a_tensor_saved_for_backward_then_stepped_is_refused_in_backward() -> None:
    w = ts.ones((3,), dtype=ts.float32).requires_grad_()
    y = ts.sum(w * w)  # saves w
    with ts.no_grad():
        _C._sgd_update(w, ts.ones((3,), dtype=ts.float32), lr=0.1, weight_decay=0.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda p, g: _C._sgd_update(np.ones(3, np.float32), g, lr=0.1, weight_decay=0.0), TypeError,
         "_sgd_update: param must be a tensorsmith Tensor, not ndarray"),
        (lambda p, g: _C._sgd_update(p, [1.0, 2.0, 3.0], lr=0.1, weight_decay=0.0), TypeError, "grad must be a tensorsmith Tensor"),
        (lambda p, g: _C._sgd_update(p, ts.ones((4,), dtype=ts.float32), lr=0.1, weight_decay=0.0), ValueError,
         r"every tensor must have the parameter's shape \(3,\), tensor 1 has \(4,\)"),
        (lambda p, g: _C._sgd_update(p, ts.ones((3,), dtype=ts.float64), lr=0.1, weight_decay=0.0), TypeError,
         "every tensor must have the parameter's dtype float32, tensor 1 is float64"),
        (lambda p, g: _C._sgd_update(ts.ones((3,), dtype=ts.int64), ts.ones((3,), dtype=ts.int64), lr=0.1, weight_decay=0.0),
         NotImplementedError, "_sgd_update is not implemented for inputs of dtype int64"),
        (lambda p, g: _C._sgd_momentum_update(p, p, g, **SGD), ValueError, "state tensor 0 shares memory with tensor 1"),
        (lambda p, g: _C._sgd_momentum_update(p, ts.broadcast_to(ts.zeros((1,), dtype=ts.float32), (3,)), g, **SGD),
         ValueError, "state tensor 1 is a read-only"),
        (lambda p, g: _C._sgd_update(p, g, lr=0.1), TypeError, "weight_decay"),
    ],
    ids=["numpy_state", "list_gradient", "shape", "dtype", "integer", "aliased_states", "broadcast_state", "missing_scalar"],
)
def test_what_cannot_be_updated_in_place_is_refused_and_left_unchanged(call, error, message) -> None:
    p, g = ts.ones((3,), dtype=ts.float32), ts.ones((3,), dtype=ts.float32)
    with pytest.raises(error, match=message):
        call(p, g)
    np.testing.assert_array_equal(np.asarray(p), np.ones(3, np.float32))


def test_a_state_that_requires_grad_is_refused_while_grad_mode_is_on() -> None:
    w = ts.ones((3,), dtype=ts.float32).requires_grad_()
    with pytest.raises(RuntimeError, match="cannot be written in place while grad mode is on"):
        _C._sgd_update(w, ts.ones((3,), dtype=ts.float32), lr=0.1, weight_decay=0.0)
    with ts.no_grad():
        _C._sgd_update(w, ts.ones((3,), dtype=ts.float32), lr=0.5, weight_decay=0.0)
    np.testing.assert_array_equal(np.asarray(w.detach()), np.full(3, 0.5, np.float32))
