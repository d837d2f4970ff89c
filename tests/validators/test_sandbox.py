"""The sandbox contains whatever a candidate does: hangs, crashes, huge allocations, fork bombs, escapes.

Most tests run twice: with the isolation this machine permits ("probed") and with every namespace turned
off ("no-namespaces"), the fallback a restricted CI container would get. Assertions that depend on an
isolation layer check `result.isolation` and skip, saying why, where the layer is missing.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tensorsmith_forge.validators import sandbox
from tensorsmith_forge.validators.sandbox import Limits, SandboxResult, changed_paths, run_sandboxed, sandbox_env, snapshot

PY = sys.executable
SLACK_S = 3.0  # how long after the wall-clock limit the harness may take to return


@pytest.fixture(params=["probed", "no-namespaces"])
def mode(request, monkeypatch) -> str:
    if request.param == "no-namespaces":
        monkeypatch.setattr(sandbox, "_namespaces", lambda: frozenset())
    return request.param


@pytest.fixture
def scratch() -> Iterator[Path]:
    # Under the system temp dir, whose parents any uid may traverse (pytest's tmp_path parents are 0700).
    path = Path(tempfile.mkdtemp(prefix="ts-sandbox-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def marker() -> str:
    """A token put on the child's command line, to find any process it leaves behind."""
    return f"ts-sandbox-marker-{secrets.token_hex(6)}"


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes()
                state = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker.encode() in cmdline and state != "Z":
                found.append(int(entry.name))
    return found


def run_python(code: str, scratch: Path, *args: str, **kwargs) -> tuple[SandboxResult, float]:
    start = time.monotonic()
    result = run_sandboxed([PY, "-I", "-S", "-c", textwrap.dedent(code), *args], cwd=scratch, **kwargs)
    return result, time.monotonic() - start


@pytest.fixture(scope="module")
def misbehaving_binary() -> Iterator[Path]:
    """A C++ program that misbehaves as asked: the runner's real children are C++ kernels."""
    compiler = shutil.which("g++")
    if not compiler:
        pytest.skip("g++ not found: the C++ crash tests need it")
    directory = Path(tempfile.mkdtemp(prefix="ts-sandbox-bin-"))
    source = directory / "misbehave.cpp"
    source.write_text(
        textwrap.dedent("""\
        #include <cstdio>
        #include <cstring>
        #include <vector>
        int main(int argc, char** argv) {
          if (argc > 1 && std::strcmp(argv[1], "segv") == 0) { volatile int* p = nullptr; return *p; }
          if (argc > 1 && std::strcmp(argv[1], "alloc") == 0) {
            std::vector<char> huge(50ull << 30);  // 50 GB
            return huge[12345];
          }
          std::puts("ok");
          return 0;
        }
    """)
    )
    subprocess.run([compiler, "-O0", str(source), "-o", str(directory / "misbehave")], check=True)
    subprocess.run([compiler, "-O0", "-fsanitize=address", str(source), "-o", str(directory / "misbehave-asan")],
                   check=True)  # fmt: skip
    directory.chmod(0o755)
    yield directory / "misbehave"
    shutil.rmtree(directory, ignore_errors=True)


def test_normal_run_keeps_output_and_stdin(mode, scratch):
    result, _ = run_python("import sys; print(sys.stdin.read().upper())", scratch, stdin_data="hello")
    assert result.ok, result.reason()
    assert result.stdout == "HELLO\n"
    assert result.reason() == "exited normally"
    assert all(line for line in result.isolation.describe())


@pytest.mark.parametrize("code", ["import time; time.sleep(1000)", "while True: pass"], ids=["sleep", "busy"])
def test_hanging_child_is_killed_at_the_wall_clock_limit(mode, scratch, code):
    result, elapsed = run_python(code, scratch, limits=Limits(wall_s=0.5, cpu_s=30))
    assert result.timed_out
    assert elapsed < 0.5 + SLACK_S
    assert result.reason() == "timed out after 0.5 s"


