"""Runs an untrusted child process (a candidate kernel's runner) so that nothing it does can hurt the harness.

`run_sandboxed` starts validators/sandbox_init.py inside fresh namespaces (`unshare` from util-linux), waits
with a wall-clock deadline, then kills everything the child left. sandbox_init finishes the confinement
from the inside, forks the child, applies limits and drops privileges, execs it, and reports back over a
pipe. Each layer below is applied where this machine permits it and recorded in `SandboxResult.isolation`;
none is silently assumed:

  processes   PID namespace: sandbox_init is PID 1, so when it exits or is killed the kernel kills every
              process in the namespace, including grandchildren that called setsid(). Always also: a new
              session whose process group is killed and, as root, a sweep over the child's private uid.
  network     Network namespace with no interface up: the child reaches nothing, not even 127.0.0.1.
  filesystem  Mount namespace: the scratch dir is bind-mounted on itself and every other mount is remounted
              read-only and nosuid, so writes outside scratch fail. HOME and TMPDIR point into scratch. One
              mount is spared: the PID namespace's own /proc (`unshare --mount-proc`), which shows the child
              only its own processes; the CUDA driver does not start with it read-only (cuInit answers 304,
              CUDA_ERROR_OPERATING_SYSTEM, seen on an H200; a private /dev/shm or /tmp did not help).
              Without it, `snapshot`/`changed_paths` detect writes after the fact.
  user        As root: the child runs as a fresh random uid that owns the scratch dir (not the files the
              caller put there: those stay read-only to it). It keeps CAP_DAC_READ_SEARCH, so it reads what
              root reads (an interpreter under /root stays usable) but writes like nobody; no other
              capability; no_new_privs. The private uid is what makes RLIMIT_NPROC count (the kernel exempts
              uid 0 even without capabilities) and lets the harness find every process the child left.
              Not root: root of a user namespace with every capability dropped; RLIMIT_NPROC then counts
              per namespace.
  limits      RLIMIT_AS (memory), RLIMIT_CPU, RLIMIT_FSIZE (which also caps stdout and stderr: they go to
              files, so no pipe can block or flood the harness), RLIMIT_STACK, RLIMIT_NPROC where it counts,
              RLIMIT_CORE=0.
  environment Built from an allowlist; names that look like credentials are refused.

For ASan builds pass `memory_bytes=None`: ASan reserves terabytes of address space, which RLIMIT_AS forbids.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

MiB = 1 << 20
GiB = 1 << 30


@dataclass(frozen=True)
class Limits:
    wall_s: float = 20.0
    cpu_s: float | None = None  # RLIMIT_CPU per process; None: the wall-clock limit
    memory_bytes: int | None = 2 * GiB  # RLIMIT_AS per process; None for sanitizer builds
    file_bytes: int | None = 256 * MiB  # RLIMIT_FSIZE: any file written, stdout and stderr included
    # RLIMIT_NPROC where the kernel counts it (see Isolation.nproc_limited). Threads count too: a child with a
    # thread pool (OpenBLAS, OpenMP) should be given OMP_NUM_THREADS / OPENBLAS_NUM_THREADS in its env.
    processes: int = 128
    output_bytes: int = 1 * MiB  # how much of stdout and of stderr is kept
    # RLIMIT_STACK: the main thread's stack, and (glibc reads it at start) every thread's default stack. Set,
    # not inherited, so a recursion that a production thread's stack would not hold fails here too.
    stack_bytes: int | None = 8 * MiB

    @property
    def cpu_limit_s(self) -> int:
        return max(1, math.ceil(self.cpu_s if self.cpu_s is not None else self.wall_s))


@dataclass(frozen=True)
class Isolation:
    """What was actually applied to one run."""

    pid_namespace: bool = False
    network_namespace: bool = False
    read_only_fs: bool = False
    user: str = "the harness's user"
    private_uid: int | None = None  # the uid the child ran as, when the harness could give it one
    capabilities: str = "unchanged"
    nproc_limited: bool = False
    writable_mounts: tuple[str, ...] = ()  # mounts the helper failed to make read-only
    spared: tuple[str, ...] = ()  # left writable on purpose: the PID namespace's own /proc

    def describe(self) -> list[str]:
        if self.read_only_fs:
            filesystem = "read-only except the scratch dir" + (f" and the child's own {' and '.join(self.spared)}" if self.spared else "")
        elif self.writable_mounts:
            filesystem = f"partly read-only (still writable: {', '.join(self.writable_mounts)})"
        else:
            filesystem = "not isolated (HOME and TMPDIR point into the scratch dir)"
        return [
            "processes: " + ("PID namespace" if self.pid_namespace else "process group only (no PID namespace)"),
            "network: " + ("isolated (empty network namespace)" if self.network_namespace else "not isolated"),
            f"filesystem: {filesystem}",
            f"user: {self.user}; capabilities: {self.capabilities}",
            "fork limit: " + ("RLIMIT_NPROC" if self.nproc_limited else "none (RLIMIT_NPROC does not count here)"),
        ]


@dataclass(frozen=True)
class SandboxResult:
    returncode: int | None  # exit status when the child exited, else None
    signal: str | None  # "SIGSEGV" etc. when a signal ended the child
    timed_out: bool
    out_of_memory: bool
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float | None
    limits: Limits
    isolation: Isolation
    error: str | None = None  # the sandbox could not start the child (bad argv, setup failure)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.error is None

    def reason(self) -> str:
        """One line saying how the run ended, for a person or a proposer."""
        limits = self.limits
        if self.error:
            return self.error
        if self.timed_out:
            return f"timed out after {limits.wall_s:g} s"
        if _ASAN_UNDER_RLIMIT_AS in self.stderr and limits.memory_bytes is not None:
            return "AddressSanitizer cannot start under RLIMIT_AS: run sanitizer builds with memory_bytes=None"
        if self.out_of_memory:
            if limits.memory_bytes is None:
                return "ran out of memory"
            return f"exceeded the {_size(limits.memory_bytes)} memory limit"
        cpu_exhausted = self.cpu_s is not None and self.cpu_s >= limits.cpu_limit_s
        if self.signal == "SIGXCPU" or (self.signal == "SIGKILL" and cpu_exhausted):
            return f"exceeded the {limits.cpu_limit_s} s CPU-time limit"
        if self.signal == "SIGXFSZ" and limits.file_bytes is not None:
            return f"exceeded the {_size(limits.file_bytes)} file-size limit (files, stdout or stderr)"
        if self.signal == "SIGKILL":
            return "was killed with SIGKILL (likely by the kernel's out-of-memory killer)"
        if self.signal:
            return f"crashed with {self.signal}"
        if self.returncode:
            return f"exited with status {self.returncode}"
        return "exited normally"


# What allocation failure looks like: C++, Python, libc (ENOMEM), ASan.
_OUT_OF_MEMORY = re.compile(
    r"std::bad_alloc|MemoryError|Cannot allocate memory|out of memory|allocation-size-too-big|failed to allocate"
)
_ASAN_UNDER_RLIMIT_AS = "ReserveShadowMemoryRange failed"
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
_INHERITED = ("PATH", "LANG", "LC_ALL")
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_INIT = Path(__file__).with_name("sandbox_init.py")


def sandbox_env(scratch: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's whole environment: PATH/LANG/LC_ALL from ours, HOME=TMPDIR=scratch, then `extra`.

    Nothing else is inherited (no LD_PRELOAD, PYTHONPATH or API key unless the caller passes it), and a
    name that looks like a credential is refused even when passed explicitly."""
    env = {name: os.environ[name] for name in _INHERITED if name in os.environ}
    env.setdefault("PATH", _DEFAULT_PATH)
    env.setdefault("LANG", "C.UTF-8")
    env.update(HOME=str(scratch), TMPDIR=str(scratch))
    for name, value in (extra or {}).items():
        if _SECRET_NAME.search(name):
            raise ValueError(f"refusing to pass {name} to a sandboxed process: it looks like a credential")
        env[name] = value
    return env


