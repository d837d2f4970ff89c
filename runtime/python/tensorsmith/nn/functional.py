"""Neural-network functions (PyTorch's torch.nn.functional names and semantics), composed of catalog ops, so
their gradients come from the ops' derivative formulas."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from tensorsmith import _C
from tensorsmith._data_types import finfo
from tensorsmith.random import Generator

__all__ = ["linear", "relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax", "layer_norm", "rms_norm",
           "embedding", "dropout", "cross_entropy", "mse_loss", "scaled_dot_product_attention"]  # fmt: skip

relu = _C.relu
sigmoid = _C.sigmoid
tanh = _C.tanh


def softmax(x: Any, dim: int = -1) -> Any:
    return _C.softmax(x, axis=dim)


def log_softmax(x: Any, dim: int = -1) -> Any:
    return _C.log_softmax(x, axis=dim)


def linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """x @ weight.T + bias, weight of shape (out_features, in_features)."""
    y = _C.matmul(x, weight.mT)
    return y if bias is None else y + bias


def gelu(x: Any, approximate: str = "none") -> Any:
    """x * Phi(x), Phi the standard normal CDF; approximate='tanh' is the tanh form: the catalog's gelu
    (specs/gelu.yaml), one op whose backward is one node."""
    return _C.gelu(x, approximate=approximate)


def silu(x: Any) -> Any:
    return x * _C.sigmoid(x)


def _normalized_axes(x: Any, normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape) :]) != shape:
        raise ValueError(f"normalized_shape {shape} does not match the trailing dimensions of an input of shape {x.shape}")
    return tuple(range(x.ndim - len(shape), x.ndim))


def layer_norm(x: Any, normalized_shape: int | Sequence[int], weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:
    """(x - mean) / sqrt(var + eps) over the trailing `normalized_shape` dimensions, then * weight + bias: the
    catalog's layer_norm (specs/layer_norm.yaml), one op whose backward is one node."""
    return _C.layer_norm(x, normalized_shape, weight, bias, eps=eps)


def rms_norm(x: Any, normalized_shape: int | Sequence[int], weight: Any = None, eps: float | None = None) -> Any:
    """x / sqrt(mean(x^2) + eps) over the trailing dimensions, then * weight (eps: the dtype's machine epsilon
    by default, as PyTorch's)."""
    axes = _normalized_axes(x, normalized_shape)
    if eps is None:
        eps = float(finfo(x.dtype).eps)
    y = x / _C.sqrt(_C.mean(x * x, axis=axes, keepdims=True) + eps)
    return y if weight is None else y * weight


def embedding(ids: Any, weight: Any) -> Any:
    """The rows of weight at integer `ids` (any shape): shape ids.shape + (embedding_dim,)."""
    return weight[ids]


def dropout(x: Any, p: float = 0.5, training: bool = True, generator: Generator | None = None) -> Any:
    """Each element zeroed with probability p and the rest scaled by 1/(1 - p), in training; x otherwise."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], not {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    if generator is None:
        raise ValueError("dropout in training needs a generator (ts.random.Generator(seed)): draws are explicit")
    keep = generator.uniform(shape=x.shape, dtype=x.dtype, device=x.device) >= p
    return x * keep.astype(x.dtype) * (1.0 / (1.0 - p))


def cross_entropy(logits: Any, target: Any, ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Any:  # fmt: skip
    """Softmax cross-entropy of logits (N, C) (or (C,)) against integer class targets (N,), as PyTorch's: with
    label smoothing, (1 - s) * nll + s * mean over classes of -log p; targets equal to ignore_index count for
    nothing (and are left out of the mean). The catalog's cross_entropy (specs/cross_entropy.yaml): one op
    whose backward is one node."""
    return _C.cross_entropy(logits, target, ignore_index=ignore_index, reduction=reduction, label_smoothing=label_smoothing)


def mse_loss(x: Any, target: Any, reduction: str = "mean") -> Any:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', not {reduction!r}")
    d = x - target
    squared = d * d
    return squared if reduction == "none" else _C.sum(squared) if reduction == "sum" else _C.mean(squared)


@functools.lru_cache(maxsize=16)
def _causal_mask(length: int, source: int, device: Any) -> Any:
    """True on and below the diagonal: each query sees its own position and those before it. Made once per
    shape and device (two ops in every attention call before); only where() reads it, so it is never written."""
    return _C.tril(_C.ones((length, source), dtype=_C.bool, device=device))


def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None, is_causal: bool = False,
                                 scale: float | None = None) -> Any:  # fmt: skip
    """softmax(query @ key^T * scale + mask) @ value over the last two dimensions (..., L, E) x (..., S, E);
    is_causal masks the positions after each query's own (a boolean attn_mask keeps where True)."""
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = _C.matmul(query, key.mT) * scale
    length, source = query.shape[-2], key.shape[-2]
    if is_causal:
        if attn_mask is not None:
            raise ValueError("pass either attn_mask or is_causal, not both")
        attn_mask = _causal_mask(length, source, query.device)
    if attn_mask is not None:
        if attn_mask.dtype == _C.bool:
            scores = _C.where(attn_mask, scores, -math.inf)
        else:
            scores = scores + attn_mask
    return _C.matmul(_C.softmax(scores, axis=-1), value)
