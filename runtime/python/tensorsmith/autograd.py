"""Reverse-mode automatic differentiation (the engine is C++: runtime/src/python/autograd.cpp).

    x = ts.asarray([1.0, 2.0], dtype=ts.float64)
    x.requires_grad = True
    y = ts.sum(ts.tanh(x) * x)
    y.backward()                       # x.grad now holds dy/dx
    (g,) = ts.autograd.grad(y, [x])    # or: gradients returned rather than accumulated
    y, jv = ts.autograd.jvp(f, [x], [v])   # forward-mode products J v (reverse mode twice); vjp: J^T u

Every op records itself when grad mode is on and an input requires grad; its backward runs the derivative
formulas of its spec (generated into tensorsmith/_derivatives.py). Ops whose spec has no derivatives yet
raise in backward, naming the spec; ops with `derivatives: none` give results that do not require grad.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from tensorsmith import _C, _derivatives
from tensorsmith import _derivative_helpers as _helpers

__all__ = ["backward", "grad", "vjp", "jvp", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "gradcheck"]


def is_grad_enabled() -> bool:
    """Whether ops record for autograd on this thread (on unless inside no_grad())."""
    return _C._is_grad_enabled()


class set_grad_enabled(contextlib.ContextDecorator):  # noqa: N801  (PyTorch's name)
    """Turns grad mode on or off: at once, and back to what it was when used as a context manager."""

    def __init__(self, mode: bool) -> None:
        self.previous = _C._set_grad_enabled(bool(mode))
        self.mode = bool(mode)

    def __enter__(self) -> None:
        _C._set_grad_enabled(self.mode)

    def __exit__(self, *exc: object) -> None:
        _C._set_grad_enabled(self.previous)


class no_grad(contextlib.ContextDecorator):  # noqa: N801
    """Ops inside do not record: their results do not require grad (updates of parameters, evaluation)."""

    def __enter__(self) -> None:
        self.previous = _C._set_grad_enabled(False)

    def __exit__(self, *exc: object) -> None:
        _C._set_grad_enabled(self.previous)


class enable_grad(contextlib.ContextDecorator):  # noqa: N801
    """Ops inside record again (within a no_grad block)."""

    def __enter__(self) -> None:
        self.previous = _C._set_grad_enabled(True)

    def __exit__(self, *exc: object) -> None:
        _C._set_grad_enabled(self.previous)


def _as_list(tensors: Any) -> list[Any]:
    return list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]


def _root_gradients(outputs: list[Any], grad_outputs: Any) -> list[Any]:
    given = [None] * len(outputs) if grad_outputs is None else _as_list(grad_outputs)
    if len(given) != len(outputs):
        raise ValueError(f"{len(given)} gradients for {len(outputs)} outputs")
    result = []
    for i, (out, g) in enumerate(zip(outputs, given, strict=True)):
        if g is None:
            if out.size != 1:
                raise RuntimeError(f"the gradient of output {i} (shape {out.shape}) can only be implied for a single "
                                   "element: pass one with gradient= / grad_outputs=")  # fmt: skip
            g = _C.ones_like(out)
        elif not isinstance(g, _C.Tensor):
            g = _C.asarray(g, dtype=out.dtype, device=out.device)
        result.append(g.detach() if not g.requires_grad else g)
    return result


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None, create_graph: bool = False) -> None:
    """Accumulates the gradients of `tensors` (weighted by `grad_tensors`) into the .grad of every leaf they
    were computed from. The graph is freed unless retain_graph (default: create_graph)."""
    outputs = _as_list(tensors)
    keep = create_graph if retain_graph is None else retain_graph
    _C._run_backward(outputs, _root_gradients(outputs, grad_tensors), [], keep, create_graph, True, False)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool = False) -> tuple[Any, ...]:  # fmt: skip
    """The gradients of `outputs` with respect to `inputs`, returned (no .grad is touched). With
    create_graph they are themselves differentiable (double backward)."""
    outs = _as_list(outputs)
    keep = create_graph if retain_graph is None else retain_graph
    ins = _as_list(inputs)
    return tuple(_C._run_backward(outs, _root_gradients(outs, grad_outputs), ins, keep, create_graph, False, allow_unused))


def vjp(fn: Callable[..., Any], inputs: Sequence[Any], v: Any = None) -> tuple[Any, tuple[Any, ...]]:
    """(fn(*inputs), J^T v): the vector-Jacobian product of fn at `inputs` (tensors) for `v`, one per output
    of its shape (None for a single-element output), as torch.autograd.functional.vjp: each input's gradient,
    zeros where none flows. Computed on detached copies under enable_grad: the inputs' .grad and graphs are
    untouched, and the results are plain tensors."""
    with enable_grad():
        leaves = _differentiable_copies(inputs)
        outputs = fn(*leaves)
        gradients = grad(outputs, leaves, grad_outputs=v, allow_unused=True)
    return _detached(outputs), _zeros_where_none(gradients, leaves)


def jvp(fn: Callable[..., Any], inputs: Sequence[Any], v: Sequence[Any]) -> tuple[Any, Any]:
    """(fn(*inputs), J v): the Jacobian-vector product of fn at `inputs` along the tangents `v` (one per input,
    of its shape), as torch.autograd.functional.jvp, from reverse mode twice: J^T u is linear in u (a stand-in
    for the output's gradient), so its vector-Jacobian product along v is J v. Every formula of the catalog is
    itself differentiable (tests/runtime/test_autograd.py checks each twice), so every op has it. Inputs and
    results as vjp's."""
    tangents = _as_list(v)
    if len(tangents) != len(inputs):
        raise ValueError(f"jvp: {len(tangents)} tangents for {len(inputs)} inputs")
    with enable_grad():
        leaves = _differentiable_copies(inputs)
        outputs = fn(*leaves)
        outs = _as_list(outputs)
        stand_ins = [_C.zeros_like(out.detach()) for out in outs]  # u: J^T u is linear in it, so any value does
        for u in stand_ins:
            u.requires_grad = True
        pulled = grad(outs, leaves, grad_outputs=stand_ins, create_graph=True, allow_unused=True)
        live = [(g, _C.asarray(t, dtype=g.dtype, device=g.device)) for g, t in zip(pulled, tangents, strict=True)
                if g is not None and g.requires_grad]  # fmt: skip
        pushed = grad([g for g, _ in live], stand_ins, grad_outputs=[t for _, t in live], allow_unused=True) if live else [None] * len(outs)
    products = _zeros_where_none(pushed, outs)
    return _detached(outputs), (list(products) if isinstance(outputs, (list, tuple)) else products[0])


def _differentiable_copies(inputs: Sequence[Any]) -> list[Any]:
    """The inputs as leaves that require grad: detached views, so the callers' tensors and graphs are untouched."""
    leaves = []
    for i, x in enumerate(inputs):
        if not isinstance(x, _C.Tensor):
            raise TypeError(f"input {i} must be a tensorsmith Tensor, not {type(x).__name__}")
        leaf = x.detach()
        leaf.requires_grad = True
        leaves.append(leaf)
    return leaves


def _zeros_where_none(values: Sequence[Any], like: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(_C.zeros_like(t.detach()) if g is None else g.detach() for g, t in zip(values, like, strict=True))


def _detached(outputs: Any) -> Any:
    return type(outputs)(o.detach() for o in outputs) if isinstance(outputs, (list, tuple)) else outputs.detach()


# ---- what the engine calls --------------------------------------------------------------------------------


_COMPLEX = (_C.complex64, _C.complex128)


def _fit(g: Any, shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
    """A formula's value as the gradient of an input: the input's shape (broadcasting summed away), dtype
    and device; a complex value for a real input, its real part (dL/dRe: a real x times a complex y). A
    Python number (a formula like `grad * 0`) becomes a full tensor."""
    if not isinstance(g, _C.Tensor):
        g = _C.asarray(g, dtype=dtype, device=device)
    if g.shape != shape:
        try:
            g = _C.broadcast_to(g, shape) if _broadcasts_to(g.shape, shape) else _helpers.sum_to(g, shape)
        except ValueError:
            raise RuntimeError(f"a derivative formula gave shape {g.shape} for an input of shape {shape}") from None
    if g.dtype in _COMPLEX and dtype not in _COMPLEX:
        g = _C.real(g)
    if g.dtype != dtype:
        g = g.astype(dtype)
    if g.device != device:
        g = g.to_device(device)
    return g


def _broadcasts_to(source: tuple[int, ...], target: tuple[int, ...]) -> bool:
    if len(source) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(source[::-1], target[::-1], strict=False))


def _apply_formulas(op: str, grad_: Any, result: Any, arguments: tuple[Any, ...], differentiable: Sequence[int],
                    slots: Sequence[tuple[int, int, bool]], output: int = -1) -> list[Any]:  # fmt: skip
    """One node's backward: the op's formulas on (grad, result, arguments), and each slot's value picked out
    (None where no gradient is wanted or the formula gives none). `slots` describe the inputs gradients go to:
    (argument position, element of a list argument or -1, whether a gradient is wanted); `output`, for an op
    with several results, which one grad and result are of (-1: the only one). The engine takes a value that
    already has its input's shape, dtype and device as it is, and fits any other with _fit."""
    formulas = _derivatives.FORMULAS.get(op) or RUNTIME_FORMULAS[op]
    wanted = tuple(any(s[2] for s in slots if s[0] == position) for position in differentiable)
    values = formulas(wanted, grad_, result, *arguments, *((output,) if output >= 0 else ()))
    by_argument = dict(zip(differentiable, values, strict=True))
    picked = []
    for position, element, flows in slots:
        value = by_argument[position] if flows else None
        picked.append(value[element] if value is not None and element >= 0 else value)
    return picked


class _ScatteredGradient(NamedTuple):
    """A formula's gradient that is `value` at the basic index `key` of its input and zero elsewhere: the engine
    adds it into the input's gradient at the key (no tensor of zeros of the input's size)."""

    key: Any
    value: Any


def _gradient_at(key: Any, value: Any, shape: tuple[int, ...]) -> Any:
    """A gradient that is `value` at the basic index `key` of an input of `shape` and zero elsewhere: one the
    engine adds into the input's gradient at the key (no zeros of the input's size), or under create_graph
    (double backward, jvp) a recorded op, itself differentiable. The derivative helpers reach it as the
    namespace's `_gradient_at` (helpers.at_index)."""
    if _C._is_grad_enabled():
        return _C._scatter_view(value, key, shape)
    return _ScatteredGradient(key, value)


def _getitem_backward(wanted: tuple[bool, ...], grad_: Any, result: Any, x: Any, key: Any) -> tuple[Any, ...]:
    if not wanted[0]:
        return (None,)
    if _is_basic_key(key):  # a view picks each element at most once: grad belongs at the key, zeros elsewhere
        return (_gradient_at(key, grad_, x.shape),)
    if isinstance(key, _C.Tensor) and key.ndim >= 1 and key.dtype != _C.bool and x.ndim >= 1:  # x[ids]: whole rows
        return (_helpers.scatter_add_rows(x, key, grad_),)
    return (_helpers.scatter_add(x, _helpers.positions_of(x)[key], grad_),)


def _is_basic_key(key: Any) -> bool:
    """Ints (bools too: they pick all or nothing), slices, None and Ellipsis only: numpy's basic indexing."""
    items = key if isinstance(key, tuple) else (key,)
    return all(isinstance(k, (int, slice)) or k is None or k is Ellipsis for k in items)


# Derivatives of the hand-written Tensor methods that are not catalog ops (their nodes record under these names).
RUNTIME_FORMULAS: dict[str, Callable[..., tuple[Any, ...]]] = {
    "__getitem__": _getitem_backward,
    "_scatter_view": lambda wanted, g, result, value, key, shape: (g[key],),
    "astype": lambda wanted, g, result, x, *rest: (g,),  # the engine casts back to x's dtype
    "copy": lambda wanted, g, result, x: (g,),
    "to_device": lambda wanted, g, result, x, *rest: (g,),  # and moves it back to x's device
}


# ---- gradcheck ---------------------------------------------------------------------------------------------


def gradcheck(fn: Callable[..., Any], inputs: Sequence[Any], eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              seed: int = 0) -> bool:  # fmt: skip
    """Compares the gradient backward computes for fn(*inputs) (float64 or complex128 inputs that require
    grad; fn gives a tensor or a sequence of them) with central finite differences of fn: <v, J> for a random
    v of each output's shape, the loss Re(sum(conj(v) * output)) for a complex output; a complex input's
    gradient is dL/dRe + i dL/dIm, each part from differences along that part. An output that does not require
    grad is a constant (zero gradient). Raises AssertionError naming the first differing entry; returns True
    otherwise (PyTorch's gradcheck, in vector form)."""
    import numpy as np

    differentiable = [i for i, a in enumerate(inputs) if isinstance(a, _C.Tensor) and a.requires_grad]
    if not differentiable:
        raise ValueError("gradcheck: no input requires grad")
    for i in differentiable:
        if inputs[i].dtype not in (_C.float64, _C.complex128):
            raise ValueError(f"gradcheck: input {i} is {inputs[i].dtype}; finite differences need float64 or complex128")
    outputs = _as_list(fn(*inputs))  # several results: the loss sums each one's
    rng = np.random.default_rng(seed)
    ws = []
    for out in outputs:
        w = rng.standard_normal(out.shape)
        ws.append(w + 1j * rng.standard_normal(out.shape) if out.dtype in _COMPLEX else w)
    weights = [_C.asarray(w, dtype=out.dtype, device=out.device) for w, out in zip(ws, outputs, strict=True)]
    live = [k for k, out in enumerate(outputs) if out.requires_grad]  # the others are constants: no gradient
    analytic = (grad([outputs[k] for k in live], [inputs[i] for i in differentiable], grad_outputs=[weights[k] for k in live],
                     allow_unused=True) if live else (None,) * len(differentiable))  # fmt: skip

    def weighted(args: list[Any]) -> float:
        with no_grad():
            outs = _as_list(fn(*args))
            return sum(float(np.sum(np.real(np.conj(w) * np.asarray(o.to_device("cpu"))))) for o, w in zip(outs, ws, strict=True))

    for which, i in enumerate(differentiable):
        base = np.asarray(inputs[i].to_device("cpu")).copy()
        numeric = np.zeros(base.shape, dtype=base.dtype)
        for index in np.ndindex(base.shape):
            for direction in (1, 1j) if np.iscomplexobj(base) else (1,):
                probe = []
                for sign in (1, -1):
                    moved = base.copy()
                    moved[index] += sign * eps * direction
                    args = list(inputs)
                    args[i] = _C.asarray(moved, device=inputs[i].device)
                    probe.append(weighted(args))
                numeric[index] += direction * (probe[0] - probe[1]) / (2 * eps)
        got = np.zeros(base.shape) if analytic[which] is None else np.asarray(analytic[which].to_device("cpu"))
        bad = ~np.isclose(got, numeric, rtol=rtol, atol=atol)
        if bad.any():
            index = tuple(int(k) for k in np.argwhere(bad)[0])
            raise AssertionError(f"gradcheck: input {i}, entry {index}: backward gives {got[index]!r}, finite "
                                 f"differences {numeric[index]!r}")  # fmt: skip
    return True