def run_sandboxed(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    limits: Limits = Limits(),
    stdin_data: bytes | str | None = None,
) -> SandboxResult:
    """Runs argv in `cwd`, a directory the caller made for this run, under `limits`.

    Raises only for the caller's mistakes (a missing or shared directory, a credential in `env`), never for
    anything the child does: that is all in the result."""
    scratch = Path(cwd).resolve(strict=True)
    if not scratch.is_dir():
        raise NotADirectoryError(scratch)
    if scratch == Path(scratch.anchor) or scratch.stat().st_mode & stat.S_ISVTX:
        raise ValueError(f"{scratch} is shared (/ or a sticky dir like /tmp); give each run its own directory")
    child_env = sandbox_env(scratch, env)
    uid = secrets.randbelow(1 << 30) + (1 << 30) if os.geteuid() == 0 else None
    if uid is not None:
        os.chown(scratch, uid, uid)
    namespaces = _namespaces()
    config = {
        "scratch": str(scratch),
        "argv": list(argv),
        "env": child_env,
        "uid": uid,
        # RLIMIT_NPROC counts only for a uid other than 0: our private one, or a user namespace's.
        "rlimits": _rlimits(limits, nproc=uid is not None or bool(namespaces)),
        "mount_namespace": "mount" in namespaces,
        # the PID namespace's own procfs, where there is one: see the module's docstring (filesystem)
        "writable": ["/proc"] if "pid" in namespaces else [],
    }
    status_read, status_write = os.pipe()
    config["status_fd"] = status_write
    command = [*_unshare_command(namespaces), sys.executable, "-I", "-S", str(_INIT), json.dumps(config)]
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        if stdin_data is not None:
            stdin.write(stdin_data.encode() if isinstance(stdin_data, str) else stdin_data)
            stdin.seek(0)
        start = time.monotonic()
        try:
            child = subprocess.Popen(command, cwd=scratch, env={"PATH": _DEFAULT_PATH}, stdin=stdin, stdout=stdout,
                                     stderr=stderr, pass_fds=(status_write,), start_new_session=True)  # fmt: skip
        except BaseException:
            os.close(status_read)
            raise
        finally:
            os.close(status_write)
        try:
            timed_out = not _wait_unreaped(child.pid, limits.wall_s)
            wall_s = time.monotonic() - start
        finally:  # also when the harness itself is interrupted: nothing may outlive this call
            _kill_everything(child.pid, uid)
            child.wait()
        reports = _read_reports(status_read)
        out = _read_capped(stdout, limits.output_bytes)
        err = _read_capped(stderr, limits.output_bytes)
    exit_report = reports.get("exit", {})
    error = reports.get("error", {}).get("message")
    if error is None and not timed_out and not exit_report:
        error = f"sandbox helper exited without a report (status {child.returncode}): {err.strip()[-500:]}"
    returncode, signal_number = exit_report.get("returncode"), exit_report.get("signal")
    failed = timed_out or error is not None or returncode != 0
    return SandboxResult(
        returncode=returncode,
        signal=_signal_name(signal_number) if signal_number else None,
        timed_out=timed_out,
        out_of_memory=failed
        and not timed_out
        and bool(_OUT_OF_MEMORY.search(err))
        and _ASAN_UNDER_RLIMIT_AS not in err,
        stdout=out,
        stderr=err,
        wall_s=wall_s,
        cpu_s=exit_report.get("cpu_s"),
        limits=limits,
        isolation=_isolation(namespaces, reports, uid),
        error=error,
    )


