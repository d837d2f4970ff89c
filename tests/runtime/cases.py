"""Sample inputs for the differential tests, derived from each op's spec.

Like OpInfo's sample inputs: shapes that hit the 0-d, empty, tail and
broadcasting paths, and layouts that hit the strided paths. Non-contiguous
views are cut from larger buffers whose gaps hold NaN (or a large sentinel for
integers), so a kernel that reads the wrong element produces a visible error.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from generator.model import OpSpec

SPECIAL_FLOATS = np.array([0.0, -0.0, 1.0, -1.0, np.pi, -np.pi, np.inf, -np.inf, np.nan, 0.5, 1e-3, 30.0])


def values(shape: tuple[int, ...], dtype: str, rng: np.random.Generator, bounds=(None, None)) -> np.ndarray:
    low, high = bounds
    if dtype == "bool":
        return rng.random(shape) < 0.5
    info = np.iinfo(dtype) if dtype != "float32" and dtype != "float64" else None
    if info is not None:
        lo = max(info.min, -20 if low is None else int(low))
        hi = min(info.max, 20 if high is None else int(high))
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    data = rng.standard_normal(shape) * 3
    if low is not None:
        data = low + np.abs(data)
    if high is not None:
        data = np.minimum(data, high)
    return data.astype(dtype)


def poison(dtype: str) -> object:
    """What fills the gaps of a non-contiguous view."""
    if dtype in ("float32", "float64"):
        return np.nan
    return True if dtype == "bool" else np.iinfo(dtype).max


@dataclass(frozen=True)
class Layout:
    name: str

    def make(self, base: np.ndarray) -> tuple[np.ndarray, object]:
        """(a numpy array holding `base`'s values in this layout, the index that cuts it)."""
        if self.name == "contiguous" or base.ndim == 0:
            return base.copy(), ()
        if self.name == "strided":  # every other element of a buffer twice as large; gaps poisoned
            big = np.full(tuple(2 * s for s in base.shape), poison(base.dtype.name), dtype=base.dtype)
            index = tuple(slice(None, None, 2) for _ in base.shape)
            big[index] = base
            return big, index
        if self.name == "reversed":  # negative strides
            index = tuple(slice(None, None, -1) for _ in base.shape)
            return np.ascontiguousarray(base[index]), index
        if self.name == "transposed":
            buffer = np.ascontiguousarray(base.T)
            return buffer, "T"
        raise ValueError(self.name)


LAYOUTS = [Layout("contiguous"), Layout("strided"), Layout("reversed"), Layout("transposed")]

POINTWISE_SHAPES = {
    1: [((),), ((0,),), ((1, 0, 3),), ((7,),), ((33,),), ((3, 5),), ((2, 3, 4, 2),)],
    2: [((), ()), ((0,), (0,)), ((7,), (7,)), ((3, 5), (3, 5)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)),
        ((5,), ()), ((), (2, 3)), ((1, 0, 3), (2, 1, 3)), ((2, 1, 4, 3), (5, 1, 3))],
    3: [((), (), ()), ((7,), (7,), (7,)), ((3, 1), (1, 4), (3, 4)), ((2, 3, 4), (4,), ()), ((0, 2), (2,), (1, 2))],
}  # fmt: skip


@dataclass(frozen=True)
class Sample:
    """Inputs for one call: numpy buffers plus the index that turns each into the operand."""

    name: str
    buffers: tuple[np.ndarray, ...]
    indices: tuple[object, ...]
    kwargs: dict

    def numpy_args(self) -> list[np.ndarray]:
        return [_cut(b, i) for b, i in zip(self.buffers, self.indices)]

    def tensor_args(self, ts) -> list[object]:
        return [_cut(ts.asarray(b), i) for b, i in zip(self.buffers, self.indices)]


def _cut(array, index):
    return array.T if isinstance(index, str) else array[index]


