"""The engines' threading and summation: results are the same bytes for any thread count (floats too: splits
depend on the shape only) and whether idle workers poll or sleep, idle workers poll for TS_SPIN_MS and then
sleep (the calling thread's wait for its workers is checked in runtime/tests_cpp/selftest.cpp), float32 sums are at least as accurate as numpy's pairwise sum, and a bad TS_NUM_THREADS, TS_SPIN_MS or
TS_STREAM_MIN_BYTES is a clear error. Python threads:
large ops run without the GIL (another thread runs meanwhile), and ops from two threads at once give the bytes
a lone call gives."""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import tensorsmith as ts

# Prints a digest of every result; sizes pass the engines' grains so that ranges really run in parallel.
DIGEST_SCRIPT = textwrap.dedent(
    """
    import hashlib
    import numpy as np
    import tensorsmith as ts

    rng = np.random.default_rng(7)
    i32 = ts.asarray(rng.integers(-2**31, 2**31, size=(700, 900), dtype=np.int32))
    u8 = ts.asarray(rng.integers(0, 256, size=300_000, dtype=np.uint8))
    f32 = ts.asarray(rng.standard_normal((600, 1100), dtype=np.float32))
    f64 = ts.asarray(rng.standard_normal(400_000))
    f16 = ts.asarray(rng.standard_normal(300_001).astype(np.float16))
    results = [
        ts.add(i32, i32), ts.multiply(i32, 3), ts.add(i32, i32[:1]), ts.add(i32.T, i32.T), ts.add(u8, u8),
        ts.sum(i32), ts.sum(i32, axis=0), ts.sum(i32, axis=1), ts.prod(i32, axis=0), ts.max(i32), ts.min(i32, axis=0),
        ts.argmax(i32, axis=0), ts.argmin(i32, axis=1), ts.sum(u8),
        ts.exp(f32), ts.sum(f32), ts.sum(f32, axis=0), ts.mean(f32, axis=1), ts.sum(f64), ts.max(f64), ts.mean(f64),
        ts.softmax(f32, axis=-1), ts.log_softmax(f32, axis=0), ts.sum(f32.T, axis=1),
        ts.greater(f32, 0.0), ts.add(f16, f16), ts.where(ts.greater(f32, 0.0), f32, 0.0), ts.argmax(f64),
        ts.cumulative_sum(f32, axis=0), ts.cumulative_sum(f32, axis=1), ts.cumulative_prod(i32, axis=0),
        ts.cumulative_sum(f64, include_initial=True), ts.cumulative_sum(f32.T, axis=0),
    ]
    for r in results:
        print(hashlib.sha256(np.ascontiguousarray(np.asarray(r)).tobytes()).hexdigest()[:16])
    """
)
DIGESTS = 33  # results the script prints: every one must come out (a crash mid-way shows as fewer)


