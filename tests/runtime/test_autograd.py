"""Autograd: every op with derivative formulas passes gradcheck in float64 at the gate's derivative-check points;
the engine accumulates, frees, refuses in-place changes to saved tensors, differentiates twice, and names the
spec of an op that has no derivatives yet. Expected values come from finite differences and from numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorsmith as ts
from tensorsmith_forge.catalog.derivatives import tangent_name
from tensorsmith_forge.catalog.model import load_catalog
from tensorsmith_forge.validators.derivatives.check import checked_dtypes, sample_points

from tests.helpers import op_function

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(ROOT)
DIFFERENTIABLE = [s for s in (*CATALOG.ops, *CATALOG.composites) if s.derivatives and s.derivatives.differentiable]
CHECKED = [(s, dtype) for s in DIFFERENTIABLE for dtype in checked_dtypes(s)]  # float64, and complex128 where held


def leaf(values, dtype=ts.float64):
    t = ts.asarray(np.asarray(values, dtype=np.float64), dtype=dtype)
    t.requires_grad = True
    return t


def point_call(spec, args, options):
    """(call, tensors, owners) for a derivative-check point: `tensors` are the point's tensor arguments (each
    element of a list argument its own), `owners` the argument each belongs to, and `call(*tensors)` calls the
    runtime's op with them and the point's options as its signature passes them (variadic ones spread)."""
    function = op_function(spec.name)
    names = [a.name for a in spec.signature.arguments if (a.type.is_tensor or a.type.is_tensor_list) and a.name in args]
    counts = {n: len(args[n]) if isinstance(args[n], list) else None for n in names}
    owners = [n for n in names for _ in range(1 if counts[n] is None else counts[n])]
    tensors = [ts.asarray(p) for n in names for p in (args[n] if counts[n] is not None else [args[n]])]

    def call(*given_tensors):
        values, k = {}, 0
        for n in names:
            values[n] = list(given_tensors[k : k + counts[n]]) if counts[n] is not None else given_tensors[k]
            k += 1 if counts[n] is None else counts[n]
        positional, named = [], {}
        for a in spec.signature.arguments:
            if a.name not in values and a.name not in options:
                continue
            value = values[a.name] if a.name in values else options[a.name]
            if a.kind == "variadic":
                positional.extend(value)
            elif a.kind == "positional":
                positional.append(value)
            else:
                named[a.name] = value
        return function(*positional, **named)

    return call, tensors, owners


def flowing(spec) -> set[str]:
    return {d.input for d in spec.derivatives.formulas if d.differentiable}


@pytest.mark.parametrize(("spec", "dtype"), CHECKED, ids=[f"{s.name}-{d}" for s, d in CHECKED])
def test_op_passes_gradcheck_at_the_derivative_check_points(spec, dtype) -> None:
    """backward of the runtime's op against finite differences of the runtime's own forward, in float64 and,
    where the op takes complex numbers, complex128 (complex inputs, and real results of them: abs, real)."""
    checked = 0
    for args, options, described in sample_points(spec, dtype=dtype):
        call, tensors, owners = point_call(spec, args, options)
        for t, owner in zip(tensors, owners, strict=True):
            t.requires_grad = owner in flowing(spec)
        if not any(t.requires_grad for t in tensors):
            continue  # meshgrid() of no arrays: nothing to differentiate
        if spec.name == "std" and np.any(np.asarray(call(*tensors).detach()) == 0):
            continue  # sqrt's kink: std has no derivative where it is 0 (one element per row)
        assert ts.autograd.gradcheck(call, tensors), described
        checked += 1
    assert checked > 0



@pytest.mark.parametrize("dtype", [ts.float64, ts.float32, ts.float16])
@pytest.mark.parametrize("shape", [(1, 3, 1), (3, 5), (1,), (), (2, 4, 3, 5)])
def test_a_broadcast_input_gets_its_gradient_summed_to_its_shape(shape, dtype) -> None:
    """An input broadcast against (2, 4, 3, 5) (leading axes added, size-1 axes stretched, or none) gets the
    product's gradient summed over exactly those axes, in its own shape and dtype."""
    rng = np.random.default_rng(2)
    big, small = rng.standard_normal((2, 4, 3, 5)), rng.standard_normal(shape)
    x = leaf(small, dtype)
    ts.sum(x * ts.asarray(big, dtype=dtype)).backward()
    lead = 4 - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1)
    expected = np.sum(big.astype(np.dtype(str(dtype))), axis=axes, keepdims=True).reshape(shape)
    assert x.grad.shape == shape and x.grad.dtype == dtype
    np.testing.assert_allclose(np.asarray(x.grad).astype(np.float64), expected, rtol=1e-2 if dtype == ts.float16 else 1e-6)


