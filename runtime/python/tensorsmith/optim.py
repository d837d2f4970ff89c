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
    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        for i, p in enumerate(self.params):
            if not (isinstance(p, _C.Tensor) and p.requires_grad and p.is_leaf):
                raise TypeError(f"parameter {i} is not a leaf tensor that requires grad")
        self.defaults = defaults
        self.state: list[dict[str, Any]] = [{} for _ in self.params]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = _C.zeros_like(p.grad)

    def step(self) -> None:
        with no_grad():
            for p, state in zip(self.params, self.state, strict=True):
                if p.grad is not None:
                    self._update(p, p.grad, state)

    def _update(self, p: Any, g: Any, state: dict[str, Any]) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """p -= lr * (g + weight_decay * p), with momentum buffer b = momentum * b + g (nesterov: g + momentum * b)."""

    def __init__(self, params: Iterable[Any], lr: float, momentum: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None:  # fmt: skip
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError("lr, momentum and weight_decay must be non-negative")
        if nesterov and momentum == 0:
            raise ValueError("nesterov momentum needs momentum > 0")
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay, "nesterov": nesterov})
        self.lr, self.momentum, self.weight_decay, self.nesterov = lr, momentum, weight_decay, nesterov

    def _update(self, p: Any, g: Any, state: dict[str, Any]) -> None:
        if self.weight_decay:
            g = g + self.weight_decay * p
        if self.momentum:
            buffer = state.get("momentum_buffer")
            if buffer is None:
                buffer = state["momentum_buffer"] = g.copy()
            else:
                _C.multiply(buffer, self.momentum, out=buffer)
                _C.add(buffer, g, out=buffer)
            g = g + self.momentum * buffer if self.nesterov else buffer
        _C.subtract(p, self.lr * g, out=p)


class AdamW(Optimizer):
    """Adam with decoupled weight decay (Loshchilov and Hutter), PyTorch's AdamW: p *= 1 - lr * weight_decay,
    m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, p -= lr * m_hat / (sqrt(v_hat) + eps)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2) -> None:  # fmt: skip
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError("AdamW needs lr, eps, weight_decay >= 0 and betas in [0, 1)")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay

    def _update(self, p: Any, g: Any, state: dict[str, Any]) -> None:
        b1, b2 = self.betas
        if not state:
            state["step"] = 0
            state["m"] = _C.zeros_like(p)
            state["v"] = _C.zeros_like(p)
        state["step"] += 1
        t, m, v = state["step"], state["m"], state["v"]
        if self.weight_decay:
            _C.multiply(p, 1.0 - self.lr * self.weight_decay, out=p)
        _C.add(m * b1, g * (1.0 - b1), out=m)
        _C.add(v * b2, g * g * (1.0 - b2), out=v)
        step_size = self.lr / (1.0 - b1**t)
        denominator = _C.sqrt(v) * (1.0 / math.sqrt(1.0 - b2**t)) + self.eps
        _C.subtract(p, step_size * (m / denominator), out=p)
