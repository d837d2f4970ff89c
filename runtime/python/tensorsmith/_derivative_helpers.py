"""Helpers the specs' derivative formulas may call (catalog/derivatives.py lists them), for what catalog ops
alone say clumsily. Each is written against the Array API namespace of its arguments, so the same code runs on
tensorsmith tensors in backward and on numpy arrays in the gate's derivative check. This module imports
nothing from tensorsmith: the gate loads it without the compiled runtime."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["conjugate", "unreduce", "reduced_count", "extreme_share", "matmul_grad_x1", "matmul_grad_x2", "inverse_permutation",
           "split_like", "negated", "untile", "positions_of", "scatter_add", "within", "reverse_cumulative_sum", "product_of_others", "scatter_add_rows", "sum_to", "rows_of", "standardize_grad_x", "gelu_grad", "gelu_tanh_second", "cross_entropy_grad", "cumulative_prod_grad", "tensordot_grad_x1", "tensordot_grad_x2", "diff_grads", "unstacked_grad", "only_at", "meshgrid_grads", "standardize_grad_tangent_x", "clip_tangent", "cumulative_prod_tangent"]  # fmt: skip


def _namespace(*arrays: Any) -> Any:
    for a in arrays:
        if hasattr(a, "__array_namespace__"):
            return a.__array_namespace__()
    raise TypeError("no array among the arguments")


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(sorted(a % ndim for a in axes)) if ndim else ()


_COMPLEX_DTYPE: dict[Any, bool] = {}  # dtype -> whether it is complex: backward asks per formula, so it is cached


def _is_complex(a: Any) -> bool:
    known = _COMPLEX_DTYPE.get(a.dtype)
    if known is None:
        known = _COMPLEX_DTYPE[a.dtype] = bool(_namespace(a).isdtype(a.dtype, "complex floating"))
    return known


def conjugate(x: Any) -> Any:
    """x's complex conjugate, and a real x itself (no copy). A complex input's gradient is dL/dRe + i dL/dIm
    (PyTorch's convention), so a holomorphic op's formula multiplies grad by its derivative's conjugate;
    written with this, the same formula costs a real op nothing."""
    if not hasattr(x, "__array_namespace__"):
        return x.conjugate() if isinstance(x, complex) else x
    return _namespace(x).conj(x) if _is_complex(x) else x


def sum_to(g: Any, shape: tuple[int, ...]) -> Any:
    """g summed over the axes broadcasting added to or stretched in `shape` (an input's gradient from a value
    of the broadcast shape: what the engine does with every formula's value); ValueError when g's shape does
    not broadcast from `shape`."""
    lead = g.ndim - len(shape)
    if lead < 0 or any(n not in (1, g.shape[lead + i]) for i, n in enumerate(shape)):
        raise ValueError(f"a value of shape {tuple(g.shape)} is not a broadcast of shape {tuple(shape)}")
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    xp = _namespace(g)
    return xp.reshape(xp.sum(g, axis=axes, keepdims=True) if axes else g, tuple(shape))


def unreduce(grad: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """The gradient of a reduction of x over `axis`, broadcast back over x's shape."""
    xp = _namespace(grad, x)
    if not keepdims:
        kept = list(x.shape)
        for a in _axes(axis, x.ndim):
            kept[a] = 1
        grad = xp.reshape(grad, tuple(kept))
    return xp.broadcast_to(grad, x.shape)


def reduced_count(x: Any, axis: Any) -> int:
    """How many elements of x each result of a reduction over `axis` folds (mean's divisor)."""
    return math.prod(x.shape[a] for a in _axes(axis, x.ndim))


def extreme_share(x: Any, result: Any, axis: Any, keepdims: bool) -> Any:
    """Where x holds its max (or min) over `axis`, 1/k for the k elements that tie for it, else 0: the
    gradient of max/min splits evenly among ties, as PyTorch's does."""
    xp = _namespace(x, result)
    hits = xp.astype(unreduce(result, x, axis, keepdims) == x, x.dtype)
    ties = unreduce(xp.sum(hits, axis=axis, keepdims=True), x, axis, True)
    return hits / ties


def matmul_grad_x1(grad: Any, x1: Any, x2: Any) -> Any:
    """The gradient of x1 @ x2 with respect to x1 (numpy's matmul: 1-D operands become matrices, batch
    dimensions broadcast; the engine sums the broadcast ones away)."""
    xp = _namespace(grad, x1, x2)
    x2 = conjugate(x2)
    if x1.ndim == 1 and x2.ndim == 1:
        return grad * x2
    if x2.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        return xp.reshape(grad, grad.shape + (1,)) * x2
    if x1.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        return xp.sum(xp.reshape(grad, grad.shape[:-1] + (1, grad.shape[-1])) * x2, axis=-1)
    return xp.matmul(grad, xp.matrix_transpose(x2))


def matmul_grad_x2(grad: Any, x1: Any, x2: Any) -> Any:
    """The gradient of x1 @ x2 with respect to x2."""
    xp = _namespace(grad, x1, x2)
    x1 = conjugate(x1)
    if x1.ndim == 1 and x2.ndim == 1:
        return grad * x1
    if x1.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        return xp.reshape(x1, (x1.shape[0], 1)) * xp.reshape(grad, grad.shape[:-1] + (1, grad.shape[-1]))
    if x2.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        return xp.sum(xp.reshape(grad, grad.shape + (1,)) * x1, axis=tuple(range(x1.ndim - 1)))
    if x2.ndim == 2 and x1.ndim > 2:
        # A matrix shared by a batch (a linear layer's weight): the sum over the batch of x1_b^T grad_b is one
        # product with the batch folded into the contraction, (k, B n) @ (B n, m), rather than B products
        # summed afterwards (B times the memory and a reduction).
        rows = math.prod(x1.shape[:-1])  # not -1: a reshape cannot infer it beside a zero extent
        return xp.matmul(xp.matrix_transpose(xp.reshape(x1, (rows, x1.shape[-1]))), xp.reshape(grad, (rows, grad.shape[-1])))
    return xp.matmul(xp.matrix_transpose(x1), grad)


def rows_of(t: Any, normalized_shape: Any) -> Any:
    """t with its trailing `normalized_shape` dimensions (an int: one) flattened into one last axis: the rows
    layer_norm standardizes (an empty normalized_shape makes rows of one element)."""
    trailing = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    if trailing == 1:
        return t  # its last axis already holds the rows (layer_norm's common case: no reshape to pay for)
    xp = _namespace(t)
    lead = tuple(t.shape[: t.ndim - trailing])
    return xp.reshape(t, lead + (math.prod(t.shape[t.ndim - trailing :]),))


def standardize_grad_x(grad: Any, g: Any, x: Any, result: Any, eps: float) -> Any:
    """The gradient of _standardize_grad(g, x) with respect to x (double backward through layer_norm), per
    row of N: with r = rstd, n = (x - mean) r, m = mean(g n), A = sum(grad (g - mean(g))), B = sum(grad n),
    -(r^2 / N) n (A - m B) - (r B / N) result - r m sg(grad), where sg(w) = r (w - mean(w) - n mean(w n)) is the
    map's own vector-Jacobian product (result = sg(g))."""
    xp = _namespace(grad, g, x)
    shape = tuple(x.shape)
    grad, g, x, result = (xp.reshape(a, shape or (1,)) for a in (grad, g, x, result))  # a scalar: one row

    def mean(a: Any) -> Any:
        return xp.mean(a, axis=-1, keepdims=True)

    count = x.shape[-1]
    centered = x - mean(x)
    rstd = 1 / xp.sqrt(mean(centered * centered) + eps)
    n = centered * rstd
    m = mean(g * n)
    a = xp.sum(grad * (g - mean(g)), axis=-1, keepdims=True)
    b = xp.sum(grad * n, axis=-1, keepdims=True)
    sg_grad = rstd * ((grad - mean(grad)) - n * mean(grad * n))
    dx = -(rstd * rstd / count) * n * (a - m * b) - (rstd * b / count) * result - rstd * m * sg_grad
    return xp.reshape(dx, shape)


def standardize_grad_tangent_x(g: Any, x: Any, x_t: Any, eps: float) -> Any:
    """The derivative of _standardize_grad(g, x) along x_t (its forward formula's x part), per row of N: with
    c = x - mean(x), r = rstd, n = c r, m = mean(g n), dc = x_t - mean(x_t), dr = -r^3 mean(c dc) and
    dn = dc r + c dr, the map r (g - mean(g) - n m) moves by dr (g - mean(g) - n m) - r (dn m + n mean(g dn))."""
    xp = _namespace(g, x)
    shape = tuple(x.shape)
    g, x, x_t = (xp.reshape(a, shape or (1,)) for a in (g, x, x_t))  # a scalar: one row

    def mean(a: Any) -> Any:
        return xp.mean(a, axis=-1, keepdims=True)

    centered = x - mean(x)
    rstd = 1 / xp.sqrt(mean(centered * centered) + eps)
    n = centered * rstd
    m = mean(g * n)
    d_centered = x_t - mean(x_t)
    d_rstd = -(rstd * rstd * rstd) * mean(centered * d_centered)
    d_n = d_centered * rstd + centered * d_rstd
    return xp.reshape(d_rstd * (g - mean(g) - n * m) - rstd * (d_n * m + n * mean(g * d_n)), shape)


_GELU_A = 2.0 * math.sqrt(2.0 / math.pi)
_GELU_B = 0.044715 * _GELU_A


def _erf(xp: Any, v: Any) -> Any:
    """erf in the namespace: tensorsmith's op, or for numpy (which has none) the C library's, element-wise."""
    if hasattr(xp, "erf"):
        return xp.erf(v)
    return xp.asarray(xp.vectorize(math.erf, otypes=[v.dtype])(v))


def gelu_grad(grad: Any, x: Any) -> Any:
    """The gradient of gelu (the exact form, x Phi(x)): Phi(x) + x phi(x). The tanh form's is an op of its own
    (_gelu_tanh_grad)."""
    xp = _namespace(grad, x)
    return grad * (0.5 * (1 + _erf(xp, x * math.sqrt(0.5))) + x * xp.exp(-0.5 * (x * x)) * (1 / math.sqrt(2 * math.pi)))


def gelu_tanh_second(x: Any) -> Any:
    """The second derivative of gelu's tanh form x s, s = sigmoid(u), u = x (a + b x^2): with s' = s (1 - s),
    s' (2 u' + x (1 - 2 s) u'^2 + 6 b x^2), u' = a + 3 b x^2 (for _gelu_tanh_grad's own gradient)."""
    xp = _namespace(x)
    u = x * (_GELU_A + _GELU_B * (x * x))
    s = 1 / (1 + xp.exp(-u))
    du = _GELU_A + 3 * _GELU_B * (x * x)
    return s * (1 - s) * (2 * du + x * (1 - 2 * s) * (du * du) + 6 * _GELU_B * (x * x))


def _softmax(xp: Any, x: Any) -> Any:
    """softmax along the last axis: tensorsmith's op (one kernel), or composed for numpy (which has none)."""
    if hasattr(xp, "softmax"):
        return xp.softmax(x, axis=-1)
    e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


def cross_entropy_grad(grad: Any, logits: Any, target: Any, ignore_index: int, reduction: str, label_smoothing: float) -> Any:
    """cross_entropy's gradient with respect to logits (classes along the last axis): each row's share of grad
    (grad itself, one per row, for reduction 'none'; grad over the number of rows counted for 'mean'; 0 for a
    row whose target is ignore_index) times softmax(logits) less the row's target distribution, 1 - s at its
    target class plus s / C at every class (s the label smoothing)."""
    xp = _namespace(grad, logits)
    classes = logits.shape[-1]
    counted = target != ignore_index
    if reduction == "mean":  # divided where counted only: with every row ignored (a NaN loss) the gradient is 0
        grad = grad / xp.sum(xp.astype(counted, grad.dtype))
    share = xp.where(counted, grad, 0.0)  # a scalar grad ('mean', 'sum') broadcasts to every row
    probabilities = _softmax(xp, logits)
    spread = probabilities - label_smoothing / classes if label_smoothing else probabilities
    result = xp.expand_dims(share, axis=-1) * spread
    at_target = (1.0 - label_smoothing) * share
    if getattr(result, "requires_grad", False):  # double backward: no in-place write, a one-hot mask instead
        one_hot = xp.expand_dims(target, axis=-1) == xp.arange(classes, device=logits.device)
        return result - xp.expand_dims(at_target, axis=-1) * xp.astype(one_hot, result.dtype)
    # Each row's target class, less its share (an ignored row's share is 0: any class will do), written into
    # the fresh result by position rather than through a mask of the logits' size.
    rows = xp.reshape(result, (-1, classes))
    picked = (xp.arange(rows.shape[0], device=logits.device), xp.reshape(xp.where(counted, target, 0), (-1,)))
    rows[picked] = rows[picked] - xp.reshape(at_target, (-1,))
    return result


def inverse_permutation(axes: Any) -> tuple[int, ...]:
    """The axes that undo permute_dims(x, axes)."""
    n = len(axes)
    inverse = [0] * n
    for position, axis in enumerate(axes):
        inverse[axis % n] = position
    return tuple(inverse)


def split_like(grad: Any, arrays: Any, axis: Any) -> list[Any]:
    """grad cut along `axis` into pieces with the extents of `arrays` along it (concat's gradient); with
    axis=None (concat of flattened arrays) each piece takes its array's shape."""
    xp = _namespace(grad)
    pieces, start = [], 0
    for a in arrays:
        if axis is None:
            size = math.prod(a.shape)
            pieces.append(xp.reshape(grad[start : start + size], a.shape))
            start += size
            continue
        extent = a.shape[axis]
        index = [slice(None)] * grad.ndim
        index[axis] = slice(start, start + extent)
        pieces.append(grad[tuple(index)])
        start += extent
    return pieces


def negated(shift: Any) -> Any:
    """-shift for an int or each of a sequence (roll's inverse shift)."""
    return -shift if isinstance(shift, int) else tuple(-s for s in shift)


def untile(grad: Any, x: Any, repetitions: Any) -> Any:
    """tile's gradient: the sum of grad's tiles, in x's shape (numpy's tile pads the shorter of x's shape and
    repetitions with leading ones)."""
    xp = _namespace(grad)
    reps = (repetitions,) if isinstance(repetitions, int) else tuple(repetitions)
    n = max(len(reps), x.ndim)
    reps, shape = (1,) * (n - len(reps)) + reps, (1,) * (n - x.ndim) + tuple(x.shape)
    split = [extent for pair in zip(reps, shape, strict=True) for extent in pair]
    summed = xp.sum(xp.reshape(grad, tuple(split)), axis=tuple(range(0, 2 * n, 2)))
    return xp.reshape(summed, x.shape)


def positions_of(x: Any) -> Any:
    """Each element's row-major position in x, in x's shape: what a gather picks, as positions."""
    xp = _namespace(x)
    return xp.reshape(xp.arange(math.prod(x.shape), device=x.device), x.shape)


def _wide(xp: Any, values: Any) -> Any:
    """The dtype runs of gathered gradients are summed in: float64, complex128 for complex values."""
    return xp.complex128 if _is_complex(values) else xp.float64


def _gather_map(xp: Any, slots: Any, count: int, length: int, device: Any) -> Any:
    """For each of `length` places, which of `count` values lands there (slots[k] is value k's place), or
    `count` (a zero appended after the values) where none does: a scatter written as a gather, which autograd
    differentiates again (a jvp, double backward), as it does not an assignment of values that require grad."""
    where_from = xp.full((length,), count, dtype=xp.int64, device=device)
    where_from[slots] = xp.arange(count, dtype=xp.int64, device=device)
    return where_from


def scatter_add(x: Any, positions: Any, values: Any) -> Any:
    """Zeros in x's shape with each of `values` added at its row-major position (repeated positions sum): the
    gradient of any gather (indexing, take, repeat). Runs of equal positions are summed by prefix sums in
    float64 (complex128) over the sorted order."""
    xp = _namespace(values, positions)
    flat, vals = xp.reshape(positions, (-1,)), xp.reshape(values, (-1,))
    unique, counts = xp.unique_counts(flat)
    if unique.shape[0] != flat.shape[0]:  # repeated positions: each run's sum, at its position
        ordered = xp.take(vals, xp.argsort(flat, stable=True))
        prefix = xp.cumulative_sum(xp.astype(ordered, _wide(xp, values)), include_initial=True)
        ends = xp.cumulative_sum(counts)
        vals, flat = xp.astype(xp.take(prefix, ends) - xp.take(prefix, ends - counts), values.dtype), unique
    padded = xp.concat([vals, xp.zeros((1,), dtype=vals.dtype, device=vals.device)])
    return xp.reshape(xp.take(padded, _gather_map(xp, flat, flat.shape[0], math.prod(x.shape), vals.device)), x.shape)


def scatter_add_rows(x: Any, rows: Any, values: Any) -> Any:
    """Zeros in x's shape with each row of `values` (shape rows.shape + x.shape[1:]) added at its row index
    along axis 0 (repeated rows sum): the gradient of x[rows] and take(x, rows, axis=0), an embedding's. Sorts
    the row indices, not every element's position."""
    xp = _namespace(values, rows)
    width = math.prod(x.shape[1:])
    flat_rows = xp.reshape(rows, (-1,))
    flat_rows = xp.where(flat_rows < 0, flat_rows + x.shape[0], flat_rows)
    vals = xp.reshape(values, (flat_rows.shape[0], width))
    unique, counts = xp.unique_counts(flat_rows)
    if unique.shape[0] != flat_rows.shape[0]:  # repeated rows: each run's sum, at its row
        ordered = xp.take(vals, xp.argsort(flat_rows, stable=True), axis=0)
        prefix = xp.cumulative_sum(xp.astype(ordered, _wide(xp, values)), axis=0, include_initial=True)
        ends = xp.cumulative_sum(counts)
        sums = xp.take(prefix, ends, axis=0) - xp.take(prefix, ends - counts, axis=0)
        vals, flat_rows = xp.astype(sums, values.dtype), unique
    padded = xp.concat([vals, xp.zeros((1, width), dtype=vals.dtype, device=vals.device)], axis=0)
    gathered = xp.take(padded, _gather_map(xp, flat_rows, flat_rows.shape[0], x.shape[0], vals.device), axis=0)
    return xp.reshape(gathered, x.shape)


def within(x: Any, low: Any, high: Any) -> Any:
    """Where low <= x <= high (a None bound is no bound): where clip passes x's gradient through."""
    xp = _namespace(x)
    inside = xp.ones(x.shape, dtype=xp.bool, device=x.device)
    if low is not None:
        inside = inside & (x >= low)
    if high is not None:
        inside = inside & (x <= high)
    return inside


def clip_tangent(x: Any, low: Any, high: Any, x_t: Any, low_t: Any, high_t: Any) -> Any:
    """clip's J u: each element's tangent taken from where its value came from, as the backward formulas route
    grad: x's within [low, high], low's below it (where low <= high), high's above it or wherever high < low.
    A bound that is None has no tangent; one that is a Python scalar has tangent 0."""
    xp = _namespace(x)
    tangent = xp.where(within(x, low, high), x_t, 0.0)
    if low is not None:
        below = x < low
        if high is not None:
            below = below & (low <= high)
        tangent = tangent + xp.where(below, low_t, 0.0)
    if high is not None:
        above = x > high
        if low is not None:
            above = above | (high < low)
        tangent = tangent + xp.where(above, high_t, 0.0)
    return tangent


def reverse_cumulative_sum(grad: Any, axis: Any, include_initial: bool) -> Any:
    """cumulative_sum's gradient: sums from each position to the end of its line (the initial zero's gradient
    dropped)."""
    xp = _namespace(grad)
    axis = -1 if axis is None else axis
    if include_initial:
        index = [slice(None)] * grad.ndim
        index[axis] = slice(1, None)
        grad = grad[tuple(index)]
    return xp.flip(xp.cumulative_sum(xp.flip(grad, axis=axis), axis=axis), axis=axis)


def product_of_others(x: Any, axis: Any) -> Any:
    """For each element of x, the product of the other elements its reduction over `axis` folds (prod's
    gradient, right where x holds zeros): exclusive products from the left and from the right."""
    xp = _namespace(x)
    axes = _axes(axis, x.ndim)
    kept = tuple(a for a in range(x.ndim) if a not in axes)
    order = kept + axes
    moved = xp.permute_dims(x, order)
    lines = xp.reshape(moved, tuple(x.shape[a] for a in kept) + (math.prod(x.shape[a] for a in axes),))
    left = xp.cumulative_prod(lines, axis=-1, include_initial=True)[..., :-1]
    right = xp.flip(xp.cumulative_prod(xp.flip(lines, axis=-1), axis=-1, include_initial=True)[..., :-1], axis=-1)
    return xp.permute_dims(xp.reshape(left * right, moved.shape), inverse_permutation(order))


def cumulative_prod_grad(grad: Any, x: Any, result: Any, axis: Any, include_initial: bool) -> Any:
    """cumulative_prod's gradient, right where x holds zeros: before a line's first zero, the reverse sum of
    grad * result from each position, over x there; at the first zero, the reverse sum of grad times the
    products with that zero taken as one; after it, zero (every product there keeps the first zero)."""
    xp = _namespace(grad, x)
    axis = -1 if axis is None else axis
    if include_initial:  # the initial one's gradient goes nowhere
        index = [slice(None)] * grad.ndim
        index[axis] = slice(1, None)
        grad, result = grad[tuple(index)], result[tuple(index)]
    zero = x == 0
    zeros_so_far = xp.cumulative_sum(xp.astype(zero, xp.int64), axis=axis)
    before, first = zeros_so_far == 0, zero & (zeros_so_far == 1)
    one = xp.ones_like(x)
    ahead = reverse_cumulative_sum(grad * conjugate(result), axis, False) / conjugate(xp.where(before, x, one))
    with_one = xp.cumulative_prod(xp.where(first, one, x), axis=axis)
    at_first_zero = reverse_cumulative_sum(grad * conjugate(with_one), axis, False)
    return xp.where(before, ahead, xp.where(first, at_first_zero, xp.zeros_like(ahead)))


def cumulative_prod_tangent(x_t: Any, x: Any, result: Any, axis: Any, include_initial: bool) -> Any:
    """cumulative_prod's J u (the sum over i <= k of u_i times the product of the other x_j), right where x holds
    zeros: before a line's first zero, result times the running sum of u / x; from the first zero to the next,
    the first zero's u times the products with that zero taken as one; after a second zero, zero."""
    xp = _namespace(x)
    axis = -1 if axis is None else axis
    if include_initial:  # the initial one is constant
        index = [slice(None)] * result.ndim
        index[axis] = slice(1, None)
        result = result[tuple(index)]
    zero = x == 0
    zeros_so_far = xp.cumulative_sum(xp.astype(zero, xp.int64), axis=axis)
    before, first = zeros_so_far == 0, zero & (zeros_so_far == 1)
    one = xp.ones_like(x)
    ahead = result * xp.cumulative_sum(x_t / xp.where(before, x, one), axis=axis)
    with_one = xp.cumulative_prod(xp.where(first, one, x), axis=axis)
    at_first_zero = xp.cumulative_sum(xp.where(first, x_t, xp.zeros_like(ahead)), axis=axis) * with_one
    tangent = xp.where(before, ahead, xp.where(zeros_so_far == 1, at_first_zero, xp.zeros_like(ahead)))
    if not include_initial:
        return tangent
    edge = list(tangent.shape)
    edge[axis] = 1
    return xp.concat([xp.zeros(tuple(edge), dtype=tangent.dtype, device=tangent.device), tangent], axis=axis)


def _contracted_axes(x1: Any, x2: Any, axes: Any) -> tuple[list[int], list[int]]:
    """tensordot's contracted axes of x1 and of x2, pairwise: the last `axes` of x1 with the first of x2 for an
    int, else the pair of sequences given."""
    if isinstance(axes, int):
        return list(range(x1.ndim - axes, x1.ndim)), list(range(axes))
    first, second = ([a] if isinstance(a, int) else list(a) for a in axes)
    return [a % x1.ndim for a in first], [a % x2.ndim for a in second]


def _tensordot_grad(grad: Any, other: Any, mine: list[int], theirs: list[int], ndim: int, grad_first: bool) -> Any:
    """The gradient of one tensordot operand (of `ndim` axes, `mine` contracted with the other's `theirs`):
    grad contracted with the other operand's conjugate over the other's free axes, then put in the operand's
    axis order (tensordot leaves the other's contracted axes in the other's own order)."""
    xp = _namespace(grad, other)
    free_other = [d for d in range(other.ndim) if d not in theirs]
    free_mine = [d for d in range(ndim) if d not in mine]
    at = list(range(len(free_mine), grad.ndim)) if grad_first else list(range(len(free_other)))
    if grad_first:  # x1: result axes are x1's free ones, then the other's contracted ones
        t = xp.tensordot(grad, conjugate(other), axes=(at, free_other))
        free_at, contracted_at = 0, len(free_mine)
    else:  # x2: the other's contracted axes come first
        t = xp.tensordot(conjugate(other), grad, axes=(free_other, at))
        free_at, contracted_at = len(mine), 0
    source = [0] * ndim
    for i, d in enumerate(free_mine):
        source[d] = free_at + i
    ordered = sorted(theirs)
    for d_mine, d_theirs in zip(mine, theirs, strict=True):
        source[d_mine] = contracted_at + ordered.index(d_theirs)
    return xp.permute_dims(t, tuple(source))


def tensordot_grad_x1(grad: Any, x1: Any, x2: Any, axes: Any) -> Any:
    """The gradient of tensordot(x1, x2, axes=axes) with respect to x1."""
    first, second = _contracted_axes(x1, x2, axes)
    return _tensordot_grad(grad, x2, first, second, x1.ndim, grad_first=True)


def tensordot_grad_x2(grad: Any, x1: Any, x2: Any, axes: Any) -> Any:
    """The gradient of tensordot(x1, x2, axes=axes) with respect to x2."""
    first, second = _contracted_axes(x1, x2, axes)
    return _tensordot_grad(grad, x1, second, first, x2.ndim, grad_first=False)


def diff_grads(grad: Any, x: Any, axis: int, n: int, prepend: Any, append: Any) -> list[Any]:
    """diff's gradients for [prepend, x, append] (None for an absent one): the adjoint of each of the n
    differences (a gradient g of z[1:] - z[:-1] is g[i-1] - g[i] at z[i], zero beyond g's ends), cut at the
    joined input's pieces."""
    xp = _namespace(grad, x)
    for _ in range(n):
        edge = list(grad.shape)
        edge[axis] = 1
        zero = xp.zeros(tuple(edge), dtype=grad.dtype, device=grad.device)
        grad = -xp.diff(xp.concat([zero, grad, zero], axis=axis), axis=axis)
    pieces: list[Any] = []
    start = 0
    for part in (prepend, x, append):
        if part is None:
            pieces.append(None)
            continue
        extent = part.shape[axis] if part.ndim else 1  # a 0-d piece is broadcast to one slice
        index = [slice(None)] * grad.ndim
        index[axis] = slice(start, start + extent)
        pieces.append(grad[tuple(index)])
        start += extent
    return pieces


def at_index(grad: Any, x: Any, key: tuple[Any, ...]) -> Any:
    """grad at the basic index `key` of x's shape, zeros elsewhere. The runtime's namespace places it with no
    zeros of x's size (tensorsmith._gradient_at: the engine adds it into x's gradient at the key); another
    (numpy's, in the gate) gets the dense array."""
    xp = _namespace(grad, x)
    place = getattr(xp, "_gradient_at", None)
    if place is not None:
        return place(key, grad, tuple(x.shape))
    out = xp.zeros(x.shape, dtype=grad.dtype, device=x.device)
    out[key] = grad
    return out


def unstacked_grad(grad: Any, x: Any, axis: int, output: int) -> Any:
    """unstack's gradient from its result `output`: grad at that index along `axis`, zeros elsewhere (so each
    result adds only its own slice: unstacking n rows costs n slices, not n arrays of x's size)."""
    return at_index(grad, x, (slice(None),) * (axis % x.ndim) + (output,))


def only_at(grad: Any, arrays: Any, output: int) -> list[Any]:
    """A list argument's gradients when only its element `output` gets one, grad (None for the others): the
    results of broadcast_arrays are each its own input broadcast, which the engine sums back."""
    return [grad if k == output else None for k in range(len(arrays))]


def meshgrid_grads(grad: Any, arrays: Any, indexing: str, output: int) -> list[Any]:
    """meshgrid's gradients from its result `output`: grad summed over every axis but the one its array runs
    along (the first two swapped by 'xy' indexing), for that array only."""
    xp = _namespace(grad)
    axis = 1 - output if indexing == "xy" and len(arrays) >= 2 and output < 2 else output
    summed = xp.sum(grad, axis=tuple(d for d in range(grad.ndim) if d != axis))
    return only_at(xp.reshape(summed, arrays[output].shape), arrays, output)