@pytest.mark.parametrize(("batch", "n", "k", "m"), [((4, 3), 5, 6, 7), ((2,), 3, 0, 2), ((0,), 3, 4, 2), ((3, 0), 2, 0, 5)])
def test_a_matrix_shared_by_a_batch_gets_the_batch_sum_as_gradient(batch, n, k, m) -> None:
    """x @ w with w 2-D (a linear layer's weight): w's gradient is sum_b x_b^T g_b, computed as one product
    with the batch folded into the contraction; zero extents included (a reshape cannot infer them)."""
    rng = np.random.default_rng(3)
    x, w, g = rng.standard_normal((*batch, n, k)), rng.standard_normal((k, m)), rng.standard_normal((*batch, n, m))
    tx, tw = ts.asarray(x), ts.asarray(w)
    tx.requires_grad = tw.requires_grad = True
    (ts.matmul(tx, tw) * ts.asarray(g)).sum().backward()
    expected_w = np.tensordot(x, g, axes=(list(range(x.ndim - 1)), list(range(g.ndim - 1))))
    assert tw.grad.shape == (k, m) and tx.grad.shape == x.shape
    np.testing.assert_allclose(np.asarray(tw.grad), expected_w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(tx.grad), g @ w.T, rtol=1e-12, atol=1e-12)
    if x.size and w.size:
        assert ts.autograd.gradcheck(lambda a, b: ts.matmul(a, b), [tx, tw])


def test_graph_attributes_and_grad_mode() -> None:
    x = leaf([0.5, -1.0])
    y = ts.exp(x)
    assert x.is_leaf and x.grad_fn is None and not y.is_leaf
    assert y.requires_grad and y.grad_fn.name() == "ExpBackward"
    assert y.grad_fn.next_functions[0].name() == "AccumulateGrad"
    with ts.no_grad():
        z = ts.exp(x)
        with ts.enable_grad():
            assert ts.exp(x).requires_grad
    assert not z.requires_grad and z.grad_fn is None
    assert not ts.exp(x.detach()).requires_grad
    assert not (x > 0).requires_grad and not ts.argmax(x).requires_grad  # derivatives: none
    with pytest.raises(RuntimeError, match="floating-point"):
        ts.asarray([1, 2]).requires_grad = True
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False


def test_grad_returns_gradients_and_leaves_grad_untouched() -> None:
    x, w = leaf([1.0, 2.0, 3.0]), leaf([0.5, 0.25, 2.0])
    y = ts.sum(x * x * w)
    gx, gw = ts.autograd.grad(y, [x, w])
    np.testing.assert_allclose(np.asarray(gx), 2 * np.array([1.0, 2.0, 3.0]) * [0.5, 0.25, 2.0])
    np.testing.assert_allclose(np.asarray(gw), np.array([1.0, 4.0, 9.0]))
    assert x.grad is None and w.grad is None
    unused = leaf([1.0])
    with pytest.raises(RuntimeError, match="not used"):
        ts.autograd.grad(ts.sum(x * 2.0), [unused])
    assert ts.autograd.grad(ts.sum(x * 2.0), [unused], allow_unused=True) == (None,)


def test_double_backward_through_formulas() -> None:
    x = leaf([0.3, -0.7, 1.1])
    y = ts.sum(ts.tanh(x))
    (g,) = ts.autograd.grad(y, [x], create_graph=True)
    assert g.requires_grad
    (h,) = ts.autograd.grad(ts.sum(g), [x])
    t = np.tanh([0.3, -0.7, 1.1])
    np.testing.assert_allclose(np.asarray(g.detach()), 1 - t**2)
    np.testing.assert_allclose(np.asarray(h), -2 * t * (1 - t**2))


