"""The inside half of validators/sandbox.py: started by `run_sandboxed` inside the new namespaces.

It finishes the confinement that only a process inside the namespaces can do (the read-only filesystem),
forks the child, and in the child applies the resource limits and drops privileges before exec. It stays
as the child's parent, PID 1 of the PID namespace when there is one, reaps everything, and reports on a
pipe as JSON lines: `setup` (what the filesystem looks like), `exec` (user, capabilities, limits applied,
sent by the child just before exec), `exit` (status and CPU time), or `error` (why the child never ran).

Kept to the standard library's lightest modules: it starts once per sandboxed run.
"""

import contextlib
import ctypes
import json
import os
import re
import resource
import signal
import sys

_libc = ctypes.CDLL(None, use_errno=True)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_RELATIME = 1024, 2048, 4096, 16384, 1 << 21
# Per-mount flags a remount must repeat (a read-only remount would otherwise clear them).
KEPT_MOUNT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
                    "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}  # fmt: skip
PR_SET_KEEPCAPS, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE = 8, 24, 38, 47, 2
CAP_DAC_READ_SEARCH = 2
NO_UID_MAP = "4294967295"  # the count in /proc/self/uid_map ("0 0 4294967295") outside any user namespace


def main(config: dict) -> None:
    report = reporter(config["status_fd"])
    if config["mount_namespace"]:
        try:
            still_writable, spared = read_only_except(config["scratch"], config.get("writable", ()))
            report("setup", writable_mounts=still_writable, spared=spared)
        except OSError as exc:
            report("error", message=f"sandbox setup failed: {exc}")
            return
    child = os.fork()
    if child == 0:
        exec_child(config, report)
    while True:  # as PID 1 we also reap orphans; stop at our child
        pid, status, usage = os.wait4(-1, 0)
        if pid == child:
            break
    report("exit", returncode=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
           signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
           cpu_s=usage.ru_utime + usage.ru_stime)  # fmt: skip


def exec_child(config: dict, report) -> None:
    """In the forked child: limits, privileges, signal dispositions, exec. Never returns."""
    try:
        os.chdir(config["scratch"])  # after the bind mount, so relative paths land on the writable mount
        for name, (soft, hard) in config["rlimits"].items():
            resource.setrlimit(getattr(resource, name), (soft, hard))
        user, capabilities = drop_privileges(config["uid"])
        for number in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):  # Python changed these; exec keeps SIG_IGN
            signal.signal(number, signal.SIG_DFL)
        os.set_inheritable(config["status_fd"], False)  # closes at exec: the child cannot forge reports
        report("exec", user=user, capabilities=capabilities, rlimits=sorted(config["rlimits"]))
        os.execvpe(config["argv"][0], config["argv"], config["env"])
    except BaseException as exc:  # noqa: BLE001 - the forked child must never return into the helper
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        report("error", message=f"could not start {config['argv'][0]!r}: {detail}")
    finally:
        os._exit(127)


def drop_privileges(uid: int | None) -> tuple[str, str]:
    """As root, become `uid` keeping only CAP_DAC_READ_SEARCH (when the bounding set still has it);
    otherwise drop every capability. Then no_new_privs, so no setuid binary can give any back."""
    has_capabilities = int(proc_status("CapEff"), 16) != 0
    keep = CAP_DAC_READ_SEARCH if uid is not None else None
    if has_capabilities:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
        for cap in range(last + 1):
            if cap != keep:
                check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "PR_CAPBSET_DROP")
    if uid is not None:
        check(_libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0), "PR_SET_KEEPCAPS")
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    capabilities = "none"
    if has_capabilities and keep is not None and set_capabilities(1 << keep):
        check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, keep, 0, 0), "PR_CAP_AMBIENT_RAISE")
        capabilities = "CAP_DAC_READ_SEARCH only (reads like root, writes like an unprivileged user)"
    elif has_capabilities and not set_capabilities(0):
        raise OSError("could not clear the capability sets")
    check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    with open("/proc/self/uid_map") as f:
        in_user_namespace = f.read().split()[2] != NO_UID_MAP
    if uid is not None:
        user = f"private uid {uid}"
    elif in_user_namespace:
        user = "root of a user namespace (the harness's user outside)"
    else:
        user = f"uid {os.getuid()} (the harness's user)"
    return user, capabilities


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def set_capabilities(mask: int) -> bool:
    """effective = permitted = inheritable = mask, for capabilities 0-31 (all we ever keep)."""
    header = CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = (CapData * 2)(CapData(mask, mask, mask), CapData(0, 0, 0))
    return _libc.capset(ctypes.byref(header), data) == 0


def read_only_except(scratch: str, writable: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """Binds scratch on itself, leaves the mount points in `writable` as they are, and remounts every other
    mount read-only and nosuid (in our private mount namespace only); returns the other visible mount points
    still writable, and those spared."""
    mount(scratch, scratch, MS_BIND | MS_REC)
    spared = sorted(point for point in writable if os.path.isdir(point))
    for point, options in mounts():
        if inside(point, scratch) or point in spared or "ro" in options:
            continue
        kept = sum(flag for name, flag in KEPT_MOUNT_FLAGS.items() if name in options)
        try:
            mount(None, point, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | kept)
        except OSError:
            continue  # reported below if it is still visible and writable
    visible = dict(mounts())  # for a mount point listed twice, the later mount is the one on top
    still = sorted(point for point, options in visible.items() if "rw" in options and not inside(point, scratch) and point not in spared)
    return still, spared


def mounts() -> list[tuple[str, set[str]]]:
    """(mount point, per-mount options) from /proc/self/mountinfo, in mount order."""
    with open("/proc/self/mountinfo") as f:
        lines = f.read().splitlines()
    table = []
    for line in lines:
        fields = line.split()
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])  # "\040" is a space
        table.append((point, set(fields[5].split(","))))
    return table


def inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def mount(source: str | None, target: str, flags: int) -> None:
    source_bytes = source.encode() if source is not None else None
    check(_libc.mount(source_bytes, target.encode(), None, ctypes.c_ulong(flags), None), f"mount {target}")


def check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def proc_status(key: str) -> str:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split(":", 1)[1].strip()
    return "0"


def reporter(fd: int):
    def report(event: str, **fields) -> None:
        with contextlib.suppress(OSError):  # the harness went away: nothing to tell
            os.write(fd, (json.dumps({"event": event, **fields}) + "\n").encode())

    return report


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
