"""Optimizers (PyTorch's torch.optim names and update rules): SGD with momentum, AdamW. A step updates each
parameter in place under no_grad with one fused generated kernel, so the parameters stay the leaves the model
holds."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from tensorsmith import _C
from tensorsmith.autograd import no_grad

__all__ = ["Optimizer", "SGD", "AdamW"]


class Optimizer:
    """A step updates each parameter with one fused generated kernel (the update family: specs/_sgd_update.yaml,
    _sgd_momentum_update.yaml, _sgd_nesterov_update.yaml, _adamw_update.yaml), which reads the parameter, its
    gradient and its state once and writes the parameter and the state in place: one pass over memory per
    parameter tensor, where the same update in array ops takes a dozen. A parameter without a gradient this step
    is left as it is, its state too (PyTorch's rule)."""

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

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = _C.zeros_like(p.grad)

    def step(self) -> None:
        with no_grad():
            for p, state in zip(self.params, self.state):
                if p.grad is not None:
                    self._update(p, p.grad, state)

    def _update(self, p: Any, g: Any, state: dict[str, Any]) -> None:
        """One parameter's step: p and the tensors in `state` updated in place (the state made on the first)."""
        raise NotImplementedError


class SGD(Optimizer):
    """p -= lr * (g + weight_decay * p), with momentum buffer b = momentum * b + (g + weight_decay * p) (nesterov:
    the step is g + weight_decay * p + momentum * b); the buffer starts at zero, so the first step's is the
    gradient, as PyTorch's."""

    def __init__(self, params: Iterable[Any], lr: float, momentum: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None:  # fmt: skip
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError("lr, momentum and weight_decay must be non-negative")
        if nesterov and momentum == 0:
            raise ValueError("nesterov momentum needs momentum > 0")
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay, "nesterov": nesterov})
        self.lr, self.momentum, self.weight_decay, self.nesterov = lr, momentum, weight_decay, nesterov

    def _update(self, p: Any, g: Any, state: dict[str, Any]) -> None:
        lr, weight_decay = float(self.lr), float(self.weight_decay)
        if not self.momentum:
            _C._sgd_update(p, g, lr=lr, weight_decay=weight_decay)
            return
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = _C.zeros_like(p)
        update = _C._sgd_nesterov_update if self.nesterov else _C._sgd_momentum_update
        update(p, state["momentum_buffer"], g, lr=lr, weight_decay=weight_decay, momentum=float(self.momentum))


class AdamW(Optimizer):
    """Adam with decoupled weight decay (Loshchilov and Hutter), PyTorch's AdamW: p *= 1 - lr * weight_decay,
    m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, p -= lr * m_hat / (sqrt(v_hat) + eps), at each parameter's own
    step count."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2) -> None:  # fmt: skip
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError("AdamW needs lr, eps, weight_decay >= 0 and betas in [0, 1)")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay

    def _update(self, p: Any, g: Any, state: dict[str, Any]) -> None:
        if not state:
            state.update(step=0, exp_avg=_C.zeros_like(p), exp_avg_sq=_C.zeros_like(p))
        state["step"] += 1
        b1, b2 = (float(b) for b in self.betas)
        t = state["step"]
        _C._adamw_update(p, state["exp_avg"], state["exp_avg_sq"], g, lr=float(self.lr),
                         weight_decay=float(self.weight_decay), beta1=b1, beta2=b2, eps=float(self.eps),
                         bias_correction1=1.0 - b1**t, bias_correction2_sqrt=math.sqrt(1.0 - b2**t))  # fmt: skip