def test_a_freed_graph_and_a_modified_saved_tensor_raise() -> None:
    x = leaf([1.0, 2.0])
    y = ts.sum(ts.exp(x))
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()
    y2 = ts.sum(ts.exp(x))
    y2.backward(retain_graph=True)
    y2.backward()
    np.testing.assert_allclose(np.asarray(x.grad), 3 * np.exp([1.0, 2.0]))

    a = ts.asarray([1.0, 2.0], dtype=ts.float64)
    b = leaf([3.0, 4.0])
    out = ts.sum(a * b)  # multiply saves a for b's gradient
    a[0] = 10.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        out.backward()


def test_in_place_writes_to_tensors_that_require_grad_are_refused_outside_no_grad() -> None:
    w = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="in-place"):
        w += 1.0
    with pytest.raises(RuntimeError, match="in place|__setitem__"):
        w[0] = 3.0
    with pytest.raises(RuntimeError, match="out="):
        ts.add(w, 1.0, out=ts.zeros(2, dtype=ts.float64))
    with ts.no_grad():  # an optimizer's update
        w -= 0.5
    np.testing.assert_array_equal(np.asarray(w.detach()), [0.5, 1.5])
    assert w.requires_grad and w.is_leaf


def test_an_op_without_derivatives_names_its_spec_in_backward() -> None:
    """nextafter has no derivatives (as PyTorch's): its result requires grad, and backward raises naming the
    spec rather than losing a gradient."""
    missing = [s for s in CATALOG.ops if s.derivatives is None and "float64" in s.dtypes and s.family.name == "pointwise"]
    assert missing, "every pointwise op has derivatives now: pick another way to reach an op without them"
    spec = missing[0]
    x = leaf([1.0, 2.0, 3.0])
    y = op_function(spec.name)(*[x] * spec.arity)
    assert y.requires_grad
    with pytest.raises(NotImplementedError, match=f"derivative of {spec.name} is not implemented: {spec.path}"):
        ts.sum(y).backward()


def test_views_methods_and_indexing_differentiate() -> None:
    base = np.arange(12.0).reshape(3, 4)
    x = leaf(base)
    y = (x.T[1:, ::2] * 2.0).reshape(-1).sum() + x.mT.sum() + x[[0, 0, 2], 1].sum() + x.astype(ts.float32).sum()
    y.backward()
    expected = np.zeros((3, 4))
    expected.T[1:, ::2] += 2.0
    expected += 1.0  # mT
    expected[0, 1] += 2.0  # picked twice
    expected[2, 1] += 1.0
    expected += 1.0  # astype
    np.testing.assert_allclose(np.asarray(x.grad), expected)
    assert x.grad.dtype == ts.float64


BASIC_KEYS = [(Ellipsis, slice(0, 3)), (Ellipsis, slice(3, 6)), (Ellipsis, slice(6, 9)), (slice(1, None),),
              (slice(None, -1), slice(None, None, -2)), (1, 2), (None, Ellipsis, 4), (0,)]  # fmt: skip