def operand_dtypes(spec: OpSpec, dtype: str) -> list[str]:
    """where's condition is bool; every other tensor input has the dtype under test."""
    names = [a.name for a in spec.signature.tensor_arguments]
    return ["bool" if spec.promotion.value == "where" and i == 0 else dtype for i in range(len(names))]


def _bounds(spec: OpSpec, arg: str, dtype: str) -> tuple[float | None, float | None]:
    for name, low, high in spec.domain:
        if name == arg:
            return (low, high)
    return (None, None)


def pointwise_samples(spec: OpSpec, dtype: str, rng: np.random.Generator) -> Iterator[Sample]:
    names = [a.name for a in spec.signature.tensor_arguments]
    dtypes = operand_dtypes(spec, dtype)
    for shapes in POINTWISE_SHAPES[len(names)]:
        for layout in LAYOUTS:
            made = [layout.make(values(s, d, rng, _bounds(spec, n, d))) for s, d, n in zip(shapes, dtypes, names)]
            yield Sample(f"{shapes}-{layout.name}", tuple(m[0] for m in made), tuple(m[1] for m in made), {})
    if dtype.startswith("float") and not spec.domain:
        special = SPECIAL_FLOATS.astype(dtype)
        grid = np.meshgrid(*([special] * len(names)), indexing="ij")
        buffers = tuple(g.ravel().copy() if d == dtype else (g.ravel() > 0) for g, d in zip(grid, dtypes))
        yield Sample("special values", buffers, tuple(() for _ in names), {})


REDUCTION_CASES = [
    ((), None), ((0,), None), ((0,), 0), ((5,), 0), ((5,), -1), ((3, 4), None), ((3, 4), 0), ((3, 4), 1),
    ((2, 3, 4), (0, 2)), ((2, 3, 4), (2, 0)), ((2, 3, 4), ()), ((2, 0, 3), 1), ((2, 0, 3), 0), ((4, 1, 3), (0, 1, 2)),
    ((1029, 9), 0), ((9, 1029), 1),
]  # fmt: skip


def reduction_samples(spec: OpSpec, dtype: str, rng: np.random.Generator, single_axis: bool) -> Iterator[Sample]:
    for shape, axis in REDUCTION_CASES:
        if single_axis and isinstance(axis, tuple):
            continue
        for keepdims in (False, True):
            for layout in (LAYOUTS[0], LAYOUTS[1], LAYOUTS[3]):
                buffer, index = layout.make(values(shape, dtype, rng))
                yield Sample(f"{shape} axis={axis} keepdims={keepdims} {layout.name}", (buffer,), (index,),
                             {"axis": axis, "keepdims": keepdims})  # fmt: skip


NORMALIZATION_CASES = [((), -1), ((5,), -1), ((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1), ((0, 3), -1), ((4, 1029), -1)]


def normalization_samples(spec: OpSpec, dtype: str, rng: np.random.Generator) -> Iterator[Sample]:
    for shape, axis in NORMALIZATION_CASES:
        for layout in (LAYOUTS[0], LAYOUTS[1], LAYOUTS[3]):
            buffer, index = layout.make(values(shape, dtype, rng))
            yield Sample(f"{shape} axis={axis} {layout.name}", (buffer,), (index,), {"axis": axis})


CONTRACTION_CASES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)), ((2, 1, 2, 3), (4, 3, 2)),
    ((2, 0), (0, 3)), ((0, 3), (3, 2)), ((1, 70), (70, 130)),
]  # fmt: skip


def contraction_samples(spec: OpSpec, dtype: str, rng: np.random.Generator) -> Iterator[Sample]:
    for shapes in CONTRACTION_CASES:
        for layout in (LAYOUTS[0], LAYOUTS[1], LAYOUTS[3]):
            made = [layout.make(values(s, dtype, rng, (-4, 4))) for s in shapes]
            yield Sample(f"{shapes} {layout.name}", tuple(m[0] for m in made), tuple(m[1] for m in made), {})
