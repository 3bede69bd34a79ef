"""What the tests that signal a command and watch its processes share (tests/test_interrupt.py,
tests/test_optimize_interrupt.py, tests/test_boundary.py, tests/test_zygote.py): a process as
/proc tells it (alive, its CPU time, its children and descendants), waiting for a condition
however slow the machine, and a signal sent with the time the command took to exit."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import NamedTuple


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (the state first); None when the
    process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie does not)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (0 when it is gone)."""
    fields = _stat(pid)
    return 0.0 if fields is None else (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append((int(entry), cmdline))
    return found


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (walking /proc's parent links)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None and stat[0] != "Z":
                parents[int(entry)] = int(stat[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def wait_for(condition, timeout: float, what: str, interval: float = 0.1) -> None:
    """Returns once ``condition()`` is true; an AssertionError naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


class Stopped(NamedTuple):
    stderr: str
    signalled: float  # time.monotonic() when the signal was sent
    seconds: float  # from the signal to the exit


def stop(proc: subprocess.Popen, sig: int = signal.SIGINT, timeout: float = 60) -> Stopped:
    """Sends ``sig`` to ``proc`` (started with its stdout and stderr piped, as text) and waits
    for it to exit: its stderr, and when and how fast it stopped."""
    signalled = time.monotonic()
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=timeout)
    return Stopped(stderr, signalled, time.monotonic() - signalled)
