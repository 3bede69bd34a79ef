"""Process helpers shared by the parent's pools and the trusted runners (Linux ``/proc``):
one reader of ``/proc/<pid>/stat``, and what is built on it; and the exit status a sealed
tracer ends with (the tracer's guards exit with it, the parent reads it)."""

from __future__ import annotations

import os
import signal
from typing import Any

# Exit status of a tracer whose candidate code acted after it was sealed for its hand-over.
SEALED_EXIT = 86


def proc_stat(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (index 0 is field 3, the
    state; 1 the parent pid; 2 the process group; 19 the start time in clock ticks), or None
    when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def process_start(pid: int) -> str:
    """A process's start time in clock ticks since boot ("" when there is no such process):
    with the pid, it names one process even when pids are reused."""
    fields = proc_stat(pid)
    return fields[19] if fields and len(fields) > 19 else ""


def _pids() -> list[str]:
    try:
        return [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return []


def die_with_parent() -> bool:
    """In a child: SIGKILL when the parent dies (Linux ``PR_SET_PDEATHSIG``; it fires when the
    *thread* that started the child exits, so pools start children from one long-lived
    thread). False where the OS cannot."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return False


def make_non_dumpable(*, undo: bool = False) -> bool:
    """``PR_SET_DUMPABLE`` 0 for a process that holds the run's secret or the trial keys (the
    parent, the judge runner) or is an ancestor of every tracer (the fork server): other
    processes of the same user (root too, without ``CAP_SYS_PTRACE``) can no longer ptrace it
    nor read its ``/proc/<pid>/{mem,environ,maps,fd,ns,...}``, and no core dump is written. A
    fork inherits it; an ``execve`` starts dumpable again. ``undo``: back to dumpable (a fork
    that becomes a tracer, whose /proc the parent checks). True when done; False off Linux or
    on any failure (never raises)."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        wanted = 1 if undo else 0
        return (libc.prctl(4, wanted, 0, 0, 0) == 0  # PR_SET_DUMPABLE
                and libc.prctl(3, 0, 0, 0, 0) == wanted)  # PR_GET_DUMPABLE
    except (OSError, AttributeError):
        return False


def seccomp_state(pid: int | str = "self") -> tuple[int, int] | None:
    """``(Seccomp, Seccomp_filters)`` from ``/proc/<pid>/status`` (mode 2: filters; the filter
    count is 0 where the kernel does not say), or None when unreadable: how the parent checks
    a tracer's claim that it sealed itself (sandbox/seal.py)."""
    mode = filters = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key == "Seccomp":
                    mode = int(value.strip() or 0)
                elif key == "Seccomp_filters":
                    filters = int(value.strip() or 0)
    except (OSError, ValueError):
        return None
    return None if mode is None else (mode, filters or 0)


def kill_group(proc: Any) -> None:
    """SIGKILL to a process's whole group (it was started in a session of its own), reaped."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def group_rss_bytes(pgid: int) -> int:
    """Resident memory of every process in a process group."""
    total = 0
    for entry in _pids():
        fields = proc_stat(entry)
        if not fields or len(fields) < 3 or fields[2] != str(pgid):
            continue
        try:
            with open(f"/proc/{entry}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    return total


def kill_children() -> int:
    """SIGKILL to every child process of this one, with its process group (tracers and runners
    lead their own groups); returns how many were signalled. Children are not reaped here:
    their owners wait for them."""
    me, killed = str(os.getpid()), 0
    for entry in _pids():
        fields = proc_stat(entry)
        if not fields or len(fields) < 3 or fields[1] != me:
            continue
        pid = int(entry)
        try:
            if fields[2] == entry:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            pass
    return killed