@pytest.mark.parametrize("dtype", [ts.float64, ts.float32])
def test_basic_index_gradients_add_into_one_buffer(dtype) -> None:
    """Slices of one tensor (q, k and v of one projection; overlapping ones; an element; negative steps) each
    add their gradient at their key of the tensor's gradient, beside a dense gradient from x used whole."""
    rng = np.random.default_rng(5)
    base = rng.standard_normal((4, 5, 9))
    weights = [rng.standard_normal(np.empty((4, 5, 9))[key].shape) for key in BASIC_KEYS]
    x = leaf(base, dtype)
    loss = ts.sum(x * 0.5)
    for key, w in zip(BASIC_KEYS, weights, strict=True):
        loss = loss + ts.sum(x[key] * ts.asarray(w, dtype=dtype))
    loss.backward()
    expected = np.full(base.shape, 0.5)
    for key, w in zip(BASIC_KEYS, weights, strict=True):
        expected[key] += w
    assert x.grad.dtype == dtype and x.grad.shape == base.shape
    tolerance = 1e-6 if dtype == ts.float32 else 1e-12  # float32: the sums of up to five terms, rounded
    np.testing.assert_allclose(np.asarray(x.grad), expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("slice_first", [True, False])
def test_a_scattered_gradient_never_writes_into_a_gradient_another_input_holds(slice_first) -> None:
    """add's formulas hand the same gradient to both inputs: a slice's gradient reaching one of them after it
    must not be added into the tensor the other input holds too (either order of the two)."""
    w = np.arange(12.0).reshape(3, 4)
    x, b = leaf(np.ones((3, 4))), leaf(np.zeros((3, 4)))
    whole = ts.sum((x + b) * ts.asarray(w))
    piece = ts.sum(x[1:] * 3.0)
    (piece + whole if slice_first else whole + piece).backward()
    expected_x = w.copy()
    expected_x[1:] += 3.0
    np.testing.assert_array_equal(np.asarray(b.grad), w)
    np.testing.assert_array_equal(np.asarray(x.grad), expected_x)


def test_double_backward_through_basic_indexing() -> None:
    """The gradient of a slice, itself differentiated: d/dx sum((3 x^2)^2 on the slice) = 36 x^3 there."""
    base = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    x = leaf(base)
    (g,) = ts.autograd.grad(ts.sum(x[:, :2] ** 3), [x], create_graph=True)
    assert g.requires_grad
    (h,) = ts.autograd.grad(ts.sum(g * g), [x])
    expected = np.zeros_like(base)
    expected[:, :2] = 36 * base[:, :2] ** 3
    np.testing.assert_allclose(np.asarray(h), expected, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g.detach())[:, 2], 0.0)


def test_float32_training_step_matches_numpy() -> None:
    """A linear layer with softmax cross-entropy, float32: backward against the closed form."""
    rng = np.random.default_rng(0)
    xs, w0 = rng.standard_normal((8, 5)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)
    labels = rng.integers(0, 3, 8)
    w = leaf(w0, dtype=ts.float32)
    logp = ts.log_softmax(ts.asarray(xs) @ w, axis=1)
    onehot = ts.asarray(np.eye(3, dtype=np.float32)[labels])
    loss = -ts.mean(ts.sum(logp * onehot, axis=1))
    loss.backward()
    z = xs @ w0
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(w.grad), xs.T @ (p - np.eye(3)[labels]) / 8, rtol=1e-5, atol=1e-6)
    assert w.grad.dtype == ts.float32


def test_prod_gradient_is_right_where_elements_are_zero() -> None:
    x = leaf([[2.0, 0.0, 3.0], [0.0, 5.0, 0.0], [1.0, 4.0, 2.0]])
    ts.sum(ts.prod(x, axis=1) * ts.asarray([1.0, 1.0, 0.5], dtype=ts.float64)).backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [4.0, 1.0, 2.0]])


def test_sort_gradient_follows_each_value_to_its_position() -> None:
    x = leaf([[3.0, 1.0, 2.0], [0.5, -1.0, 4.0]])
    weights = ts.asarray([[10.0, 20.0, 30.0], [1.0, 2.0, 3.0]], dtype=ts.float64)
    ts.sum(ts.sort(x, axis=1, descending=True) * weights).backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [[10.0, 30.0, 20.0], [2.0, 3.0, 1.0]])


def test_out_is_refused_only_where_a_gradient_would_be_lost() -> None:
    w = leaf([1.0, -2.0])
    flags = ts.zeros(2, dtype=ts.bool)
    ts.greater(w, 0.0, out=flags)  # not differentiable: out= is fine
    np.testing.assert_array_equal(np.asarray(flags), [True, False])
    with pytest.raises(RuntimeError, match="out="):
        ts.exp(w, out=ts.zeros(2, dtype=ts.float64))


def test_cumulative_prod_gradient_is_right_where_elements_are_zero() -> None:
    """One zero, two zeros, a zero first and none, along each axis and with the initial one: backward against
    finite differences (cumulative products are polynomials, smooth at zeros too)."""
    values = np.array([[2.0, 0.0, 3.0, 0.5], [0.0, 5.0, 0.0, 2.0], [1.5, 4.0, 2.0, -1.0]])
    for axis in (0, 1):
        for include_initial in (False, True):
            x = leaf(values)
            assert ts.autograd.gradcheck(lambda t, a=axis, i=include_initial: ts.cumulative_prod(t, axis=a, include_initial=i), [x])
    x = leaf([0.0, 0.0, 2.0])  # after the first zero nothing flows; at it, the products with it taken as one
    ts.sum(ts.cumulative_prod(x)).backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [1.0, 0.0, 0.0])



