"""ts.random.Generator: numpy's Philox4x32-10 stream keyed by the seed, drawn in host memory and sent to the
requested device; reproducible, splittable, checkpointable, with numpy's dtype rules and errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorsmith as ts


def philox(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.Philox(np.random.SeedSequence(seed)))


def test_a_seed_fixes_every_draw_and_the_stream_is_numpys_philox() -> None:
    g, again = ts.random.Generator(1234), ts.random.Generator(1234)
    for draw in (lambda r: r.uniform(-2.0, 3.0, (3, 4)), lambda r: r.normal(1.0, 2.0, 7), lambda r: r.integers(0, 10, 9),
                 lambda r: r.permutation(11), lambda r: r.uniform(shape=5, dtype=ts.float32)):  # fmt: skip
        a, b = draw(g), draw(again)
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    reference = philox(1234)
    np.testing.assert_array_equal(np.asarray(ts.random.Generator(1234).uniform(shape=(2, 3))), reference.random((2, 3)))
    np.testing.assert_array_equal(np.asarray(ts.random.Generator(1234).normal(shape=4, dtype="float32")),
                                  philox(1234).standard_normal(4, dtype=np.float32))  # fmt: skip
    assert not np.array_equal(np.asarray(ts.random.Generator(1).uniform(shape=8)), np.asarray(ts.random.Generator(2).uniform(shape=8)))
    assert ts.random.Generator(99).seed == 99 and isinstance(ts.random.Generator().seed, int)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_floating_draws_have_the_dtype_and_the_distribution(dtype: str) -> None:
    g = ts.random.Generator(7)
    u = g.uniform(2.0, 5.0, (200_000,), dtype=dtype)
    n = g.normal(-1.0, 3.0, (200_000,), dtype=dtype)
    assert u.dtype == ts.dtype(dtype) and n.dtype == ts.dtype(dtype) and u.shape == (200_000,)
    uv, nv = np.asarray(u).astype(np.float64), np.asarray(n).astype(np.float64)
    assert uv.min() >= 2.0 and uv.max() <= 5.0
    assert abs(uv.mean() - 3.5) < 0.02 and abs(uv.std() - 3 / 12**0.5) < 0.02
    assert abs(nv.mean() + 1.0) < 0.05 and abs(nv.std() - 3.0) < 0.05


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint64", "int64"])
def test_integers_stay_in_range_and_cover_it(dtype: str) -> None:
    g = ts.random.Generator(3)
    x = g.integers(1, 7, (5000,), dtype=dtype)
    assert x.dtype == ts.dtype(dtype)
    assert set(np.unique(np.asarray(x)).tolist()) == {1, 2, 3, 4, 5, 6}
    assert set(np.unique(np.asarray(g.integers(1, 6, 5000, dtype=dtype, endpoint=True))).tolist()) == {1, 2, 3, 4, 5, 6}
    assert np.asarray(g.integers(4, shape=100)).max() < 4  # one bound: [0, low)


def test_permutation_of_a_count_and_of_a_tensors_rows() -> None:
    g = ts.random.Generator(5)
    p = g.permutation(50)
    assert p.dtype == ts.int64 and sorted(np.asarray(p).tolist()) == list(range(50))
    rows = np.arange(24.0).reshape(8, 3)
    shuffled = np.asarray(g.permutation(ts.asarray(rows)))
    assert shuffled.shape == (8, 3) and not np.array_equal(shuffled, rows)
    np.testing.assert_array_equal(shuffled[np.argsort(shuffled[:, 0])], rows)  # the same rows, whole


def test_spawned_streams_are_independent_and_reproducible() -> None:
    parent = ts.random.Generator(11)
    first = [np.asarray(c.uniform(shape=6)) for c in parent.spawn(3)]
    parent.uniform(shape=100)  # the parent's own draws do not move its children
    again = [np.asarray(c.uniform(shape=6)) for c in ts.random.Generator(11).spawn(3)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1]) and not np.array_equal(first[0], np.asarray(ts.random.Generator(11).uniform(shape=6)))


def test_a_checkpoint_continues_the_stream() -> None:
    g = ts.random.Generator(21)
    g.normal(shape=10)
    state = g.get_state()
    want = np.asarray(g.uniform(shape=5))
    restored = ts.random.Generator(0)
    restored.set_state(state)
    np.testing.assert_array_equal(np.asarray(restored.uniform(shape=5)), want)
    child = restored.spawn(1)[0]  # the seed's spawn tree comes back too
    np.testing.assert_array_equal(np.asarray(child.uniform(shape=3)), np.asarray(ts.random.Generator(21).spawn(1)[0].uniform(shape=3)))


def test_bad_arguments_say_what_is_wrong() -> None:
    g = ts.random.Generator(0)
    with pytest.raises(TypeError, match=r"seed must be a non-negative int or None"):
        ts.random.Generator(-1)
    with pytest.raises(TypeError, match=r"uniform: dtype must be a real floating dtype .*, not int32"):
        g.uniform(dtype=ts.int32)
    with pytest.raises(TypeError, match=r"integers: dtype must be an integer dtype, not float32"):
        g.integers(0, 3, dtype=ts.float32)
    with pytest.raises(ValueError, match=r"normal: scale must be non-negative"):
        g.normal(0.0, -1.0)
    with pytest.raises(ValueError, match=r"negative dimensions are not allowed"):
        g.uniform(shape=(2, -1))
    with pytest.raises(ValueError, match=r"high is out of bounds for int8|low >= high|out of bounds"):
        g.integers(0, 1000, 3, dtype="int8")


@pytest.mark.skipif(not ts.cuda.is_available(), reason="needs a CUDA device (this machine has none)")
def test_a_cuda_draw_holds_the_cpu_draws_values() -> None:
    on_gpu = ts.random.Generator(8).normal(shape=(64, 3), dtype=ts.float32, device="cuda")
    on_cpu = ts.random.Generator(8).normal(shape=(64, 3), dtype=ts.float32)
    assert on_gpu.device != on_cpu.device
    np.testing.assert_array_equal(np.asarray(on_gpu.to_device("cpu")), np.asarray(on_cpu))
