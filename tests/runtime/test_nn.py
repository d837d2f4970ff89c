"""ts.nn and ts.optim against PyTorch (the reference for their semantics): functional forms and their gradients,
layers, state dicts through files, and optimizer trajectories over several steps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorsmith as ts
from tensorsmith.nn import functional as F

torch = pytest.importorskip("torch", reason="ts.nn is checked against PyTorch (pip install '.[examples]')")


def pair(array: np.ndarray, grad: bool = True):
    """The same values as a tensorsmith leaf and a torch leaf."""
    t = ts.asarray(array)
    t.requires_grad = grad
    return t, torch.tensor(array, requires_grad=grad)


def close(ours, theirs, rtol=1e-5, atol=1e-6) -> None:
    np.testing.assert_allclose(np.asarray(ours.detach()), theirs.detach().numpy(), rtol=rtol, atol=atol)


RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 6, 8)).astype(np.float32)


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (lambda x: F.gelu(x, approximate="tanh"), lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
        (F.gelu, torch.nn.functional.gelu),
        (lambda x: ts.nn.GELU()(x * 3.0), lambda x: torch.nn.GELU()(x * 3.0)),
        (F.silu, torch.nn.functional.silu),
        (F.relu, torch.nn.functional.relu),
        (lambda x: F.softmax(x, dim=1), lambda x: torch.softmax(x, dim=1)),
        (lambda x: F.log_softmax(x, dim=-1), lambda x: torch.log_softmax(x, dim=-1)),
        (lambda x: F.layer_norm(x, 8), lambda x: torch.nn.functional.layer_norm(x, (8,))),
        (lambda x: F.layer_norm(x, (6, 8), eps=1e-3), lambda x: torch.nn.functional.layer_norm(x, (6, 8), eps=1e-3)),
        (lambda x: F.rms_norm(x, 8), lambda x: torch.nn.functional.rms_norm(x, (8,))),
        (lambda x: F.mse_loss(x, ts.zeros_like(x) + 0.5), lambda x: torch.nn.functional.mse_loss(x, torch.full_like(x, 0.5))),
        (lambda x: F.scaled_dot_product_attention(x, x * 0.5, x + 1.0, is_causal=True),
         lambda x: torch.nn.functional.scaled_dot_product_attention(x, x * 0.5, x + 1.0, is_causal=True)),
        (lambda x: F.scaled_dot_product_attention(x, x, x), lambda x: torch.nn.functional.scaled_dot_product_attention(x, x, x)),
    ],
    ids=["gelu_tanh", "gelu", "gelu_module", "silu", "relu", "softmax", "log_softmax", "layer_norm", "layer_norm_2d", "rms_norm", "mse_loss",
         "sdpa_causal", "sdpa"],
)
def test_functional_forms_and_gradients_match_pytorch(ours, theirs) -> None:
    a, b = pair(X)
    ya, yb = ours(a), theirs(b)
    close(ya, yb, rtol=2e-5, atol=2e-6)
    weight = RNG.standard_normal(tuple(yb.shape)).astype(np.float32)
    ts.sum(ya * ts.asarray(weight)).backward()
    (yb * torch.from_numpy(weight)).sum().backward()
    close(a.grad, b.grad, rtol=1e-4, atol=1e-5)


def test_causal_attention_masks_each_shape_of_its_own() -> None:
    """The causal mask is made once per (queries, keys, device) and reused: calls with other lengths, one after
    another and back, each get their own (PyTorch's top-left causal mask)."""
    for queries, keys in ((3, 5), (5, 3), (3, 5), (4, 4)):
        q, k, v = (RNG.standard_normal((2, n, 4)).astype(np.float32) for n in (queries, keys, keys))
        ours = F.scaled_dot_product_attention(ts.asarray(q), ts.asarray(k), ts.asarray(v), is_causal=True)
        theirs = torch.nn.functional.scaled_dot_product_attention(*map(torch.from_numpy, (q, k, v)), is_causal=True)
        close(ours, theirs, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("normalized_shape", [8, (6, 8)])
def test_layer_norm_is_one_op_with_the_gradients_of_pytorchs_for_x_weight_and_bias(normalized_shape) -> None:
    """ts.layer_norm (specs/layer_norm.yaml) records one node; its formulas give PyTorch's gradients for x,
    weight and bias, and their own gradients (double backward) too."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
    (x, tx), (w, tw), (b, tb) = pair(X * 3.0 + 1.0), pair(RNG.standard_normal(shape).astype(np.float32)), pair(
        RNG.standard_normal(shape).astype(np.float32))
    y = F.layer_norm(x, normalized_shape, w, b, eps=1e-3)
    ty = torch.nn.functional.layer_norm(tx, shape, tw, tb, eps=1e-3)
    assert y.grad_fn.name() == "LayerNormBackward"
    assert {f.name() for f in y.grad_fn.next_functions} == {"AccumulateGrad"}  # x, weight and bias themselves
    close(y, ty, rtol=2e-5, atol=2e-5)
    weight = RNG.standard_normal(X.shape).astype(np.float32)
    grads = ts.autograd.grad(ts.sum(y * ts.asarray(weight)), [x, w, b], create_graph=True)
    torch_grads = torch.autograd.grad((ty * torch.from_numpy(weight)).sum(), [tx, tw, tb], create_graph=True)
    for ours, theirs in zip(grads, torch_grads, strict=True):
        close(ours, theirs, rtol=1e-4, atol=1e-4)
    # the gradient of the sum of x's gradient squared: second derivatives through the formulas
    (second,) = ts.autograd.grad(ts.sum(grads[0] * grads[0]), [x])
    (torch_second,) = torch.autograd.grad((torch_grads[0] * torch_grads[0]).sum(), [tx])
    close(second, torch_second, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 1), (4, 2000), (7,), (0, 4)])
def test_standardize_and_its_gradient_are_pytorchs_layer_norm_without_weight(dtype, shape) -> None:
    """_standardize (the standardization family: layer_norm's rows) and _standardize_grad (their vector-Jacobian
    product) against PyTorch's layer_norm over the last axis and its backward, rows of 1 and long rows included;
    the rows of a transposed input are read where they are."""
    eps = 1e-3
    x = (RNG.standard_normal(shape) * 4.0 + 2.0).astype(dtype)
    g = RNG.standard_normal(shape).astype(dtype)
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.layer_norm(tx, shape[-1:], eps=eps)
    (ty * torch.from_numpy(g)).sum().backward()
    tolerance = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    close(ts._C._standardize(ts.asarray(x), eps=eps), ty, **tolerance)
    close(ts._C._standardize_grad(ts.asarray(g), ts.asarray(x), eps=eps), tx.grad, **tolerance)
    if len(shape) == 2:
        transposed = ts.asarray(np.ascontiguousarray(x.T)).T
        close(ts._C._standardize(transposed, eps=eps), ty, **tolerance)


def test_standardize_refuses_what_it_cannot_take() -> None:
    with pytest.raises(ValueError, match=r"one shape, got \(2, 3\) and \(3,\)"):
        ts._C._standardize_grad(ts.ones((2, 3)), ts.ones((3,)))
    with pytest.raises(NotImplementedError, match="_standardize"):
        ts._C._standardize(ts.ones((2, 3), dtype=ts.int32))
    with pytest.raises(TypeError):
        ts._C._standardize(ts.ones((2, 3)), eps="small")


def test_layer_norm_of_integers_and_half_floats_follows_their_mean() -> None:
    """Integers and bool standardize in float64 (the dtype of numpy's mean of them); float16 stays float16,
    summed in float."""
    ints = np.arange(12).reshape(3, 4)
    y = F.layer_norm(ts.asarray(ints), 4)
    assert y.dtype == ts.float64
    centered = ints - ints.mean(axis=-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(y), centered / np.sqrt((centered**2).mean(axis=-1, keepdims=True) + 1e-5), rtol=1e-12)
    half = F.layer_norm(ts.asarray(X.astype(np.float16)), 8)
    assert half.dtype == ts.float16
    close(half, torch.nn.functional.layer_norm(torch.from_numpy(X), (8,)), rtol=2e-3, atol=2e-3)


def test_layer_norm_names_a_shape_that_does_not_match() -> None:
    with pytest.raises(ValueError, match=r"normalized_shape \(7,\) does not match"):
        F.layer_norm(ts.asarray(X), 7)
    with pytest.raises(TypeError, match="eps"):
        ts.layer_norm(ts.asarray(X), 8, eps="small")
    with pytest.raises(NotImplementedError, match="layer_norm: complex64 inputs are not supported"):
        ts.layer_norm(ts.asarray(X.astype(np.complex64)), 8)


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_ignore_index_and_label_smoothing(smoothing: float, reduction: str) -> None:
    logits = RNG.standard_normal((9, 5)).astype(np.float32)
    target = RNG.integers(0, 5, 9)
    target[[1, 4]] = -100
    a, b = pair(logits)
    ya = F.cross_entropy(a, ts.asarray(target), label_smoothing=smoothing, reduction=reduction)
    yb = torch.nn.functional.cross_entropy(b, torch.from_numpy(target), label_smoothing=smoothing, reduction=reduction)
    close(ya, yb)
    ts.sum(ya).backward()
    yb.sum().backward()
    close(a.grad, b.grad)


@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_double_backward_matches_pytorch(smoothing: float, reduction: str) -> None:
    """Under create_graph the gradient is built without in-place writes, so it can be differentiated again:
    the Hessian-vector product is PyTorch's, over leading axes of rows, with ignored rows."""
    logits = RNG.standard_normal((2, 4, 6)).astype(np.float64)
    target = RNG.integers(0, 6, (2, 4))
    target[0, 1] = 3
    a, b = pair(logits)
    ya = F.cross_entropy(a, ts.asarray(target), ignore_index=3, label_smoothing=smoothing, reduction=reduction)
    yb = torch.nn.functional.cross_entropy(b.reshape(-1, 6), torch.from_numpy(target).reshape(-1), ignore_index=3,
                                           label_smoothing=smoothing, reduction=reduction).reshape(ya.shape)  # fmt: skip
    close(ya, yb, rtol=1e-12, atol=1e-12)
    weight = RNG.standard_normal(tuple(ya.shape))
    (ga,) = ts.autograd.grad(ts.sum(ya * ts.asarray(weight)), a, create_graph=True)
    (gb,) = torch.autograd.grad((yb * torch.from_numpy(weight)).sum(), b, create_graph=True)
    close(ga, gb, rtol=1e-12, atol=1e-12)
    v = RNG.standard_normal(logits.shape)
    (ha,) = ts.autograd.grad(ts.sum(ga * ts.asarray(v)), a)
    (hb,) = torch.autograd.grad((gb * torch.from_numpy(v)).sum(), b)
    close(ha, hb, rtol=1e-10, atol=1e-12)


def test_cross_entropy_with_every_target_ignored_is_pytorchs() -> None:
    """The mean over no rows: a NaN loss, and a zero gradient (not NaN), as PyTorch gives."""
    a, b = pair(RNG.standard_normal((3, 4)).astype(np.float32))
    target = np.full(3, -100)
    ya, yb = F.cross_entropy(a, ts.asarray(target)), torch.nn.functional.cross_entropy(b, torch.from_numpy(target))
    assert np.isnan(float(ya)) and np.isnan(yb.item())
    ya.backward()
    yb.backward()
    close(a.grad, b.grad, rtol=0, atol=0)


def test_cross_entropy_refuses_targets_it_cannot_take() -> None:
    logits = ts.asarray(RNG.standard_normal((3, 4)).astype(np.float32))
    with pytest.raises(IndexError, match=r"target 4 is out of bounds for 4 classes"):
        F.cross_entropy(logits, ts.asarray(np.array([0, 4, 1])))
    with pytest.raises(IndexError, match=r"target -1 is out of bounds"):  # no wrapping, as PyTorch
        F.cross_entropy(logits, ts.asarray(np.array([0, -1, 1])))
    assert np.isfinite(float(F.cross_entropy(logits, ts.asarray(np.array([0, -1, 1])), ignore_index=-1)))
    with pytest.raises(ValueError, match=r"target of shape \(2,\) does not match logits of shape \(3, 4\)"):
        F.cross_entropy(logits, ts.asarray(np.array([0, 1])))
    with pytest.raises(TypeError, match="integer class indices, not float32"):
        F.cross_entropy(logits, ts.asarray(np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(logits, ts.asarray(np.array([0, 1, 2])), reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing must be in"):
        F.cross_entropy(logits, ts.asarray(np.array([0, 1, 2])), label_smoothing=1.5)


def test_embedding_gradient_sums_repeated_ids() -> None:
    table = RNG.standard_normal((6, 3)).astype(np.float32)
    ids = np.array([[0, 2, 2], [5, 0, 2]])
    a, b = pair(table)
    ya, yb = F.embedding(ts.asarray(ids), a), torch.nn.functional.embedding(torch.from_numpy(ids), b)
    close(ya, yb)
    weight = RNG.standard_normal((2, 3, 3)).astype(np.float32)
    ts.sum(ya * ts.asarray(weight)).backward()
    (yb * torch.from_numpy(weight)).sum().backward()
    close(a.grad, b.grad)


def test_dropout_is_explicit_scaled_and_reproducible() -> None:
    x = ts.ones((200, 50), dtype=ts.float32)
    y = F.dropout(x, 0.3, generator=ts.random.Generator(3))
    kept = np.asarray(y) != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(np.asarray(y)[kept], 1 / 0.7, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(F.dropout(x, 0.3, generator=ts.random.Generator(3))))
    assert F.dropout(x, 0.3, training=False) is x
    with pytest.raises(ValueError, match="generator"):
        F.dropout(x, 0.3)


def test_modules_state_dict_round_trips_through_npz_and_safetensors(tmp_path: Path) -> None:
    g = ts.random.Generator(0)
    model = ts.nn.Sequential(ts.nn.Embedding(10, 4, generator=g), ts.nn.LayerNorm(4), ts.nn.Linear(4, 3, generator=g))
    names = [n for n, _ in model.named_parameters()]
    assert names == ["0.weight", "1.weight", "1.bias", "2.weight", "2.bias"]
    assert all(p.requires_grad and p.is_leaf for p in model.parameters())
    for suffix in (".npz", ".safetensors"):
        path = tmp_path / f"model{suffix}"
        ts.nn.save(model, path)
        other = ts.nn.Sequential(ts.nn.Embedding(10, 4, generator=ts.random.Generator(9)), ts.nn.LayerNorm(4),
                                 ts.nn.Linear(4, 3, generator=ts.random.Generator(9)))  # fmt: skip
        other.load_state_dict(ts.nn.load(path))
        for (_, p), (_, q) in zip(model.named_parameters(), other.named_parameters(), strict=True):
            np.testing.assert_array_equal(np.asarray(p.detach()), np.asarray(q.detach()))
            assert q.requires_grad and q.is_leaf
    with pytest.raises(KeyError, match="missing"):
        other.load_state_dict({"0.weight": np.zeros((10, 4), np.float32)})


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (lambda p: ts.optim.SGD(p, lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
        (lambda p: ts.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01),
         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01)),
        (lambda p: ts.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True), lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True)),
        (lambda p: ts.optim.AdamW(p, lr=0.01), lambda p: torch.optim.AdamW(p, lr=0.01)),
        (lambda p: ts.optim.AdamW(p, lr=0.02, betas=(0.8, 0.95), weight_decay=0.1),
         lambda p: torch.optim.AdamW(p, lr=0.02, betas=(0.8, 0.95), weight_decay=0.1)),
    ],
    ids=["sgd", "sgd_momentum_decay", "sgd_nesterov", "adamw", "adamw_options"],
)
def test_optimizer_trajectories_match_pytorch(ours, theirs) -> None:
    w0 = RNG.standard_normal((5, 3)).astype(np.float32)
    a, b = pair(w0)
    opt_a, opt_b = ours([a]), theirs([b])
    for step in range(6):
        target = np.full((5, 3), step * 0.1, dtype=np.float32)
        loss_a = ts.sum((ts.tanh(a) - ts.asarray(target)) ** 2.0)
        loss_b = ((torch.tanh(b) - torch.from_numpy(target)) ** 2).sum()
        opt_a.zero_grad(), opt_b.zero_grad()
        loss_a.backward(), loss_b.backward()
        opt_a.step(), opt_b.step()
    close(a, b, rtol=1e-5, atol=1e-6)
    assert a.is_leaf and a.requires_grad


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (lambda p: ts.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01),
         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01)),
        (lambda p: ts.optim.AdamW(p, lr=0.02, betas=(0.8, 0.95), weight_decay=0.1),
         lambda p: torch.optim.AdamW(p, lr=0.02, betas=(0.8, 0.95), weight_decay=0.1)),
    ],
    ids=["sgd_momentum_decay", "adamw_options"],
)
def test_optimizers_update_groups_of_parameters_as_pytorch_does(ours, theirs) -> None:
    # Parameters of two dtypes and several shapes (a 0-d one among them) are updated a group at a time; a
    # parameter without a gradient on a step is left as it is (its state too), after which the group's
    # parameters have taken different numbers of steps and are updated one at a time: PyTorch's trajectory
    # throughout, and every parameter stays the leaf the model holds.
    shapes = [((4, 3), np.float32), ((3,), np.float32), ((), np.float32), ((2, 5), np.float64), ((7,), np.float32)]
    pairs = [pair(RNG.standard_normal(shape).astype(dtype)) for shape, dtype in shapes]
    ours_params, theirs_params = [a for a, _ in pairs], [b for _, b in pairs]
    opt_a, opt_b = ours(ours_params), theirs(theirs_params)
    for step in range(5):
        skipped = 1 if step == 2 else None  # this step, the second parameter takes no part in the loss
        opt_a.zero_grad(), opt_b.zero_grad()
        loss_a = sum(ts.sum(ts.tanh(a) ** 2.0) * (k + 1) for k, a in enumerate(ours_params) if k != skipped)
        loss_b = sum((torch.tanh(b) ** 2).sum() * (k + 1) for k, b in enumerate(theirs_params) if k != skipped)
        loss_a.backward(), loss_b.backward()
        assert (ours_params[1].grad is None) == (skipped == 1)
        opt_a.step(), opt_b.step()
        for a, b in zip(ours_params, theirs_params, strict=True):
            close(a, b, rtol=1e-5, atol=1e-6)
    assert all(a.is_leaf and a.requires_grad for a in ours_params)