def test_child_that_closes_its_output_and_keeps_running_is_killed(mode, scratch):
    code = "import os, time; os.close(1); os.close(2); time.sleep(1000)"
    result, elapsed = run_python(code, scratch, limits=Limits(wall_s=0.5))
    assert result.timed_out and elapsed < 0.5 + SLACK_S


def test_cpu_time_limit(mode, scratch):
    result, _ = run_python("while True: pass", scratch, limits=Limits(wall_s=20, cpu_s=1))
    assert result.signal == "SIGXCPU"
    assert result.reason() == "exceeded the 1 s CPU-time limit"


def test_segfault_is_reported_by_signal_name(mode, scratch, misbehaving_binary):
    result = run_sandboxed([str(misbehaving_binary), "segv"], cwd=scratch)
    assert result.signal == "SIGSEGV"
    assert result.reason() == "crashed with SIGSEGV"


def test_python_segfault_too(scratch):
    result, _ = run_python("import ctypes; ctypes.string_at(0)", scratch)
    assert result.signal == "SIGSEGV"


@pytest.mark.parametrize("language", ["c++", "python"])
def test_50_gb_allocation_is_stopped_by_the_memory_limit(mode, scratch, misbehaving_binary, language):
    limits = Limits(memory_bytes=1 << 30)
    if language == "c++":
        result = run_sandboxed([str(misbehaving_binary), "alloc"], cwd=scratch, limits=limits)
        assert result.signal == "SIGABRT" and "std::bad_alloc" in result.stderr
    else:
        result, _ = run_python("bytearray(50 * 1024**3)", scratch, limits=limits)
    assert result.out_of_memory
    assert result.reason() == "exceeded the 1 GiB memory limit"


def test_sanitizer_builds_need_no_address_space_limit(scratch, misbehaving_binary):
    asan = misbehaving_binary.with_name("misbehave-asan")
    refused = run_sandboxed([str(asan)], cwd=scratch)
    assert not refused.ok and not refused.out_of_memory
    assert refused.reason().endswith("run sanitizer builds with memory_bytes=None")
    result = run_sandboxed([str(asan)], cwd=scratch, limits=Limits(memory_bytes=None))
    assert result.ok and result.stdout == "ok\n", result.reason()


def test_endless_output_is_capped(mode, scratch):
    result = run_sandboxed(["yes"], cwd=scratch, limits=Limits(file_bytes=4 << 20, output_bytes=1000))
    assert result.signal == "SIGXFSZ"
    assert result.reason() == "exceeded the 4 MiB file-size limit (files, stdout or stderr)"
    assert result.stdout.startswith("y\ny\n") and len(result.stdout) < 1100
    assert "more bytes not kept" in result.stdout


def test_fork_bomb_is_contained_and_leaves_nothing(mode, scratch, marker):
    # Doubling ten times would make 1024 processes; each survivor then sleeps far past the limit.
    bomb = """
        import os, time
        failed = 0
        for _ in range(10):
            try:
                os.fork()
            except OSError:
                failed += 1
        print(failed, flush=True)
        time.sleep(1000)
    """
    result, elapsed = run_python(bomb, scratch, marker, limits=Limits(wall_s=1, processes=32))
    assert result.timed_out and elapsed < 1 + SLACK_S
    assert processes_with(marker) == []
    if result.isolation.nproc_limited:
        assert len(result.stdout.split()) <= 32  # one line per process that got to print
        assert any(int(failed) > 0 for failed in result.stdout.split())


def test_setsid_grandchild_does_not_survive(mode, scratch, marker):
    code = f"""
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", "{marker}"], start_new_session=True)
        print("escaped", flush=True)
    """
    result, elapsed = run_python(code, scratch, marker, limits=Limits(wall_s=5))
    assert result.ok and result.stdout == "escaped\n", result.reason()
    if not (result.isolation.pid_namespace or result.isolation.private_uid is not None):
        pytest.skip("no PID namespace and no private uid here: a setsid() grandchild can outlive the run")
    assert processes_with(marker) == []
    assert elapsed < SLACK_S