def _rlimits(limits: Limits, nproc: bool) -> dict[str, list[int]]:
    cpu = limits.cpu_limit_s
    chosen = {"RLIMIT_CPU": [cpu, cpu + 1], "RLIMIT_CORE": [0, 0]}  # SIGXCPU first, SIGKILL a second later
    if limits.memory_bytes is not None:
        chosen["RLIMIT_AS"] = [limits.memory_bytes] * 2
    if limits.file_bytes is not None:
        chosen["RLIMIT_FSIZE"] = [limits.file_bytes] * 2
    if limits.stack_bytes is not None:
        chosen["RLIMIT_STACK"] = [limits.stack_bytes] * 2
    if nproc:
        chosen["RLIMIT_NPROC"] = [limits.processes] * 2
    return chosen


def _isolation(namespaces: frozenset[str], reports: dict[str, dict], uid: int | None) -> Isolation:
    setup, started = reports.get("setup", {}), reports.get("exec", {})
    writable = tuple(setup.get("writable_mounts", ()))
    return Isolation(
        pid_namespace="pid" in namespaces,
        network_namespace="net" in namespaces,
        read_only_fs="mount" in namespaces and bool(setup) and not writable,
        user=started.get("user", "unknown (the child never started)"),
        private_uid=uid,
        capabilities=started.get("capabilities", "unknown"),
        nproc_limited="RLIMIT_NPROC" in started.get("rlimits", ()),
        writable_mounts=writable,
        spared=tuple(setup.get("spared", ())),
    )


# --- namespaces ------------------------------------------------------------------------------------------