def test_optimizer_refuses_a_parameter_given_twice() -> None:
    p = ts.nn.Parameter(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="more than once"):
        ts.optim.AdamW([p, p])


def test_parameter_copies_its_data() -> None:
    values = np.ones(3, dtype=np.float32)
    p = ts.nn.Parameter(values)
    with ts.no_grad():
        p -= 1.0
    np.testing.assert_array_equal(values, [1.0, 1.0, 1.0])  # the caller's array is untouched
    assert p.requires_grad and p.is_leaf


def test_gelu_refuses_an_unknown_approximation() -> None:
    with pytest.raises(ValueError, match="'none' or 'tanh'"):
        F.gelu(ts.asarray(X), approximate="sigmoid")
    with pytest.raises(ValueError, match="'none' or 'tanh'"):
        ts.gelu(ts.asarray(X), approximate=None)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_is_one_op_whose_second_derivative_is_pytorchs(approximate: str) -> None:
    """ts.gelu (specs/gelu.yaml) records one node; its formula's own gradient (double backward) is PyTorch's."""
    x, tx = pair((X * 3.0).astype(np.float64))
    y = F.gelu(x, approximate=approximate)
    assert y.grad_fn.name() == "GeluBackward" and [f.name() for f in y.grad_fn.next_functions] == ["AccumulateGrad"]
    ty = torch.nn.functional.gelu(tx, approximate=approximate)
    close(y, ty, rtol=1e-12, atol=1e-12)
    (g,) = ts.autograd.grad(ts.sum(y), [x], create_graph=True)
    (tg,) = torch.autograd.grad(ty.sum(), [tx], create_graph=True)
    close(g, tg, rtol=1e-12, atol=1e-12)
    (second,) = ts.autograd.grad(ts.sum(g * g), [x])
    (torch_second,) = torch.autograd.grad((tg * tg).sum(), [tx])
    close(second, torch_second, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_tanh_runs_one_kernel_each_way_and_matches_pytorch_at_every_scale(dtype: str) -> None:
    """approximate='tanh' is the private op _gelu_tanh forward and _gelu_tanh_grad backward (one pass each,
    not in the public namespace); both within a few ulp of PyTorch from tiny to huge x, both signs."""
    values = np.concatenate([RNG.standard_normal(3000) * s for s in (1e-20, 0.1, 1.0, 4.0, 12.0, 30.0)])
    x, tx = pair(values.astype(dtype))
    y = F.gelu(x, approximate="tanh")
    (g,) = ts.autograd.grad(y, [x], ts.ones_like(y))
    ty = torch.nn.functional.gelu(tx, approximate="tanh")
    (tg,) = torch.autograd.grad(ty, [tx], torch.ones_like(ty))
    eps = np.finfo(dtype).eps
    for ours, theirs, scale in ((y, ty, np.abs(values)), (g, tg, np.maximum(np.abs(values), 1.0))):
        # PyTorch computes 1 + tanh (cancelling for negative x): its own error is in units of |x|, as is ours
        np.testing.assert_array_less(np.abs(np.asarray(ours.detach()) - theirs.detach().numpy()), 8 * eps * scale + 1e-300)
    assert "_gelu_tanh" not in dir(ts) and callable(ts._C._gelu_tanh) and callable(ts._C._gelu_tanh_grad)
    ints = ts.gelu(ts.asarray([-2, 0, 3]), approximate="tanh")  # integers compute in float64, as the exact form
    assert ints.dtype == ts.float64
    close(ints, torch.nn.functional.gelu(torch.tensor([-2.0, 0.0, 3.0], dtype=torch.float64), approximate="tanh"),
          rtol=1e-15, atol=0)  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_erf_matches_pytorch_over_every_scale_and_the_special_values(dtype: str) -> None:
    values = np.concatenate([RNG.standard_normal(2000) * scale for scale in (1e-30, 1e-3, 0.5, 2.0, 6.0)]
                            + [np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e300 if dtype == "float64" else 3e38])])
    x = values.astype(dtype)
    ours = np.asarray(ts.erf(ts.asarray(x)))
    theirs = torch.erf(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=4 * np.finfo(dtype).eps, atol=0)
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))  # erf(-0.0) is -0.0