def test_write_outside_scratch_is_prevented_or_detected(mode, scratch):
    watched = Path(tempfile.mkdtemp(prefix="ts-sandbox-watched-"))
    watched.chmod(0o1777)  # writable by anyone, like /tmp
    before = snapshot([watched], exclude=scratch)
    code = f"""
        open("inside.txt", "w").write("fine")
        try:
            open("{watched}/escaped.txt", "w").write("escaped")
            print("written")
        except OSError as exc:
            print("refused", exc.errno)
    """
    try:
        result, _ = run_python(code, scratch)
        assert (scratch / "inside.txt").read_text() == "fine"
        if result.isolation.read_only_fs:
            assert result.stdout.startswith("refused") and not (watched / "escaped.txt").exists()
        else:
            assert changed_paths(before, snapshot([watched], exclude=scratch)) == [str(watched / "escaped.txt")]
    finally:
        shutil.rmtree(watched)


def test_the_pid_namespaces_own_proc_stays_writable_and_shows_only_the_child(scratch):
    """The CUDA driver does not start where /proc is read-only (cuInit answered 304 on an H200): the sandbox
    spares /proc where it is the PID namespace's own, which lists no process outside the sandbox."""
    code = """
        import json, os
        fd = os.open("/proc/self/mem", os.O_RDWR)  # refused on a read-only procfs (EROFS)
        os.close(fd)
        print(json.dumps(sorted(int(p) for p in os.listdir("/proc") if p.isdigit())))
        try:
            open("/proc/../etc/ts-sandbox-escape", "w")
        except OSError as exc:
            print("refused", exc.errno)
    """
    result, _ = run_python(code, scratch)
    if not (result.isolation.read_only_fs and result.isolation.pid_namespace):
        pytest.skip(f"no PID and mount namespaces here: {result.isolation.describe()}")
    assert result.ok, result.reason() + result.stderr
    assert result.isolation.spared == ("/proc",) and "own /proc" in result.isolation.describe()[2]
    pids, refused = result.stdout.splitlines()
    assert max(json.loads(pids)) < 10 and refused.startswith("refused")  # the namespace's few processes, not the host's


def test_child_does_not_see_our_secrets(mode, scratch, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-kernels")
    monkeypatch.setenv("LD_PRELOAD", "/nonexistent/preload.so")
    result, _ = run_python("import os; print(sorted(os.environ.items()))", scratch, env={"TS_SEED": "7"})
    assert result.ok, result.reason()
    assert "sk-ant-not-for-kernels" not in result.stdout and "LD_PRELOAD" not in result.stdout
    assert "('TS_SEED', '7')" in result.stdout and f"('HOME', '{scratch}')" in result.stdout


def test_credentials_cannot_be_passed_even_explicitly(scratch):
    for name in ("ANTHROPIC_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "client_secret"):
        with pytest.raises(ValueError, match="credential"):
            sandbox_env(scratch, {name: "x"})


def test_network_is_unreachable(scratch):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.5)
        port = server.getsockname()[1]
        code = f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=2)
                print("connected")
            except OSError as exc:
                print("refused", exc.errno)
        """
        result, _ = run_python(code, scratch)
        if not result.isolation.network_namespace:
            pytest.skip("this machine does not permit a network namespace: network: not isolated")
        assert result.stdout.startswith("refused")
        with pytest.raises(TimeoutError):
            server.accept()


def test_child_cannot_regain_privileges(scratch):
    result, _ = run_python("print(open('/proc/self/status').read())", scratch)
    status = dict(line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)
    assert status["NoNewPrivs"].strip() == "1"
    allowed = 1 << 2 if result.isolation.private_uid is not None else 0  # CAP_DAC_READ_SEARCH
    assert int(status["CapEff"], 16) & ~allowed == 0
    assert int(status["CapBnd"], 16) & ~allowed == 0


def test_unstartable_command_is_a_reason_not_an_exception(scratch):
    result = run_sandboxed(["/nonexistent/runner"], cwd=scratch)
    assert not result.ok
    assert result.reason() == "could not start '/nonexistent/runner': No such file or directory"


@pytest.mark.parametrize("shared", ["/", tempfile.gettempdir()])
def test_a_shared_directory_is_refused_as_scratch(shared):
    with pytest.raises(ValueError, match="its own directory"):
        run_sandboxed(["true"], cwd=Path(shared))