def test_cumulative_prod_forward_formula_is_right_where_elements_are_zero() -> None:
    """The spec's J u (the helper cumulative_prod_tangent), at lines with one zero, two, a zero first and none,
    along each axis and with the initial one: against central differences on numpy (a polynomial, so they are
    exact to rounding), and the same on tensorsmith tensors. The gate's random points hold no zeros."""
    from tensorsmith._derivative_helpers import cumulative_prod_tangent

    values = np.array([[2.0, 0.0, 3.0, 0.5], [0.0, 5.0, 0.0, 2.0], [1.5, 4.0, 2.0, -1.0]])
    tangent = np.random.default_rng(7).standard_normal(values.shape)
    eps = 1e-6
    for axis in (0, 1):
        for include_initial in (False, True):
            def product(v, a=axis, i=include_initial):
                return np.cumulative_prod(v, axis=a, include_initial=i)

            numeric = (product(values + eps * tangent) - product(values - eps * tangent)) / (2 * eps)
            got = cumulative_prod_tangent(tangent, values, product(values), axis, include_initial)
            np.testing.assert_allclose(got, numeric, rtol=1e-7, atol=1e-8, err_msg=f"axis {axis}, {include_initial}")
            x = ts.asarray(values)
            on_runtime = cumulative_prod_tangent(ts.asarray(tangent), x, ts.cumulative_prod(x, axis=axis, include_initial=include_initial),
                                                 axis, include_initial)  # fmt: skip
            np.testing.assert_allclose(np.asarray(on_runtime), got, rtol=1e-12, atol=1e-12)

def test_complex_tensors_require_grad_and_integers_are_refused() -> None:
    z = ts.asarray([1 + 2j, -0.5j], dtype=ts.complex64)
    z.requires_grad = True
    loss = ts.sum(ts.abs(z * z))  # sum of |z|^2 = x^2 + y^2: its gradient dL/dx + i dL/dy is 2 z
    loss.backward()
    assert z.grad.dtype == ts.complex64
    np.testing.assert_allclose(np.asarray(z.grad), 2 * np.array([1 + 2j, -0.5j]), rtol=1e-6)
    with pytest.raises(RuntimeError, match="only floating-point and complex tensors can require gradients, not int64"):
        ts.asarray([1, 2]).requires_grad = True


def test_a_real_input_of_a_complex_op_gets_the_real_part() -> None:
    """x real, w complex: d/dx of Re(sum(conj(v) x w)) is Re(v conj(w)), a real gradient in x's dtype."""
    rng = np.random.default_rng(3)
    x0, w0 = rng.standard_normal(4), rng.standard_normal(4) + 1j * rng.standard_normal(4)
    v = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    x = leaf(x0)
    w = ts.asarray(w0)
    w.requires_grad = True
    (gx, gw) = ts.autograd.grad(x * w, [x, w], grad_outputs=ts.asarray(v))
    assert gx.dtype == ts.float64 and gw.dtype == ts.complex128
    np.testing.assert_allclose(np.asarray(gx), np.real(v * np.conj(w0)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gw), v * x0, rtol=1e-12)


def test_complex_gradients_match_pytorch() -> None:
    """A chain of holomorphic and non-holomorphic ops (exp, sin, divide, matmul, conj, abs, real, imag, vecdot,
    mean) in complex128: every gradient as PyTorch's (the same convention: dL/dRe + i dL/dIm)."""
    torch = pytest.importorskip("torch", reason="PyTorch not installed: no second reference for complex gradients")
    rng = np.random.default_rng(5)
    a0 = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    b0 = rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))
    r0 = rng.standard_normal(2)

    def loss(xp, a, b, r):
        h = xp.exp(a) @ b / (xp.sin(a[:, :2]) + 3) * r
        mixed = xp.sum(xp.abs(h) ** 2) + xp.sum(xp.real(xp.conj(h) * h[0]) - xp.imag(h))
        return mixed + xp.real(xp.sum(xp.linalg.vecdot(a, xp.conj(a)) if xp is torch else xp.vecdot(a, xp.conj(a))))

    assert_gradients_match_pytorch(torch, loss, (a0, b0, r0), rtol=1e-10)