def _run(script: str, threads: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TS_NUM_THREADS": threads, **extra_env}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)


def test_results_do_not_depend_on_the_thread_count() -> None:
    # Three threads twice: workers polling between ops (the default) and sleeping at once (TS_SPIN_MS=0).
    runs = {"1": _run(DIGEST_SCRIPT, "1"), "3": _run(DIGEST_SCRIPT, "3"), "3, sleeping": _run(DIGEST_SCRIPT, "3", TS_SPIN_MS="0")}
    for n, run in runs.items():
        assert run.returncode == 0, f"TS_NUM_THREADS={n}:\n{run.stderr[-3000:]}"
    one = runs["1"].stdout.split()
    assert len(one) == DIGESTS
    for n in ("3", "3, sleeping"):
        assert [i for i, (a, b) in enumerate(zip(one, runs[n].stdout.split())) if a != b] == [], n


# The states (R: running or runnable, S: asleep) of the pool's workers, from /proc: a polling worker yields
# but stays runnable, however little CPU a loaded machine gives it; a sleeping one waits on a condition variable.
WORKER_STATES_SCRIPT = textwrap.dedent(
    """
    import os, time
    import numpy as np
    import tensorsmith as ts

    def worker_states():
        states = []
        for tid in os.listdir("/proc/self/task"):
            if int(tid) != os.getpid():  # every other thread is the pool's (one OpenBLAS thread: none of its own)
                with open(f"/proc/self/task/{tid}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
        return "".join(sorted(states))

    x = ts.asarray(np.ones(4_000_000, dtype=np.float32))
    ts.add(x, x)  # makes the pool; its workers then wait for the next op
    ts.add(x, x)
    start = time.monotonic()
    time.sleep(0.05)
    within = worker_states()
    time.sleep(max(0.0, start + 0.35 - time.monotonic()))
    print(within, worker_states())
    """
)


def test_idle_workers_poll_for_the_spin_window_then_sleep() -> None:
    states = {}
    for spin in ("0", "200"):
        run = _run(WORKER_STATES_SCRIPT, "3", TS_SPIN_MS=spin, OPENBLAS_NUM_THREADS="1")
        assert run.returncode == 0, run.stderr[-3000:]
        states[spin] = run.stdout.split()
    # 50 ms and 350 ms after the op: with TS_SPIN_MS=0 both workers sleep at once; with 200 they poll through
    # the window, then sleep.
    assert states == {"0": ["SS", "SS"], "200": ["RR", "SS"]}


OPENBLAS_STATES_SCRIPT = textwrap.dedent(
    """
    import os, time
    import numpy as np
    import tensorsmith as ts

    a = ts.asarray(np.ones((200, 200), dtype=np.float32))
    for _ in range(20):
        ts.matmul(a, a)  # threaded GEMMs, as gangs on the engines' pool
    time.sleep(0.03)
    states = []
    for tid in os.listdir("/proc/self/task"):
        if int(tid) != os.getpid():
            with open(f"/proc/self/task/{tid}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
    print("".join(sorted(states)), os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
    """
)


def test_openblas_own_threads_sleep_while_its_gemms_run_on_the_pool() -> None:
    # OpenBLAS starts threads of its own at load; woken, each polled for about 0.1 s (never running a job of
    # ours), taking a core from a gang's job: most 128x128 products on 2 cores stalled for a 4 ms scheduler
    # slice. tensorsmith loads it with OPENBLAS_THREAD_TIMEOUT=4 (sleep at once) unless the environment gives
    # one, and leaves the environment as it was. TS_SPIN_MS=0: the pool's worker sleeps at once too, so every
    # thread but the main one is asleep 30 ms after the products.
    quiet = _run(OPENBLAS_STATES_SCRIPT, "2", TS_SPIN_MS="0", OPENBLAS_NUM_THREADS="2")
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    states, timeout = quiet.stdout.split()
    assert set(states) == {"S"} and timeout == "None", quiet.stdout
    polling = _run(OPENBLAS_STATES_SCRIPT, "2", TS_SPIN_MS="0", OPENBLAS_NUM_THREADS="2", OPENBLAS_THREAD_TIMEOUT="30")
    assert polling.returncode == 0, polling.stderr[-3000:]
    states, timeout = polling.stdout.split()
    assert "R" in states and timeout == "30", polling.stdout  # the user's setting is kept: its thread polls


POOL_THREADS_SCRIPT = textwrap.dedent(
    """
    import os
    import tensorsmith as ts

    before = len(os.listdir("/proc/self/task"))
    ts.exp(ts.ones(4_000_000))  # past the grains: split over the pool, made on this first parallel op
    print(len(os.listdir("/proc/self/task")) - before)
    """
)


def test_the_default_thread_count_is_the_cpus_the_process_may_run_on() -> None:
    # A pool with more threads than the CPUs a process may use (taskset, a container's cpuset) only takes turns.
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("this process may run on one CPU only: a narrower affinity cannot be told from the default")
    env = {k: v for k, v in os.environ.items() if k not in ("TS_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    made = {}
    for cpus in (allowed[:1], allowed[:2], allowed):
        run = subprocess.run(
            [sys.executable, "-c", POOL_THREADS_SCRIPT], capture_output=True, text=True, timeout=300, env=env, check=False,
            preexec_fn=lambda cpus=cpus: os.sched_setaffinity(0, cpus),
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        made[len(cpus)] = int(run.stdout)
    assert made == {1: 0, 2: 1, len(allowed): len(allowed) - 1}  # the caller is one of the threads


def test_bad_spin_window_is_a_clear_error() -> None:
    script = "import numpy as np, tensorsmith as ts; x = ts.asarray(np.ones(4_000_000)); ts.add(x, x)"
    run = _run(script, "2", TS_SPIN_MS="-1")
    assert run.returncode != 0
    assert "TS_SPIN_MS must be a whole number of milliseconds from 0 to 60000, got '-1'" in run.stderr


def test_streamed_outputs_are_the_same_bytes() -> None:
    # TS_STREAM_MIN_BYTES=1: every pointwise output goes through the scratch buffer and non-temporal stores,
    # with runs cut at unaligned offsets by the thread split (the default streams only outputs of 16 MiB or more).
    runs = {name: _run(DIGEST_SCRIPT, "3", **env) for name, env in (("plain", {}), ("streamed", {"TS_STREAM_MIN_BYTES": "1"}))}
    for name, run in runs.items():
        assert run.returncode == 0, f"{name}:\n{run.stderr[-3000:]}"
    assert runs["plain"].stdout.split() == runs["streamed"].stdout.split()
    assert len(runs["plain"].stdout.split()) == DIGESTS


def test_bad_stream_threshold_is_a_clear_error() -> None:
    run = _run("import tensorsmith as ts; ts.add(ts.asarray([1.0, 2.0, 3.0]), 1.0)", "1", TS_STREAM_MIN_BYTES="lots")
    assert run.returncode != 0
    assert "TS_STREAM_MIN_BYTES must be a positive integer, got 'lots'" in run.stderr


def test_bad_thread_count_is_a_clear_error() -> None:
    run = _run("import tensorsmith as ts; ts.add(ts.asarray([1.0, 2.0, 3.0]), 1.0)", "zero")
    assert run.returncode != 0
    assert "TS_NUM_THREADS must be a positive integer, got 'zero'" in run.stderr


@pytest.mark.parametrize("n", [4_097, 1_000_003])
def test_float32_sum_is_at_least_as_accurate_as_numpy(n: int) -> None:
    rng = np.random.default_rng(n)
    # Positive values of mixed magnitude: rounding errors accumulate instead of cancelling.
    x = (rng.random(n) * 10.0 ** rng.integers(-3, 4, size=n)).astype(np.float32)
    exact = float(np.sum(x.astype(np.float64)))  # float64 sum of float32 values: exact to ~1e-16 relative
    ours = float(ts.sum(ts.asarray(x)))
    theirs = float(np.sum(x))
    ulp = float(np.spacing(np.float32(exact)))
    assert abs(ours - exact) <= max(abs(theirs - exact), ulp)
    # Reduced over an outer axis too (columns folded side by side).
    cols = x[: (n // 8) * 8].reshape(-1, 8)
    exact_cols = cols.astype(np.float64).sum(axis=0)
    ours_cols = np.asarray(ts.sum(ts.asarray(cols), axis=0)).astype(np.float64)
    theirs_cols = cols.sum(axis=0).astype(np.float64)
    ulps = np.spacing(exact_cols.astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(ours_cols - exact_cols) <= np.maximum(np.abs(theirs_cols - exact_cols), ulps))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.float16], ids=lambda d: np.dtype(d).name)
def test_means_of_long_rows_weight_each_chunk_by_its_length(dtype) -> None:
    # Rows of 2^17 elements or more are folded in chunks of 2^16 in parallel; the last chunk here holds 77
    # elements, all large, so averaging the chunks' means without their lengths would be far off.
    cols = 3 * 65536 + 77
    x = np.random.default_rng(2).integers(0, 4, size=(3, cols)).astype(dtype)
    x[:, 3 * 65536 :] = 1000
    exact = x.astype(np.float64).mean(axis=1)
    rtol = {np.float16: 2e-3, np.float32: 1e-6}.get(dtype, 1e-12)
    ours = ts.mean(ts.asarray(x), axis=1)
    assert np.asarray(ours).dtype == np.mean(x, axis=1).dtype
    np.testing.assert_allclose(np.asarray(ours).astype(np.float64), exact, rtol=rtol)
    np.testing.assert_allclose(float(ts.mean(ts.asarray(x[:2]))), x[:2].astype(np.float64).mean(), rtol=rtol)
    np.testing.assert_allclose(np.asarray(ts.mean(ts.asarray(x), axis=1, keepdims=True)).astype(np.float64), exact[:, None], rtol=rtol)


@pytest.mark.parametrize("cols", [100, 917])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_row_sums_with_cancellation_are_never_farther_from_exact_than_numpy(dtype, cols: int) -> None:
    # Uniform values around 0: row sums cancel, so a float accumulator's rounding shows in every row. The rows
    # are long enough for the kernel's lanes (float32 and float16 accumulate in double there).
    x = np.random.default_rng(5).uniform(-100, 100, (1029, cols)).astype(dtype)
    exact = x.astype(np.float64).sum(axis=1)
    ours = np.asarray(ts.sum(ts.asarray(x), axis=1)).astype(np.float64)
    theirs = x.sum(axis=1).astype(np.float64)
    half_ulps = np.spacing(np.abs(exact).astype(dtype)).astype(np.float64) / 2
    assert np.all(np.abs(ours - exact) <= half_ulps * 1.001)  # the correctly rounded sum, give or take a tie
    assert np.all(np.abs(ours - exact) <= np.maximum(np.abs(theirs - exact), half_ulps * 1.001))


def _ops(x: ts.Tensor, m: ts.Tensor) -> list[ts.Tensor]:
    """One op of each engine, on inputs past kReleaseGilElements and the engines' parallel grains."""
    return [ts.exp(x), ts.add(x, x[:1]), ts.sum(x), ts.max(m, axis=1), ts.argmax(m, axis=0), ts.softmax(m, axis=1),
            ts.matmul(m[:64], m[:513, :64]), ts.multiply(x, 3.0, out=ts.empty_like(x)), ts.var(m, axis=0), ts.any(m > 4)]


def test_ops_from_two_python_threads_give_the_same_bytes_as_one() -> None:
    """Two threads' ops run at once (the GIL released, one of them on the engines' pool and the other running
    its own chunks, or taking turns); each result is what a lone call gives."""
    rng = np.random.default_rng(11)
    x = ts.asarray(rng.standard_normal(300_001).astype(np.float32))
    m = ts.asarray(rng.standard_normal((640, 513)))
    expected = [np.asarray(r).tobytes() for r in _ops(x, m)]

    def run(_: int) -> list[bytes]:
        return [np.asarray(r).tobytes() for r in _ops(x, m)]

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for got in pool.map(run, range(24)):
            assert got == expected


HAND_OVER_SCRIPT = textwrap.dedent(
    """
    import threading
    import numpy as np
    import tensorsmith as ts

    x = ts.asarray(np.random.default_rng(5).standard_normal(20_000).astype(np.float32))
    expected = np.asarray(ts.sum(ts.exp(x))).tobytes()
    results, stop = [], threading.Event()

    def ops():
        for _ in range(300):
            results.append(np.asarray(ts.sum(ts.exp(x))).tobytes())

    def python_code():  # holds the GIL but for the interpreter's switches
        total = 0
        while not stop.is_set():
            total += sum(range(1000))

    threads = [threading.Thread(target=ops), threading.Thread(target=ops), threading.Thread(target=python_code)]
    for t in threads:
        t.start()
    for t in threads[:2]:
        t.join(timeout=120)
    stop.set()
    threads[2].join(timeout=120)
    print(sum(r == expected for r in results), any(t.is_alive() for t in threads))
    """
)


@pytest.mark.parametrize("spin", ["20", "0"])
def test_ops_handing_the_gil_over_beside_python_code_finish_with_a_lone_calls_bytes(spin: str) -> None:
    """A thread leaving an engine polls for the GIL's holder to release it for its own next engine (TS_SPIN_MS 0:
    it waits asleep at once): two threads of ops and one of plain Python code, which holds the GIL between the
    interpreter's switches, all finish, and every result is a lone call's."""
    run = _run(HAND_OVER_SCRIPT, "2", TS_SPIN_MS=spin)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["600", "False"]


BLAS_SCRIPT = textwrap.dedent(
    """
    import hashlib
    import numpy as np
    import tensorsmith as ts

    rng = np.random.default_rng(3)
    a = ts.asarray(rng.standard_normal((384, 512)).astype(np.float32))
    b = ts.asarray(rng.standard_normal((512, 448)).astype(np.float32))
    print(hashlib.sha256(np.asarray(ts.tanh(ts.matmul(a, b) * 0.01)).tobytes()).hexdigest())
    """
)


def test_threaded_blas_products_run_on_the_pool_from_any_thread_and_thread_count() -> None:
    """OpenBLAS's threaded GEMM runs its jobs on the engines' pool as a gang (runtime/src/core/blas.cpp): from
    two Python threads at once (one waits for the other's gang), between pointwise ops, and with one engine
    thread (OpenBLAS then threads nothing: its count follows the engines'): numpy's products, the same bytes
    each time."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((384, 512)).astype(np.float32)
    b = rng.standard_normal((512, 448)).astype(np.float32)
    ta, tb = ts.asarray(a), ts.asarray(b)
    np.testing.assert_allclose(np.asarray(ts.matmul(ta, tb)), a @ b, rtol=1e-4, atol=1e-3)

    def run(_: int) -> bytes:
        return np.asarray(ts.tanh(ts.matmul(ta, tb) * 0.01)).tobytes()

    expected = run(0)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        assert all(got == expected for got in pool.map(run, range(32)))
    digests = {threads: _run(BLAS_SCRIPT, threads, OPENBLAS_NUM_THREADS="2") for threads in ("1", "2")}
    for threads, done in digests.items():
        assert done.returncode == 0, f"TS_NUM_THREADS={threads}:\n{done.stderr[-3000:]}"
    assert digests["1"].stdout == digests["2"].stdout == hashlib.sha256(expected).hexdigest() + "\n"


OPENBLAS_COUNT_SCRIPT = textwrap.dedent(
    """
    import tensorsmith as ts

    ts.matmul(ts.ones((300, 300)), ts.ones((300, 300)))
    print(ts._openblas.scipy_openblas_get_num_threads64_())
    """
)


@pytest.mark.parametrize(("engine_threads", "openblas_threads", "expected"), [("1", "2", 1), ("3", "2", 2), ("2", "1", 1)])
def test_openblas_threads_as_many_ways_as_the_engines_never_more_than_it_was_given(
    engine_threads: str, openblas_threads: str, expected: int
) -> None:
    """A gang of more OpenBLAS jobs than the pool has threads would start threads of its own on every threaded
    GEMM, so OpenBLAS's count follows TS_NUM_THREADS, capped by what OPENBLAS_NUM_THREADS gave it."""
    done = _run(OPENBLAS_COUNT_SCRIPT, engine_threads, OPENBLAS_NUM_THREADS=openblas_threads)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout) == expected


def test_a_large_op_lets_other_python_threads_run() -> None:
    """While one thread runs a large op, another thread keeps running Python code: its clock readings cover
    the op's whole span. Holding the GIL, the op would allow at most the one switch interval before it runs."""
    x = ts.asarray(np.random.default_rng(0).standard_normal(1 << 25).astype(np.float32))
    expected = np.asarray(ts.exp(x))
    readings: list[int] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            readings.append(time.perf_counter_ns())

    ticker = threading.Thread(target=tick)
    ticker.start()
    while not readings:
        time.sleep(0.001)
    start = time.perf_counter_ns()
    result = ts.exp(x)
    end = time.perf_counter_ns()
    stop.set()
    ticker.join()
    inside = [r for r in readings if start < r < end]
    switch_ns = sys.getswitchinterval() * 1e9
    assert end - start > 4 * switch_ns, "the op was too fast to tell; make x larger"
    assert inside and inside[-1] - start > (end - start) / 2, (
        f"the other thread ran for {(inside[-1] - start) / 1e6 if inside else 0:.1f} ms of the op's {(end - start) / 1e6:.1f} ms"
    )
    np.testing.assert_array_equal(np.asarray(result), expected)
