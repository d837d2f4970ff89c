"""The gate's compile budget counts the CPU seconds a compiler run uses, not the wall time it takes: a loaded
machine stretches the second and must not turn an honest body into a compile-stage rejection, while a body
that keeps the compiler busy is still ended at its budget, and a run that waits is ended at WALL_FACTOR budgets."""

from __future__ import annotations

import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from tensorsmith_forge.validators.build import WALL_FACTOR, BuildError, CandidateBuilder

needs_prlimit = pytest.mark.skipif(
    shutil.which("prlimit") is None, reason="util-linux's prlimit is not installed: the budget falls back to wall time"
)


def shell_with_a_child(pid_file: Path) -> list[str]:
    """A run that starts a child of its own (as g++ starts cc1plus), writes its pid, and waits for it."""
    return ["sh", "-c", f"sleep 600 & echo $! > {pid_file}; wait"]


def assert_ended(pid: int) -> None:
    for _ in range(50):  # SIGKILL is delivered at once, but the orphan is reaped by init a moment later
        if not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return
        time.sleep(0.1)
    pytest.fail(f"the compiler's child process {pid} outlived the ended run")


@pytest.fixture
def builder(tmp_path: Path) -> CandidateBuilder:
    return CandidateBuilder(tmp_path, tmp_path / "cache")


@needs_prlimit
def test_a_run_that_keeps_the_cpu_busy_ends_at_its_budget(builder: CandidateBuilder) -> None:
    start = time.monotonic()
    with pytest.raises(BuildError, match="compile budget of 1 CPU seconds"):
        builder._run([sys.executable, "-c", "while True: pass"], budget_s=1.0)
    assert time.monotonic() - start < WALL_FACTOR, "the CPU limit, not the wall-time watchdog, should have ended it"


@needs_prlimit
def test_a_run_slower_than_its_budget_in_wall_time_but_not_in_cpu_time_passes(builder: CandidateBuilder) -> None:
    # What a compiler sharing two cores with a test run looks like: most of its wall time spent waiting.
    builder._run([sys.executable, "-c", "import time; time.sleep(2.5)"], budget_s=1.0)


def test_a_run_that_waits_past_the_wall_limit_ends_every_process_it_started(builder: CandidateBuilder,
                                                                             tmp_path: Path) -> None:  # fmt: skip
    pid_file = tmp_path / "child.pid"
    start = time.monotonic()
    with pytest.raises(BuildError, match="wall time without finishing"):
        builder._run(shell_with_a_child(pid_file), budget_s=0.5)
    assert time.monotonic() - start < 0.5 * WALL_FACTOR + 10
    assert_ended(int(pid_file.read_text()))


def test_an_interrupted_wait_ends_the_run_with_every_process_it_started(builder: CandidateBuilder,
                                                                        tmp_path: Path) -> None:  # fmt: skip
    # A stopped regen (Ctrl-C while the gate waits on a compiler) must not leave the compiler running in its session.
    pid_file = tmp_path / "child.pid"

    def interrupt(_signum, _frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            builder._run(shell_with_a_child(pid_file), budget_s=60.0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert_ended(int(pid_file.read_text()))


def test_a_failing_run_reports_the_compilers_first_errors(builder: CandidateBuilder) -> None:
    script = "echo 'In file included from k.cpp:1:' >&2; echo 'k.cpp:3:5: error: boom was not declared' >&2; exit 1"
    with pytest.raises(BuildError, match="k.cpp:3:5: error: boom was not declared"):
        builder._run(["sh", "-c", script], budget_s=30.0)


def test_a_run_that_writes_more_than_a_pipe_holds_is_not_stalled(builder: CandidateBuilder) -> None:
    # A compiler's diagnostics can run to megabytes; a run waited on with an unread pipe would block on them.
    builder._run([sys.executable, "-c", "import sys; sys.stderr.write('w' * (4 << 20))"], budget_s=5.0)