def assert_gradients_match_pytorch(torch, loss, values, rtol: float) -> None:
    """loss(namespace, *leaves) backward in tensorsmith and in PyTorch from the same values: the same gradients,
    in the same dtypes."""
    ours = [ts.asarray(v) for v in values]
    for t in ours:
        t.requires_grad = True
    loss(ts, *ours).backward()
    theirs = [torch.tensor(v, requires_grad=True) for v in values]
    loss(torch, *theirs).backward()
    for o, t in zip(ours, theirs, strict=True):
        assert o.grad.dtype == getattr(ts, str(t.grad.dtype).removeprefix("torch."))
        np.testing.assert_allclose(np.asarray(o.grad), t.grad.numpy(), rtol=rtol, atol=1e-12)


REAL_ONLY_COMPOSITES = [s for s in DIFFERENTIABLE if "complex128" not in s.dtypes and hasattr(s, "examples")]


def test_some_composites_declare_no_complex_dtype() -> None:
    """The refusal test below is parametrized by them: an empty list would leave it running nothing."""
    assert {"clip", "gelu", "layer_norm", "cross_entropy"} <= {s.name for s in REAL_ONLY_COMPOSITES}


@pytest.mark.parametrize("spec", REAL_ONLY_COMPOSITES, ids=lambda s: s.name)
def test_a_composite_without_complex_dtypes_refuses_complex_inputs(spec) -> None:
    """Its spec's dtypes are what the gate checks its formulas in: a composite that leaves complex out must
    refuse complex inputs rather than differentiate them unchecked."""
    args, options, _ = next(sample_points(spec))
    call, tensors, _ = point_call(spec, args, options)
    tensors[0] = ts.asarray(np.asarray(tensors[0]) + 1j)
    with pytest.raises((NotImplementedError, TypeError)):
        call(*tensors)


def test_ops_with_several_results_send_each_results_gradient_back() -> None:
    """unstack, meshgrid and broadcast_arrays: a node per result, whose gradients the engine sums into the
    inputs, as PyTorch's unbind, meshgrid and broadcast_tensors do."""
    torch = pytest.importorskip("torch", reason="PyTorch not installed: no second reference for these gradients")
    rng = np.random.default_rng(11)
    x0, a0, b0 = rng.standard_normal((3, 4)), rng.standard_normal(3), rng.standard_normal(5)

    def loss(xp, x, a, b):
        q, k, v = (xp.unstack(x) if xp is ts else xp.unbind(x))  # noqa: N806 - one projection's three rows
        gx, gy = xp.meshgrid(a, b, indexing="xy")
        wide, col = xp.broadcast_arrays(q, xp.reshape(a, (3, 1))) if xp is ts else xp.broadcast_tensors(q, xp.reshape(a, (3, 1)))
        return xp.sum(q * k * 2 + xp.exp(v)) + xp.sum(gx * gy * gx) + xp.sum(wide * col * col)

    assert_gradients_match_pytorch(torch, loss, (x0, a0, b0), rtol=1e-12)


