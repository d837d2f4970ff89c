"""Layers with parameters (PyTorch's torch.nn names): Module, Parameter, Linear, Embedding, LayerNorm, Sequential,
and state dicts saved to numpy (.npz) or safetensors files."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tensorsmith import _C
from tensorsmith.autograd import no_grad
from tensorsmith.nn import functional as F
from tensorsmith.random import Generator

__all__ = ["Parameter", "Module", "Linear", "Embedding", "LayerNorm", "Sequential", "ReLU", "GELU", "save", "load"]


def Parameter(data: Any, requires_grad: bool = True) -> Any:  # noqa: N802  (PyTorch's name)
    """A leaf tensor that a Module registers as a parameter: a copy of `data`'s values, outside any graph,
    requiring grad."""
    t = _C.asarray(data.detach() if isinstance(data, _C.Tensor) else data, copy=True)
    if requires_grad:
        t.requires_grad = True
    return t


class Module:
    """A layer: tensors that require grad assigned as attributes are its parameters, other tensors its buffers,
    Modules its children; calling it runs forward()."""

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}.__init__ must call super().__init__() before assigning {name}")
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        if isinstance(value, _C.Tensor):
            (self._parameters if value.requires_grad and value.is_leaf else self._buffers)[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} defines no forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # -- traversal
    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        yield prefix, self
        for name, child in self._modules.items():
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def named_parameters(self) -> Iterator[tuple[str, Any]]:
        for path, module in self.named_modules():
            for name, p in module._parameters.items():
                yield (f"{path}.{name}" if path else name), p

    def parameters(self) -> Iterator[Any]:
        for _name, p in self.named_parameters():
            yield p

    def children(self) -> Iterator[Module]:
        yield from self._modules.values()

    def train(self, mode: bool = True) -> Module:
        for _path, module in self.named_modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    # -- state
    def state_dict(self) -> dict[str, Any]:
        """Every parameter and buffer by its dotted path, detached (sharing memory)."""
        state = {}
        for path, module in self.named_modules():
            for name, t in (*module._parameters.items(), *module._buffers.items()):
                state[f"{path}.{name}" if path else name] = t.detach()
        return state

    def load_state_dict(self, state: dict[str, Any], strict: bool = True) -> None:
        """Copies values into the parameters and buffers (in place: optimizers keep their references)."""
        own = {}
        for path, module in self.named_modules():
            for name in (*module._parameters, *module._buffers):
                own[f"{path}.{name}" if path else name] = (module, name)
        missing, unexpected = sorted(set(own) - set(state)), sorted(set(state) - set(own))
        if strict and (missing or unexpected):
            raise KeyError(f"state dict does not match the module: missing {missing}, unexpected {unexpected}")
        for key in set(own) & set(state):
            module, name = own[key]
            target = getattr(module, name)
            value = _C.asarray(np.asarray(state[key]) if not isinstance(state[key], _C.Tensor) else state[key])
            if value.shape != target.shape:
                raise ValueError(f"{key}: shape {value.shape} in the state dict, {target.shape} in the module")
            with no_grad():
                target[...] = value.to_device(target.device).astype(target.dtype)

    def to(self, device: Any) -> Module:
        """Moves every parameter and buffer to `device` (new leaves there)."""
        for _path, module in self.named_modules():
            for table in (module._parameters, module._buffers):
                for name, t in list(table.items()):
                    moved = t.detach().to_device(device)
                    if t.requires_grad:
                        moved.requires_grad = True
                    setattr(module, name, moved)
        return self

    def __repr__(self) -> str:
        inner = "".join(f"\n  ({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items())
        return f"{type(self).__name__}({self.extra_repr()}{inner}{chr(10) if inner else ''})"

    def extra_repr(self) -> str:
        return ""


def _generator(generator: Generator | None) -> Generator:
    return generator if generator is not None else Generator()


class Linear(Module):
    """y = x @ weight.T + bias; weight (out_features, in_features) and bias drawn uniformly from
    [-1/sqrt(in_features), 1/sqrt(in_features)), as PyTorch's defaults."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, dtype: Any = None, device: Any = None,
                 generator: Generator | None = None) -> None:  # fmt: skip
        super().__init__()
        g = _generator(generator)
        bound = 1.0 / math.sqrt(in_features) if in_features else 0.0
        dtype = dtype or _C.float32
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(g.uniform(-bound, bound, (out_features, in_features), dtype=dtype, device=device))
        self.bias = Parameter(g.uniform(-bound, bound, (out_features,), dtype=dtype, device=device)) if bias else None

    def forward(self, x: Any) -> Any:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """Rows of weight (num_embeddings, embedding_dim), drawn from N(0, 1), looked up by integer ids."""

    def __init__(self, num_embeddings: int, embedding_dim: int, *, dtype: Any = None, device: Any = None,
                 generator: Generator | None = None) -> None:  # fmt: skip
        super().__init__()
        g = _generator(generator)
        self.weight = Parameter(g.normal(0.0, 1.0, (num_embeddings, embedding_dim), dtype=dtype or _C.float32, device=device))

    def forward(self, ids: Any) -> Any:
        return F.embedding(ids, self.weight)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, {self.weight.shape[1]}"


class LayerNorm(Module):
    def __init__(self, normalized_shape: int | tuple[int, ...], eps: float = 1e-5, *, dtype: Any = None, device: Any = None) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = Parameter(_C.ones(shape, dtype=dtype or _C.float32, device=device))
        self.bias = Parameter(_C.zeros(shape, dtype=dtype or _C.float32, device=device))

    def forward(self, x: Any) -> Any:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


class ReLU(Module):
    def forward(self, x: Any) -> Any:
        return F.relu(x)


class GELU(Module):
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Any) -> Any:
        return F.gelu(x, approximate=self.approximate)


class Sequential(Module):
    def __init__(self, *layers: Module) -> None:
        super().__init__()
        for i, layer in enumerate(layers):
            setattr(self, str(i), layer)

    def forward(self, x: Any) -> Any:
        for layer in self._modules.values():
            x = layer(x)
        return x


def save(state: dict[str, Any] | Module, path: str | Path) -> None:
    """Writes a state dict (or a module's) to `path`: safetensors for a .safetensors name (needs the
    safetensors package), else numpy's .npz."""
    tensors = state.state_dict() if isinstance(state, Module) else state
    arrays = {k: np.asarray(v.to_device("cpu")) if isinstance(v, _C.Tensor) else np.asarray(v) for k, v in tensors.items()}
    path = Path(path)
    if path.suffix == ".safetensors":
        _safetensors().save_file(arrays, str(path))
    else:
        with path.open("wb") as f:
            np.savez(f, **arrays)


def load(path: str | Path) -> dict[str, Any]:
    """A state dict read back from save()'s file, as tensors."""
    path = Path(path)
    arrays = _safetensors().load_file(str(path)) if path.suffix == ".safetensors" else dict(np.load(path))
    return {k: _C.asarray(v) for k, v in arrays.items()}


def _safetensors() -> Any:
    try:
        from safetensors import numpy as safetensors_numpy
    except ImportError:
        raise ImportError("a .safetensors file needs the safetensors package: pip install safetensors") from None
    return safetensors_numpy
