"""What the benchmark runs: one Case per (family, op, size), each with a callable per library.

Inputs are made once per case (float32 unless the case says otherwise) and shared: tensorsmith and torch
view the numpy arrays' memory where they can, so every library reads the same bytes.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import tensorsmith as ts

SIZES = ("small", "medium", "large")


@dataclass(frozen=True)
class Sizes:
    elements: dict[str, int]  # pointwise: elements per operand
    matrices: dict[str, tuple[int, int]]  # reductions and index reductions
    rows: dict[str, tuple[int, int]]  # normalizations: (rows, cols)
    square: dict[str, int]  # matmul: n for n x n @ n x n


FULL = Sizes(
    elements={"small": 4, "medium": 1 << 16, "large": 1 << 24},
    matrices={"small": (2, 2), "medium": (256, 256), "large": (4096, 4096)},
    rows={"small": (2, 2), "medium": (256, 256), "large": (4096, 1024)},
    square={"small": 64, "medium": 256, "large": 1024},
)
# --quick: the same cases, the largest ones a quarter of the size (matmul keeps 1024^2: it has a goal).
QUICK = Sizes(
    elements={"small": 4, "medium": 1 << 16, "large": 1 << 22},
    matrices={"small": (2, 2), "medium": (256, 256), "large": (2048, 2048)},
    rows={"small": (2, 2), "medium": (256, 256), "large": (1024, 1024)},
    square={"small": 64, "medium": 256, "large": 1024},
)


@dataclass
class Case:
    family: str
    op: str
    size: str
    shape: str
    bytes_moved: int | None  # what one call must read and write at least; None where compute bound
    flops: int | None  # matmul: 2 m n k
    impls: dict[str, Callable[[], Any]] = field(default_factory=dict)
    unsupported: dict[str, str] = field(default_factory=dict)  # library -> why it is not timed

    @property
    def name(self) -> str:
        return f"{self.family}/{self.op}/{self.size}"


# The case names each builder makes (family/op), so that a filtered run builds only what it times.
NAMES = {
    "pointwise": ("pointwise/exp", "pointwise/add", "pointwise/multiply", "pointwise/add(out=)", "pointwise/atan2",
                  "pointwise/sin", "pointwise/floor_divide", "pointwise/bitwise_and int32", "pointwise/multiply complex64",
                  "pointwise/pow", "pointwise/tanh float64", "pointwise/log1p float64", "pointwise/pow float64",
                  "pointwise/atan2 float64", "pointwise/x[1:3] * 2.0"),
    "reductions": ("reduction/sum", "reduction/sum(axis=0)", "reduction/sum(axis=1)", "reduction/sum(axis=1) of x.T",
                   "reduction/mean", "reduction/max",
                   "reduction/max(axis=1)", "index_reduction/argmax", "index_reduction/argmax(axis=1)",
                   "scan/cumulative_sum(axis=0)", "scan/cumulative_sum(axis=1)", "sort/sort(axis=1)", "sort/argsort(axis=1)",
                   "sort/sort(axis=1) unstable"),
    "selections": ("selection/take(axis=0)", "selection/concat(axis=0)", "selection/unique_values", "selection/x[mask]"),
    "normalizations": ("normalization/softmax", "normalization/log_softmax"),
    "matmuls": ("contraction/matmul float32", "contraction/matmul float64", "contraction/matmul int32",
                "contraction/batched matmul float32"),
    "threads": ("threads/ops loop, 1 thread", "threads/ops loop, 2 threads"),
}  # fmt: skip


def build(sizes: Sizes, torch: Any | None, wanted: Callable[[str], bool] = lambda name: True) -> list[Case]:
    """The cases whose name `wanted` accepts, inputs made; call probe() on each before timing it."""
    rng = np.random.default_rng(0)
    builders = {"pointwise": (_pointwise, sizes.elements), "reductions": (_reductions, sizes.matrices),
                "selections": (_selections, sizes.matrices), "normalizations": (_normalizations, sizes.rows), "matmuls": (_matmuls, sizes.square),
                "threads": (_threads, sizes.elements)}  # fmt: skip
    cases: list[Case] = []
    for key, (builder, size_of) in builders.items():
        for size in THREAD_SIZES if key == "threads" else SIZES:
            if any(wanted(f"{name}/{size}") for name in NAMES[key]):
                n = ONE_CORE_ELEMENTS if size == "one-core" else size_of[size]
                cases += [c for c in builder(size, n, rng, torch) if wanted(c.name)]
    return cases


def probe(case: Case) -> None:
    """Calls every library once (the warm-up); one that raises for lack of the feature is moved from `impls`
    to `unsupported` with its error."""
    for library, fn in list(case.impls.items()):
        try:
            fn()
        except (TypeError, RuntimeError, NotImplementedError) as exc:
            message = str(exc).splitlines()[0].split(". ")[0]  # pybind11 lists every overload after the first sentence
            case.unsupported[library] = f"{type(exc).__name__}: {message[:120]}"
            del case.impls[library]


def _operands(rng: np.random.Generator, shape: tuple[int, ...], count: int, torch: Any | None, dtype=np.float32):
    kind = np.dtype(dtype).kind
    arrays = [rng.standard_normal(shape).astype(dtype) if kind == "f"
              else (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype) if kind == "c"
              else rng.integers(-8, 8, shape).astype(dtype) for _ in range(count)]  # fmt: skip
    tensors = [ts.asarray(a) for a in arrays]
    torch_tensors = [torch.from_numpy(a) for a in arrays] if torch is not None else None
    return arrays, tensors, torch_tensors


def _case(family, op, size, shape, bytes_moved, flops, ts_fn, np_fn, torch_fn, torch) -> Case:
    case = Case(family, op, size, str(shape), bytes_moved, flops)
    case.impls = {"tensorsmith": ts_fn, "numpy": np_fn}
    if torch is not None:
        case.impls["torch"] = torch_fn
    return case


def _pointwise(size: str, n: int, rng, torch) -> list[Case]:
    (a, b, out), (ta, tb, tout), tt = _operands(rng, (n,), 3, torch)
    t = tt or [None] * 3
    (ia, ib), (tia, tib), itt = _operands(rng, (n,), 2, torch, dtype=np.int32)
    it = itt or [None] * 2
    (ca, cb), (tca, tcb), ctt = _operands(rng, (n,), 2, torch, dtype=np.complex64)
    ct = ctt or [None] * 2
    (da,), (tda,), dtt = _operands(rng, (n,), 1, torch, dtype=np.float64)
    dt = dtt or [None]
    dp = np.abs(da)  # log1p's domain: no NaN (numpy warns on those)
    tdp, dpt = ts.asarray(dp), torch.from_numpy(dp) if torch is not None else None
    pa = np.abs(a) + np.float32(0.5)
    dpa = np.abs(da) + 0.5
    tdpa, dpat = ts.asarray(dpa), torch.from_numpy(dpa) if torch is not None else None
    tpa, pt = ts.asarray(pa), torch.from_numpy(pa) if torch is not None else None
    ie = np.abs(ib)  # integer pow's exponents: random in [0, 8] (numpy raises on negative ones)
    tie, iet = ts.asarray(ie), torch.from_numpy(ie) if torch is not None else None
    item = a.itemsize
    return [
        _case("pointwise", "exp", size, (n,), 2 * n * item, None,
              lambda: ts.exp(ta), lambda: np.exp(a), lambda: torch.exp(t[0]), torch),
        _case("pointwise", "add", size, (n,), 3 * n * item, None,
              lambda: ts.add(ta, tb), lambda: np.add(a, b), lambda: torch.add(t[0], t[1]), torch),
        _case("pointwise", "multiply", size, (n,), 3 * n * item, None,
              lambda: ts.multiply(ta, tb), lambda: np.multiply(a, b), lambda: torch.mul(t[0], t[1]), torch),
        # Into an existing output (out=): no allocation, no page faults; the first row.
        _case("pointwise", "add(out=)", size, (n,), 3 * n * item, None,
              lambda: ts.add(ta, tb, out=tout), lambda: np.add(a, b, out=out),
              lambda: torch.add(t[0], t[1], out=t[2]), torch),
        # float32 evaluated in double and rounded once (scalar_ops.h), where numpy calls float32 libm/SIMD loops
        _case("pointwise", "atan2", size, (n,), 3 * n * item, None,
              lambda: ts.atan2(ta, tb), lambda: np.arctan2(a, b), lambda: torch.atan2(t[0], t[1]), torch),
        # float32 sin: the Cody-Waite reduction over blocks below 2**20 (standard normal inputs), the exact one beyond
        _case("pointwise", "sin", size, (n,), 2 * n * item, None,
              lambda: ts.sin(ta), lambda: np.sin(a), lambda: torch.sin(t[0]), torch),
        _case("pointwise", "floor_divide", size, (n,), 3 * n * item, None,
              lambda: ts.floor_divide(ta, tb), lambda: np.floor_divide(a, b), lambda: torch.floor_divide(t[0], t[1]), torch),
        _case("pointwise", "bitwise_and int32", size, (n,), 3 * n * ia.itemsize, None,
              lambda: ts.bitwise_and(tia, tib), lambda: np.bitwise_and(ia, ib),
              lambda: torch.bitwise_and(it[0], it[1]), torch),
        _case("pointwise", "multiply complex64", size, (n,), 3 * n * ca.itemsize, None,
              lambda: ts.multiply(tca, tcb), lambda: np.multiply(ca, cb), lambda: torch.mul(ct[0], ct[1]), torch),
        # positive bases (no NaN from a negative base to a fractional power): the libraries' float paths
        _case("pointwise", "pow", size, (n,), 3 * n * item, None, lambda: ts.pow(tpa, tb), lambda: np.power(pa, b),
              lambda: torch.pow(pt, t[1]), torch),
        _case("pointwise", "pow int32", size, (n,), 3 * n * ia.itemsize, None, lambda: ts.pow(tia, tie),
              lambda: np.power(ia, ie), lambda: torch.pow(it[0], iet), torch),
        # float64 functions numpy takes from SVML where the CPU has AVX-512 (scalar_ops.h's double-double forms here)
        _case("pointwise", "tanh float64", size, (n,), 2 * n * da.itemsize, None,
              lambda: ts.tanh(tda), lambda: np.tanh(da), lambda: torch.tanh(dt[0]), torch),
        _case("pointwise", "log1p float64", size, (n,), 2 * n * da.itemsize, None,
              lambda: ts.log1p(tdp), lambda: np.log1p(dp), lambda: torch.log1p(dpt), torch),
        _case("pointwise", "pow float64", size, (n,), 3 * n * da.itemsize, None,
              lambda: ts.pow(tdpa, tda), lambda: np.power(dpa, da), lambda: torch.pow(dpat, dt[0]), torch),
        _case("pointwise", "atan2 float64", size, (n,), 3 * n * da.itemsize, None,
              lambda: ts.atan2(tda, tdpa), lambda: np.arctan2(da, dpa), lambda: torch.atan2(dt[0], dpat), torch),
        # the small-op path with a view and a Python scalar (the issue's `t[1:3] * 2.0`; a copy of 2 elements at n=4)
        _case("pointwise", "x[1:3] * 2.0", size, (n,), 4 * item, None, lambda: ta[1:3] * 2.0, lambda: a[1:3] * 2.0,
              lambda: t[0][1:3] * 2.0, torch),
    ]  # fmt: skip


# A Python program that runs ops from two threads (a data loader beside a training step, a server): the same
# work, LOOP_STEPS steps of exp, add and sum per thread-share, on one thread and split over two. A library that
# holds the GIL through its kernels runs the two threads' ops one at a time. Two sizes: medium ops (64K elements,
# which tensorsmith's engines already split over every core: a second thread has no idle core to use) and ops of
# 16K elements, below the engines' parallel grain (limits.kPointwiseGrain, kReduceGrain: 32K) and above the size
# from which the bindings release the GIL (4096), each running on one core, so that a second thread can gain.
# Each timed call hands the two loops to a thread pool and waits for both: 512 steps (8 ms of 16K-element ops)
# make the loops, not the pool's hand-offs (tens of microseconds each on a VM), what is measured (at 64 steps
# they hid any gain).
THREAD_SIZES = ("medium", "one-core")
ONE_CORE_ELEMENTS = 1 << 14
LOOP_STEPS = 512


def _threads(size: str, n: int, rng, torch) -> list[Case]:
    (a, b), (ta, tb), tt = _operands(rng, (n,), 2, torch)
    t = tt or [None] * 2
    steps = {"tensorsmith": lambda: float(ts.sum(ts.add(ts.exp(ta), tb))),
             "numpy": lambda: float(np.sum(np.add(np.exp(a), b))),
             "torch": lambda: float(torch.sum(torch.add(torch.exp(t[0]), t[1])))}
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)  # started once; lives as long as the process

    def loop(step: Callable[[], float], count: int) -> None:
        for _ in range(count):
            step()

    def on_two_threads(step: Callable[[], float]) -> Callable[[], None]:
        return lambda: [f.result() for f in [pool.submit(loop, step, LOOP_STEPS) for _ in range(2)]]

    def on_one_thread(step: Callable[[], float]) -> Callable[[], None]:
        return lambda: loop(step, 2 * LOOP_STEPS)

    moved = 2 * LOOP_STEPS * 5 * n * a.itemsize  # per step: exp reads and writes, add reads two and writes
    return [
        _case("threads", f"ops loop, {count} thread{'s' * (count > 1)}", size, (n,), moved, None,
              *(wrap(steps[lib]) for lib in ("tensorsmith", "numpy", "torch")), torch)
        for count, wrap in ((1, on_one_thread), (2, on_two_threads))
    ]  # fmt: skip


def _reductions(size: str, shape: tuple[int, int], rng, torch) -> list[Case]:
    (a,), (ta,), tt = _operands(rng, shape, 1, torch)
    t = tt[0] if tt else None
    nbytes = a.nbytes
    rows, cols = shape
    return [
        _case("reduction", "sum", size, shape, nbytes, None,
              lambda: ts.sum(ta), lambda: np.sum(a), lambda: torch.sum(t), torch),
        _case("reduction", "sum(axis=0)", size, shape, nbytes + cols * a.itemsize, None,
              lambda: ts.sum(ta, axis=0), lambda: np.sum(a, axis=0), lambda: torch.sum(t, dim=0), torch),
        _case("reduction", "sum(axis=1)", size, shape, nbytes + rows * a.itemsize, None,
              lambda: ts.sum(ta, axis=1), lambda: np.sum(a, axis=1), lambda: torch.sum(t, dim=1), torch),
        _case("reduction", "sum(axis=1) of x.T", size, shape, nbytes + cols * a.itemsize, None,
              lambda: ts.sum(ta.mT, axis=1), lambda: np.sum(a.T, axis=1), lambda: torch.sum(t.T, dim=1), torch),
        _case("reduction", "mean", size, shape, nbytes, None,
              lambda: ts.mean(ta), lambda: np.mean(a), lambda: torch.mean(t), torch),
        _case("reduction", "max", size, shape, nbytes, None,
              lambda: ts.max(ta), lambda: np.max(a), lambda: torch.max(t), torch),
        _case("reduction", "max(axis=1)", size, shape, nbytes + rows * a.itemsize, None,
              lambda: ts.max(ta, axis=1), lambda: np.max(a, axis=1), lambda: torch.amax(t, dim=1), torch),
        _case("index_reduction", "argmax", size, shape, nbytes, None,
              lambda: ts.argmax(ta), lambda: np.argmax(a), lambda: torch.argmax(t), torch),
        _case("index_reduction", "argmax(axis=1)", size, shape, nbytes + rows * 8, None,
              lambda: ts.argmax(ta, axis=1), lambda: np.argmax(a, axis=1), lambda: torch.argmax(t, dim=1), torch),
        _case("scan", "cumulative_sum(axis=0)", size, shape, 2 * nbytes, None, lambda: ts.cumulative_sum(ta, axis=0),
              lambda: np.cumulative_sum(a, axis=0), lambda: torch.cumsum(t, dim=0), torch),
        _case("scan", "cumulative_sum(axis=1)", size, shape, 2 * nbytes, None, lambda: ts.cumulative_sum(ta, axis=1),
              lambda: np.cumulative_sum(a, axis=1), lambda: torch.cumsum(t, dim=1), torch),
        # stable sorts on every side: numpy's default quicksort and torch's default are not
        _case("sort", "sort(axis=1)", size, shape, 2 * nbytes, None, lambda: ts.sort(ta, axis=1),
              lambda: np.sort(a, axis=1, kind="stable"), lambda: torch.sort(t, dim=1, stable=True), torch),
        _case("sort", "argsort(axis=1)", size, shape, nbytes + rows * cols * 8, None, lambda: ts.argsort(ta, axis=1),
              lambda: np.argsort(a, axis=1, kind="stable"), lambda: torch.argsort(t, dim=1, stable=True), torch),
        # what `np.sort(x)` users get by default: numpy's unstable sort (SIMD quicksort for 16/32/64-bit types)
        _case("sort", "sort(axis=1) unstable", size, shape, 2 * nbytes, None, lambda: ts.sort(ta, axis=1, stable=False),
              lambda: np.sort(a, axis=1), lambda: torch.sort(t, dim=1), torch),
    ]  # fmt: skip


def _selections(size: str, shape: tuple[int, int], rng, torch) -> list[Case]:
    """Gathers and data-dependent shapes: rows picked by index, two matrices joined, the distinct values of
    small integers (many repeats), and the elements a half-true mask selects."""
    (a, b), (ta, tb), tt = _operands(rng, shape, 2, torch)
    t = tt or [None, None]
    rows, cols = shape
    index = rng.integers(0, rows, rows)
    tindex, torch_index = ts.asarray(index), torch.from_numpy(index) if torch is not None else None
    (ia,), (tia,), itt = _operands(rng, shape, 1, torch, dtype=np.int32)
    mask = a > 0
    tmask, torch_mask = ts.asarray(mask), torch.from_numpy(mask) if torch is not None else None
    return [
        _case("selection", "take(axis=0)", size, shape, 2 * a.nbytes + index.nbytes, None,
              lambda: ts.take(ta, tindex, axis=0), lambda: np.take(a, index, axis=0),
              lambda: torch.index_select(t[0], 0, torch_index), torch),
        _case("selection", "concat(axis=0)", size, shape, 4 * a.nbytes, None, lambda: ts.concat([ta, tb], axis=0),
              lambda: np.concatenate([a, b], axis=0), lambda: torch.cat([t[0], t[1]], dim=0), torch),
        _case("selection", "unique_values", size, shape, ia.nbytes, None, lambda: ts.unique_values(tia),
              lambda: np.unique_values(ia), lambda: torch.unique(itt[0]) if itt else None, torch),
        _case("selection", "x[mask]", size, shape, a.nbytes + mask.nbytes, None, lambda: ta[tmask], lambda: a[mask],
              lambda: t[0][torch_mask], torch),
    ]  # fmt: skip


def _np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    e /= e.sum(axis=-1, keepdims=True)
    return e


def _np_log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _normalizations(size: str, shape: tuple[int, int], rng, torch) -> list[Case]:
    (a,), (ta,), tt = _operands(rng, shape, 1, torch)
    t = tt[0] if tt else None
    moved = 2 * a.nbytes
    return [
        _case("normalization", "softmax", size, shape, moved, None, lambda: ts.softmax(ta, axis=-1),
              lambda: _np_softmax(a), lambda: torch.softmax(t, dim=-1), torch),
        _case("normalization", "log_softmax", size, shape, moved, None, lambda: ts.log_softmax(ta, axis=-1),
              lambda: _np_log_softmax(a), lambda: torch.log_softmax(t, dim=-1), torch),
    ]  # fmt: skip


def _matmuls(size: str, n: int, rng, torch) -> list[Case]:
    cases = []
    dtypes = [np.float32] + ([np.float64, np.int32] if size != "small" else [])
    for dtype in dtypes:
        if dtype is np.int32 and size == "large":
            continue  # the blocked integer kernel at 1024^3 only slows the run down
        (a, b), (ta, tb), tt = _operands(rng, (n, n), 2, torch, dtype)
        t = tt or [None, None]
        name = f"matmul {np.dtype(dtype).name}"
        cases.append(_case("contraction", name, size, (n, n), None, 2 * n**3, lambda ta=ta, tb=tb: ts.matmul(ta, tb),
                           lambda a=a, b=b: np.matmul(a, b), lambda t=t: torch.matmul(t[0], t[1]), torch))  # fmt: skip
    if size == "medium":  # 64 products of 128x128 matrices, one call (the batched case)
        (a, b), (ta, tb), tt = _operands(rng, (64, 128, 128), 2, torch)
        t = tt or [None, None]
        cases.append(_case("contraction", "batched matmul float32", size, (64, 128, 128), None, 2 * 64 * 128**3,
                           lambda: ts.matmul(ta, tb), lambda: np.matmul(a, b), lambda: torch.matmul(t[0], t[1]), torch))
    return cases