def test_an_unused_result_of_several_sends_nothing_back() -> None:
    x = leaf([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    _, middle, _ = ts.unstack(x)
    ts.sum(middle * middle).backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [[0.0, 0.0], [6.0, 8.0], [0.0, 0.0]])


@pytest.mark.parametrize(("spec", "dtype"), CHECKED, ids=[f"{s.name}-{d}" for s, d in CHECKED])
def test_op_passes_gradgradcheck_at_the_derivative_check_points(spec, dtype) -> None:
    """Double backward: the gradient backward computes with create_graph, as a function of the inputs and of the
    result's gradient, against its own finite differences (PyTorch's gradgradcheck): the formulas are themselves
    differentiable, in grad too (what jvp's reverse mode twice needs: gathers' gradients scatter by a gather)."""
    args, options, described = next(sample_points(spec, dtype=dtype))
    call, tensors, owners = point_call(spec, args, options)
    positions = [i for i, owner in enumerate(owners) if owner in flowing(spec)]
    if not positions:
        pytest.skip(f"{spec.name}: its first derivative-check point has no differentiable input ({described})")
    for i in positions:
        tensors[i].requires_grad = True
    outputs = call(*tensors)
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    rng = np.random.default_rng(1)
    weights = [ts.asarray(rng.standard_normal(o.shape) * (1 + 0.5j if o.dtype == ts.complex128 else 1), dtype=o.dtype) for o in outputs]
    for w in weights:  # the result's gradient is an input too: formulas must be differentiable in grad (jvp needs it)
        w.requires_grad = True

    def first_gradients(*given):
        with ts.autograd.enable_grad():  # gradcheck moves the inputs under no_grad, as plain tensors
            inputs, grads_out = list(given[: len(tensors)]), list(given[len(tensors) :])
            for t in [*(inputs[i] for i in positions), *grads_out]:
                if not t.requires_grad:
                    t.requires_grad = True
            outs = call(*inputs)
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            grads = ts.autograd.grad(outs, [inputs[i] for i in positions], grad_outputs=grads_out, create_graph=True,
                                     allow_unused=True)  # fmt: skip
        return [g if g is not None else ts.zeros_like(inputs[i]) for g, i in zip(grads, positions, strict=True)]

    assert ts.autograd.gradcheck(first_gradients, [*tensors, *weights], atol=1e-4, rtol=1e-3), described



def jvp_at_first_point(spec, dtype):
    """ts.autograd.jvp of the op at its first derivative-check point, along random tangents (complex ones for
    complex inputs) of the tensors gradients flow to: (moved, bases, tangents, outputs, products, point), where
    `moved(*values)` calls the op with those tensors replaced and `point` is (args, options, described, tensors,
    owners, positions)."""
    args, options, described = next(sample_points(spec, dtype=dtype))
    call, tensors, owners = point_call(spec, args, options)
    positions = [i for i, owner in enumerate(owners) if owner in flowing(spec)]
    if not positions:
        pytest.skip(f"{spec.name}: its first derivative-check point has no differentiable input ({described})")

    def moved(*values):  # the op as a function of the tensors gradients flow to; the others as drawn
        given = list(tensors)
        for i, value in zip(positions, values, strict=True):
            given[i] = value
        return call(*given)

    rng = np.random.default_rng(2)
    bases = [np.asarray(tensors[i]) for i in positions]
    tangents = [rng.standard_normal(b.shape) * (1 - 0.7j if np.iscomplexobj(b) else 1) for b in bases]
    outputs, products = ts.autograd.jvp(moved, [ts.asarray(b) for b in bases], [ts.asarray(t) for t in tangents])
    return moved, bases, tangents, outputs, products, (args, options, described, tensors, owners, positions)


@pytest.mark.parametrize(("spec", "dtype"), CHECKED, ids=[f"{s.name}-{d}" for s, d in CHECKED])
def test_jvp_matches_finite_differences_at_the_derivative_check_points(spec, dtype) -> None:
    """Forward-mode products (ts.autograd.jvp, reverse mode twice) against the directional derivative
    (f(x + eps v) - f(x - eps v)) / 2 eps, for random tangents (complex ones for complex inputs)."""
    moved, bases, tangents, outputs, products, point = jvp_at_first_point(spec, dtype)
    eps = 1e-6
    with ts.no_grad():
        above = moved(*[ts.asarray(b + eps * t) for b, t in zip(bases, tangents, strict=True)])
        below = moved(*[ts.asarray(b - eps * t) for b, t in zip(bases, tangents, strict=True)])
    several = isinstance(outputs, (list, tuple))
    for got, up, down in zip(*(x if several else [x] for x in (products, above, below)), strict=True):
        numeric = (np.asarray(up) - np.asarray(down)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(got), numeric, rtol=1e-4, atol=1e-5, err_msg=point[2])


FORWARD = [(s, d) for s, d in CHECKED if s.derivatives.forward is not None]


def test_forward_formulas_are_checked_on_the_runtime() -> None:
    """The test below is parametrized by them: an empty list would leave it running nothing."""
    assert len(FORWARD) >= 100


@pytest.mark.parametrize(("spec", "dtype"), FORWARD, ids=[f"{s.name}-{d}" for s, d in FORWARD])
def test_jvp_equals_the_spec_forward_formula_run_on_the_runtime(spec, dtype) -> None:
    """ts.autograd.jvp (reverse mode twice, through the backward formulas) against the spec's forward formula
    (its `result:` entry) run on tensorsmith tensors, with the ops and helpers the runtime's backward formulas
    call: the two derivations agree to rounding."""
    import tensorsmith._derivatives as runtime_formulas

    _moved, _bases, tangents, outputs, products, point = jvp_at_first_point(spec, dtype)
    args, options, described, tensors, owners, positions = point
    scope = {a.name: a.default_value for a in spec.signature.arguments if a.default is not None} | dict(options)
    tangent_of = dict(zip(positions, tangents, strict=True))
    for name in dict.fromkeys(owners):
        mine = [i for i, owner in enumerate(owners) if owner == name]
        listed = isinstance(args[name], list)
        scope[name] = [tensors[i] for i in mine] if listed else tensors[mine[0]]
        if name in flowing(spec):
            moved_tangents = [ts.asarray(tangent_of[i]) for i in mine]
            scope[tangent_name(name)] = moved_tangents if listed else moved_tangents[0]
    for name in flowing(spec) - set(owners):  # not a tensor at this point (clip's min=None): no tangent
        scope[tangent_name(name)] = 0.0
    scope["result"] = outputs
    value = eval(spec.derivatives.forward.formula, dict(vars(runtime_formulas)), scope)  # noqa: S307
    several = spec.signature.returns_several  # then the formula gives every result's tangent, in order
    assert isinstance(products, (list, tuple)) == several
    expected_all, got_all = (list(value), list(products)) if several else ([value], [products])
    assert len(expected_all) == len(got_all), described
    for expected, got in zip(expected_all, got_all, strict=True):
        expected, got = np.asarray(expected), np.asarray(got)
        if not np.iscomplexobj(got):
            expected = np.real(expected)
        np.testing.assert_allclose(got, np.broadcast_to(expected, got.shape), rtol=1e-9, atol=1e-12, err_msg=described)


def test_vjp_and_jvp_are_adjoint_and_leave_their_inputs_alone() -> None:
    """<u, J v> = <J^T u, v> (real inner products of complex values: Re(sum(conj(a) b))), for a function of two
    inputs with a complex result; the inputs' .grad and graphs are untouched; errors are clear."""
    rng = np.random.default_rng(4)
    a = ts.asarray(rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2)))
    b = leaf(rng.standard_normal(2))

    def f(p, q):
        return ts.exp(p) * q + ts.conj(p) * ts.sin(q)

    v = [ts.asarray(rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))), ts.asarray(rng.standard_normal(2))]
    u = ts.asarray(rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2)))
    out, jv = ts.autograd.jvp(f, [a, b], v)
    out2, (ga, gb) = ts.autograd.vjp(f, [a, b], u)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(out2))
    left = np.sum(np.real(np.conj(np.asarray(u)) * np.asarray(jv)))
    right = np.sum(np.real(np.conj(np.asarray(ga)) * np.asarray(v[0]))) + np.sum(np.asarray(gb) * np.asarray(v[1]))
    assert left == pytest.approx(right, rel=1e-12)
    assert b.grad is None and not out.requires_grad and not jv.requires_grad
    with pytest.raises(ValueError, match="jvp: 1 tangents for 2 inputs"):
        ts.autograd.jvp(f, [a, b], [v[0]])
    with pytest.raises(TypeError, match="input 1 must be a tensorsmith Tensor, not list"):
        ts.autograd.vjp(f, [a, [1.0, 2.0]], u)


def test_unstack_sends_each_result_back_as_its_own_slice() -> None:
    """Each result's gradient is added into x's at its index (a scattered gradient), not as an array of x's size
    per result: unstacking n rows costs n slices. Along a negative axis too."""
    x = leaf(np.arange(12.0).reshape(3, 4))
    parts = ts.unstack(x, axis=-1)
    with ts.no_grad():  # as backward runs formulas without create_graph
        (value,) = ts._derivatives.unstack_backward((True,), ts.ones(3, dtype=ts.float64), None, x, -1, 2)
    assert isinstance(value, ts.autograd._ScatteredGradient) and value.key == (slice(None), 2)
    ts.sum(parts[1] * 2.0 + parts[3]).backward()
    expected = np.zeros((3, 4))
    expected[:, 1], expected[:, 3] = 2.0, 1.0
    np.testing.assert_array_equal(np.asarray(x.grad), expected)
