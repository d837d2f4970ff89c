"""Layers, losses and activations for training: ``ts.nn.Linear``, ``ts.nn.functional.cross_entropy``, ..."""

from tensorsmith.nn import functional
from tensorsmith.nn.modules import GELU, Embedding, LayerNorm, Linear, Module, Parameter, ReLU, Sequential, load, save

__all__ = ["functional", "Module", "Parameter", "Linear", "Embedding", "LayerNorm", "ReLU", "GELU", "Sequential", "save",
           "load"]  # fmt: skip
