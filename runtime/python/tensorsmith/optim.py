"""Optimizers (PyTorch's torch.optim names and update rules): SGD with momentum, AdamW. A step updates each
parameter in place under no_grad, so the parameters stay the leaves the model holds."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from tensorsmith import _C
from tensorsmith.autograd import no_grad

__all__ = ["Optimizer", "SGD", "AdamW"]


class Optimizer:
    """The parameters of one dtype and device are updated together: their parameters and gradients gathered
    into one flat tensor each, the update's ops run once over it, the new values written back (a dozen ops
    per step and group, not a dozen per parameter: PyTorch's multi-tensor idea). The state (momentum, moments)
    lives in flat buffers per group; each parameter's state entries are views of them. Elementwise ops are
    independent per element, so this computes exactly what a per-parameter update computes; a group in which
    some parameter has no gradient this step, or whose parameters have taken different numbers of steps, is
    updated a parameter at a time with the same ops on the same views."""

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        for i, p in enumerate(self.params):
            if not (isinstance(p, _C.Tensor) and p.requires_grad and p.is_leaf):
                raise TypeError(f"parameter {i} is not a leaf tensor that requires grad")
        if len({id(p) for p in self.params}) != len(self.params):
            raise ValueError("optimizer got a parameter more than once")
        self.defaults = defaults
        self.state: list[dict[str, Any]] = [{} for _ in self.params]
        groups: dict[tuple[str, str], list[int]] = {}
        for i, p in enumerate(self.params):
            groups.setdefault((str(p.dtype), str(p.device)), []).append(i)
        self._groups = [_Group(self.params, indices) for indices in groups.values()]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = _C.zeros_like(p.grad)

    def step(self) -> None:
        with no_grad():
            for group in self._groups:
                ready = [i for i in group.indices if self.params[i].grad is not None]
                if not ready:
                    continue
                if group.buffers is None:  # the first step: the group's state, every parameter's entries
                    group.buffers = {name: group.zeros() for name in self._buffer_names}
                    for k, i in enumerate(group.indices):
                        self.state[i].update({name: group.view(flat, k) for name, flat in group.buffers.items()})
                        self.state[i].update(self._initial_state())
                together = len(ready) == len(group.indices) and len({self._state_key(self.state[i]) for i in ready}) == 1
                if together:
                    p = group.gather([self.params[i] for i in ready])
                    g = group.gather([self.params[i].grad for i in ready])
                    self._update(p, g, group.buffers, [self.state[i] for i in ready])
                    group.scatter(p, [self.params[i] for i in ready])
                else:
                    for i in ready:
                        self._update(self.params[i], self.params[i].grad, self.state[i], [self.state[i]])

    # What a subclass defines: the flat buffers its state needs, the rest of a parameter's initial state, what
    # must agree among parameters updated together, and the update itself: p, g and the named buffers of one
    # parameter or of a whole group (p and the buffers updated in place), with the states that take the step.
    _buffer_names: tuple[str, ...] = ()

    def _initial_state(self) -> dict[str, Any]:
        return {}

    def _state_key(self, state: dict[str, Any]) -> Any:
        return None

    def _update(self, p: Any, g: Any, buffers: dict[str, Any], states: list[dict[str, Any]]) -> None:
        raise NotImplementedError


class _Group:
    """Parameters of one dtype and device, and where each sits in flat tensors of all of them (in order)."""

    def __init__(self, params: list[Any], indices: list[int]) -> None:
        self.indices = indices
        self.shapes = [tuple(params[i].shape) for i in indices]
        sizes = [math.prod(shape) for shape in self.shapes]
        self.offsets = [sum(sizes[:k]) for k in range(len(sizes) + 1)]
        self.dtype, self.device = params[indices[0]].dtype, params[indices[0]].device
        self.buffers: dict[str, Any] | None = None  # the flat state, by name; None before the first step

    def zeros(self) -> Any:
        return _C.zeros((self.offsets[-1],), dtype=self.dtype, device=self.device)

    def view(self, flat: Any, k: int) -> Any:
        return _C.reshape(flat[self.offsets[k] : self.offsets[k + 1]], self.shapes[k])

    def gather(self, tensors: list[Any]) -> Any:
        """A new flat tensor holding the tensors' elements (always a copy: the update writes into it)."""
        return _C.concat([_C.reshape(t, (-1,)) for t in tensors])

    def scatter(self, flat: Any, targets: list[Any]) -> None:
        for k, target in enumerate(targets):
            target[...] = self.view(flat, k)


class SGD(Optimizer):
    """p -= lr * (g + weight_decay * p), with momentum buffer b = momentum * b + g (nesterov: g + momentum * b);
    the buffer starts as the first step's g, as PyTorch's."""

    def __init__(self, params: Iterable[Any], lr: float, momentum: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None:  # fmt: skip
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError("lr, momentum and weight_decay must be non-negative")
        if nesterov and momentum == 0:
            raise ValueError("nesterov momentum needs momentum > 0")
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay, "nesterov": nesterov})
        self.lr, self.momentum, self.weight_decay, self.nesterov = lr, momentum, weight_decay, nesterov
        self._buffer_names = ("momentum_buffer",) if momentum else ()

    def _initial_state(self) -> dict[str, Any]:
        return {"momentum_started": False} if self.momentum else {}

    def _state_key(self, state: dict[str, Any]) -> Any:
        return state.get("momentum_started")

    def _update(self, p: Any, g: Any, buffers: dict[str, Any], states: list[dict[str, Any]]) -> None:
        if self.weight_decay:
            g = g + self.weight_decay * p
        if self.momentum:
            buffer = buffers["momentum_buffer"]
            if states[0]["momentum_started"]:
                _C.multiply(buffer, self.momentum, out=buffer)
                _C.add(buffer, g, out=buffer)
            else:
                buffer[...] = g
                for state in states:
                    state["momentum_started"] = True
            g = g + self.momentum * buffer if self.nesterov else buffer
        _C.subtract(p, self.lr * g, out=p)


class AdamW(Optimizer):
    """Adam with decoupled weight decay (Loshchilov and Hutter), PyTorch's AdamW: p *= 1 - lr * weight_decay,
    m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, p -= lr * m_hat / (sqrt(v_hat) + eps)."""

    _buffer_names = ("m", "v")

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2) -> None:  # fmt: skip
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError("AdamW needs lr, eps, weight_decay >= 0 and betas in [0, 1)")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay

    def _initial_state(self) -> dict[str, Any]:
        return {"step": 0}

    def _state_key(self, state: dict[str, Any]) -> Any:
        return state["step"]

    def _update(self, p: Any, g: Any, buffers: dict[str, Any], states: list[dict[str, Any]]) -> None:
        b1, b2 = self.betas
        for state in states:
            state["step"] += 1
        t, m, v = states[0]["step"], buffers["m"], buffers["v"]
        if self.weight_decay:
            _C.multiply(p, 1.0 - self.lr * self.weight_decay, out=p)
        _C.add(m * b1, g * (1.0 - b1), out=m)
        _C.add(v * b2, g * g * (1.0 - b2), out=v)
        step_size = self.lr / (1.0 - b1**t)
        denominator = _C.sqrt(v) * (1.0 / math.sqrt(1.0 - b2**t)) + self.eps
        _C.subtract(p, step_size * (m / denominator), out=p)
