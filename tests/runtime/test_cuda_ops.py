"""Every catalog op x declared dtype on CUDA: against its numpy reference (the gate's inputs and comparison,
as tests/runtime/test_ops_differential.py does on the CPU) and against the CPU kernel on the same inputs, so
the two devices cannot drift apart. Plus the paths of the CUDA machinery that small cases never reach: packed
and strided pointwise, split reductions, warp- and block-per-row softmax. Skipped, with the reason, where no
GPU is present; scripts/device_check.sh runs them on one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorsmith as ts
from tensorsmith_forge.catalog.model import OpSpec, load_catalog
from tensorsmith_forge.validators import compare, inputs

from tests.helpers import op_function

pytestmark = pytest.mark.skipif(not ts.cuda.is_available(), reason="no CUDA device: ts.cuda.is_available() is False "
                                "(scripts/device_check.sh runs these on a GPU)")  # fmt: skip

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(ROOT)
SALT = b"tensorsmith-cuda-tests"


def run(op, tensors, kwargs):
    try:
        result = op(*tensors, **kwargs)
    except Exception as exc:  # noqa: BLE001 - compare decides whether raising was right
        return compare.Raised.from_exception(exc)
    assert str(result.device) == str(tensors[0].device), f"the result left {tensors[0].device}: {result.device}"
    return np.array(result.cpu(), copy=True)


@pytest.mark.parametrize(("spec", "dtype"), [pytest.param(s, d, id=f"{s.name}-{d}") for s in CATALOG.ops for d in s.dtypes])
def test_op_on_cuda_matches_numpy_and_the_cpu(spec: OpSpec, dtype: str) -> None:
    fn = spec.reference_callable()
    op = op_function(spec.name)
    problems = []
    for case in inputs.generate_cases(spec, dtype, salt=SALT, hidden=True):
        on_cpu = [ts.asarray(o.view(o.buffer.copy())) for o in case.operands]
        on_cuda = [t.to("cuda") for t in on_cpu]
        got = run(op, on_cuda, case.kwargs)
        expected = compare.expected_result(spec, case, "a", fn)
        problems.append(compare.compare(spec, case, got, which="a", expected=expected, device="cuda"))
        cpu = run(op, on_cpu, case.kwargs)
        if not isinstance(got, compare.Raised) and not isinstance(cpu, compare.Raised):
            # CUDA's own expf, sinf, ... differ from the CPU's forms in the last bits: parity as the gate judges it
            problems.append(compare.device_parity(spec, case, cpu, got, which="a", on="cuda", expected=expected))
        elif isinstance(got, compare.Raised) != isinstance(cpu, compare.Raised):
            problems.append(f"{case.id}: one device raised and the other did not (cpu {cpu!r}, cuda {got!r})")
    problems = [p for p in problems if p is not None]
    assert not problems, "\n".join(map(str, problems[:5]))


def test_pointwise_packed_tail_and_strided_paths() -> None:
    rng = np.random.default_rng(1)
    for n in (1, 3, 4, 1023, 1 << 20):  # below, at and past one 16-byte pack, with tails
        a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        np.testing.assert_array_equal(ts.add(ts.asarray(a, device="cuda"), ts.asarray(b, device="cuda")).cpu(), a + b)
    m = rng.standard_normal((300, 500)).astype(np.float64)
    d = ts.asarray(m, device="cuda")
    np.testing.assert_array_equal(ts.multiply(d.T, d.T).cpu(), m.T * m.T)  # transposed views: the strided path
    np.testing.assert_array_equal(ts.add(d[:, ::3], 2.5).cpu(), m[:, ::3] + 2.5)  # a broadcast scalar


def test_long_reductions_split_over_blocks_and_outer_axes() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal(3_000_001)
    np.testing.assert_allclose(ts.sum(ts.asarray(x, device="cuda")).cpu(), x.sum(), rtol=1e-12)
    m = rng.integers(-5, 5, (4, 300_000)).astype(np.int64)
    np.testing.assert_array_equal(ts.sum(ts.asarray(m, device="cuda"), axis=1).cpu(), m.sum(axis=1))
    np.testing.assert_array_equal(ts.max(ts.asarray(m, device="cuda"), axis=0).cpu(), m.max(axis=0))
    ties = np.zeros((3, 5000), dtype=np.float32)
    ties[:, [7, 4000]] = 1.0
    ties[2, 100] = np.nan
    np.testing.assert_array_equal(ts.argmax(ts.asarray(ties, device="cuda"), axis=1).cpu(), [7, 7, 100])


def test_softmax_rows_short_and_long_with_infinities() -> None:
    rng = np.random.default_rng(3)
    for cols in (5, 1024, 1025, 50_000):  # warp per row, then block per row
        x = rng.standard_normal((7, cols)).astype(np.float32)
        x[0, :] = -np.inf
        x[1, 0] = -np.inf
        e = np.exp(x[1:] - x[1:].max(axis=1, keepdims=True))
        got = ts.softmax(ts.asarray(x, device="cuda"), axis=-1).cpu()
        np.testing.assert_allclose(np.asarray(got)[1:], e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
        assert np.isnan(np.asarray(got)[0]).all()


def test_matmul_cublas_and_generated_tiles_with_batches() -> None:
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((3, 65, 33)), rng.standard_normal((33, 17))
    np.testing.assert_allclose(ts.matmul(ts.asarray(a, device="cuda"), ts.asarray(b, device="cuda")).cpu(), a @ b, rtol=1e-12)
    ia, ib = rng.integers(-9, 9, (2, 70, 40)).astype(np.int32), rng.integers(-9, 9, (2, 40, 19)).astype(np.int32)
    np.testing.assert_array_equal(ts.matmul(ts.asarray(ia, device="cuda"), ts.asarray(ib, device="cuda")).cpu(), ia @ ib)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "int32"])
def test_matmul_of_transposed_and_sliced_views(dtype: str) -> None:
    """Views the engine hands over without a copy: cuBLAS gets op T and leading dimensions, the integer tiles
    read through the strides (the CPU's test_matmul_paths has every pairing)."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((2, 3, 24, 20)) * 4).astype(dtype)
    d = ts.asarray(x, device="cuda")
    tol = {"float16": 2e-2, "float32": 1e-4}.get(dtype, 1e-10)
    for got, want in ((ts.matmul(d.mT, d), np.swapaxes(x, -1, -2) @ x),  # A column-major
                      (ts.matmul(d, d.mT), x @ np.swapaxes(x, -1, -2)),  # B column-major
                      (ts.matmul(d[..., 2:, 1:], d.mT[..., 1:, 3:]), x[..., 2:, 1:] @ np.swapaxes(x, -1, -2)[..., 1:, 3:]),
                      (ts.matmul(ts.permute_dims(d, (1, 0, 3, 2)), d[0, 0]),  # a batch no single stride walks: copied
                       np.transpose(x, (1, 0, 3, 2)) @ x[0, 0])):  # fmt: skip
        np.testing.assert_allclose(np.asarray(got.cpu()), want, rtol=tol, atol=tol * 10)


def test_python_scalars_follow_the_tensors_device() -> None:
    """x + 1, x > 0, where(c, x, 0.0): a Python scalar is a 0-d tensor on the other operands' device."""
    x = np.array([-1.5, 0.0, 2.0], dtype=np.float32)
    d = ts.asarray(x, device="cuda")
    for got, want in ((d + 1, x + 1), (2 * d, 2 * x), (d > 0, x > 0), (ts.where(d > 0, d, 0.0), np.where(x > 0, x, 0.0)),
                      (ts.where(True, d, 1), np.where(True, x, 1)), (d ** 2, x**2)):
        assert str(got.device).startswith("cuda")
        np.testing.assert_array_equal(np.asarray(got.cpu()), want)


def test_inputs_on_two_devices_raise_naming_both() -> None:
    with pytest.raises(ValueError, match="cpu.*cuda|cuda.*cpu"):
        ts.add(ts.asarray([1.0]), ts.asarray([1.0], device="cuda"))