_NAMESPACE_FLAGS = {
    "pid": ["--pid", "--fork", "--kill-child", "--mount-proc"],
    "net": ["--net"],
    "mount": ["--mount"],
}


@cache
def _namespaces() -> frozenset[str]:
    """The namespaces `unshare` can create here, found by trying them once per process.

    As root no user namespace is needed; otherwise one is created first (and must work) to be allowed the rest."""
    if not shutil.which("unshare") or not _unshare_works(frozenset()):
        return frozenset()
    working = frozenset(name for name in _NAMESPACE_FLAGS if _unshare_works(frozenset([name])))
    return working if _unshare_works(working) else frozenset()


def _unshare_flags(namespaces: frozenset[str]) -> list[str]:
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return user + [flag for name, group in _NAMESPACE_FLAGS.items() if name in namespaces for flag in group]


def _unshare_command(namespaces: frozenset[str]) -> list[str]:
    return ["unshare", *_unshare_flags(namespaces), "--"] if namespaces else []


def _unshare_works(namespaces: frozenset[str]) -> bool:
    try:
        probe = subprocess.run(["unshare", *_unshare_flags(namespaces), "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


# --- harness side: waiting, killing, reading ------------------------------------------------------------


def _wait_unreaped(pid: int, timeout_s: float) -> bool:
    """Waits for `pid` to exit without reaping it, so its process group id cannot be reused before we kill it."""
    deadline = time.monotonic() + timeout_s
    delay = 0.0005
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.01)
    return True


def _kill_everything(leader: int, uid: int | None) -> None:
    """SIGKILLs the child's process group and, as root, every process running under the child's private uid,
    whatever session it moved to; returns once none of them is alive. The helper is in the group, and a PID
    namespace dies with it, so this also waits until the namespace is empty."""
    for _ in range(1000):  # each round kills all it sees; RLIMIT_NPROC bounds how many can appear meanwhile
        alive = [pid for pid, pgrp, owner in _live_processes() if pgrp == leader or (uid is not None and owner == uid)]
        if not alive:
            return
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.001)


def _live_processes() -> Iterator[tuple[int, int, int | None]]:
    """(pid, process group, real uid) of every process on the machine that is not a zombie."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue
        state, _ppid, pgrp = stat[stat.rindex(")") + 2 :].split()[:3]
        uid = re.search(r"^Uid:\s+(\d+)", status, re.MULTILINE)
        if state not in ("Z", "X"):
            yield int(entry.name), int(pgrp), int(uid.group(1)) if uid else None


def _read_reports(fd: int) -> dict[str, dict]:
    """The helper's JSON lines, by event; reads only what is there (the writers are dead), never blocks."""
    os.set_blocking(fd, False)
    data = b""
    try:
        while chunk := os.read(fd, 65536):
            data += chunk
    except BlockingIOError:
        pass
    finally:
        os.close(fd)
    reports = {}
    for line in data.splitlines():
        try:
            report = json.loads(line)
            reports[report["event"]] = report
        except (ValueError, KeyError, TypeError):
            continue
    return reports


def _read_capped(file, cap: int) -> str:
    size = os.fstat(file.fileno()).st_size
    file.seek(0)
    text = file.read(cap).decode("utf-8", errors="replace")
    if size > cap:
        text += f"\n[... {size - cap} more bytes not kept]"
    return text


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _size(n: int) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} bytes"


# --- files written outside the scratch dir (for machines without a mount namespace) ----------------------


def snapshot(directories: Sequence[Path], exclude: Path, limit: int = 200_000) -> dict[str, tuple[int, int]]:
    """Path -> (mtime_ns, size) for everything under `directories` except `exclude`, to diff after a run."""
    seen: dict[str, tuple[int, int]] = {}
    excluded = str(Path(exclude).resolve())
    for top in directories:
        for root, dirs, files in os.walk(os.path.realpath(top)):
            dirs[:] = [d for d in dirs if os.path.join(root, d) != excluded]
            for name in [*dirs, *files]:
                path = os.path.join(root, name)
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                seen[path] = (info.st_mtime_ns, info.st_size)
                if len(seen) >= limit:
                    return seen
    return seen


def changed_paths(before: Mapping[str, tuple[int, int]], after: Mapping[str, tuple[int, int]]) -> list[str]:
    """Paths created or modified between two snapshots."""
    return sorted(path for path, state in after.items() if before.get(path) != state)
