"""Random numbers from explicit generators: ``g = ts.random.Generator(seed)``, then ``g.uniform``, ``g.normal``,
``g.integers``, ``g.permutation``.

The bit stream is numpy's Philox4x32-10, a counter-based generator keyed by the seed (through numpy's
SeedSequence), so a seed gives the same values on every machine and every device, and ``spawn`` splits a
generator into independent streams (one per worker, per data loader, per layer). Draws are made in host memory
and sent to ``device``: a CUDA tensor holds exactly the values a CPU one would (drawing on the device itself is
the faster way for large CUDA tensors, and not written yet). float32 and 16-bit results are drawn in float32
(numpy's float32 streams), float64 ones in float64: a dtype changes the values, as it does in numpy and PyTorch.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from tensorsmith import _C

_FLOAT_DRAW = {"float16": np.float32, "bfloat16": np.float32, "float32": np.float32, "float64": np.float64}


class Generator:
    """A stream of random numbers; ``seed`` (a non-negative int, or None for fresh entropy from the operating
    system) fixes every value it will draw."""

    def __init__(self, seed: int | None = None) -> None:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise TypeError(f"seed must be a non-negative int or None, not {seed!r}")
        self._init(np.random.SeedSequence(None if seed is None else int(seed)))

    def _init(self, seeds: np.random.SeedSequence) -> None:
        self._seeds = seeds
        self._numpy = np.random.Generator(np.random.Philox(seeds))

    @property
    def seed(self) -> int:
        """The entropy the stream was keyed by (what to record to draw the same values again)."""
        return int(self._seeds.entropy)

    def spawn(self, n: int) -> list[Generator]:
        """n new generators whose streams are independent of this one's and of each other's (numpy's
        SeedSequence.spawn): the same n children for the same seed, whatever this generator has drawn."""
        children = []
        for seeds in self._seeds.spawn(operator.index(n)):
            child = Generator.__new__(Generator)
            child._init(seeds)
            children.append(child)
        return children

    def get_state(self) -> dict[str, Any]:
        """Where the stream stands (a dict of plain values), for set_state: a checkpoint of the generator."""
        return {"seed": self.seed, "spawn_key": tuple(self._seeds.spawn_key), "bit_generator": self._numpy.bit_generator.state}

    def set_state(self, state: dict[str, Any]) -> None:
        """Continues the stream from a get_state() checkpoint."""
        self._init(np.random.SeedSequence(state["seed"], spawn_key=tuple(state["spawn_key"])))
        self._numpy.bit_generator.state = state["bit_generator"]

    def uniform(self, low: float = 0.0, high: float = 1.0, shape: int | tuple[int, ...] = (), *, dtype: Any = None,
                device: Any = None) -> _C.Tensor:
        """Values drawn uniformly from [low, high) (float64 unless dtype says another real floating dtype)."""
        name, draw = _float_dtype(dtype, "uniform")
        unit = self._numpy.random(_shape(shape), dtype=draw)
        return _C.asarray(draw(low) + (draw(high) - draw(low)) * unit, dtype=name, device=device)

    def normal(self, loc: float = 0.0, scale: float = 1.0, shape: int | tuple[int, ...] = (), *, dtype: Any = None,
               device: Any = None) -> _C.Tensor:
        """Values drawn from the normal distribution of mean loc and standard deviation scale (>= 0)."""
        if not scale >= 0:
            raise ValueError(f"normal: scale must be non-negative, not {scale!r}")
        name, draw = _float_dtype(dtype, "normal")
        values = self._numpy.standard_normal(_shape(shape), dtype=draw)
        return _C.asarray(draw(loc) + draw(scale) * values, dtype=name, device=device)

    def integers(self, low: int, high: int | None = None, shape: int | tuple[int, ...] = (), *, dtype: Any = None,
                 device: Any = None, endpoint: bool = False) -> _C.Tensor:
        """Integers drawn uniformly from [low, high) ([low, high] with endpoint=True; [0, low) when high is None),
        of an integer dtype (int64 unless dtype says another); numpy's ValueError when the range is empty or does
        not fit the dtype."""
        name = "int64" if dtype is None else _C.dtype(dtype).name
        if not name.startswith(("int", "uint")):
            raise TypeError(f"integers: dtype must be an integer dtype, not {name}")
        values = self._numpy.integers(low, high, _shape(shape), dtype=np.dtype(name), endpoint=endpoint)
        return _C.asarray(values, device=device)

    def permutation(self, x: int | _C.Tensor, *, device: Any = None) -> _C.Tensor:
        """A random ordering: of range(x) as int64 when x is an int, else of x's rows (axis 0), a copy on x's
        device unless device says another."""
        if isinstance(x, _C.Tensor):
            if x.ndim == 0:
                raise ValueError("permutation: a tensor must have at least one axis")
            order = _C.asarray(self._numpy.permutation(x.shape[0]), device=x.device)
            rows = _C.take(x, order, axis=0)
            return rows if device is None else _C.asarray(rows, device=device)
        return _C.asarray(self._numpy.permutation(operator.index(x)), device=device)

    def __repr__(self) -> str:
        return f"ts.random.Generator(Philox, seed={self.seed})"


def _shape(shape: int | tuple[int, ...]) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    dims = tuple(operator.index(n) for n in shape)
    if any(n < 0 for n in dims):
        raise ValueError(f"negative dimensions are not allowed: {dims}")
    return dims


def _float_dtype(dtype: Any, function: str) -> tuple[str, type]:
    """The result dtype's name (float64 by default) and the numpy type its values are drawn in."""
    name = "float64" if dtype is None else _C.dtype(dtype).name
    if name not in _FLOAT_DRAW:
        raise TypeError(f"{function}: dtype must be a real floating dtype (float16, bfloat16, float32, float64), not {name}")
    return name, _FLOAT_DRAW[name]


__all__ = ["Generator"]
