"""Runtime guards for the worker process, installed before candidate code runs.

Python audit hooks cannot be removed once added, so after :func:`lock_down`
the process cannot spawn processes, open sockets, load native code through
ctypes, scan the heap, or write files outside its private temp dir, however
the candidate's code is written. rlimits bound its memory and file sizes; the
parent owns the wall clock and kills the whole process group.
"""

from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

# Audit events that are never allowed once the candidate is loaded.
_DENIED_EVENTS = frozenset({
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "os.kill", "os.killpg", "subprocess.Popen", "pty.spawn",
    "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.addressof", "ctypes.cdata", "ctypes.call_function",
    "ctypes.string_at", "ctypes.wstring_at", "ctypes.create_string_buffer",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "sys.setprofile", "sys.settrace", "sys.remote_exec",
    "os.chdir", "os.chroot", "os.setuid", "os.setgid", "resource.setrlimit", "resource.prlimit",
    "webbrowser.open",
})
_PATH_EVENTS = frozenset({
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link",
    "os.symlink", "os.truncate", "os.utime", "shutil.rmtree", "shutil.copyfile", "shutil.move",
})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class SandboxViolation(PermissionError):
    """Raised inside the candidate when it attempts something the sandbox forbids."""


_state: dict[str, object] = {"active": False, "root": None, "violations": []}


def violations() -> list[str]:
    return list(_state["violations"])  # type: ignore[arg-type]


def _inside(path: object, root: str) -> bool:
    if isinstance(path, int):  # an fd: the file was opened (and checked) earlier
        return True
    try:
        real = os.path.realpath(os.fsdecode(path))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return real == root or real.startswith(root + os.sep) or real == os.devnull


def _hook(event: str, args: tuple) -> None:
    if not _state["active"]:
        return
    root = _state["root"]
    why = None
    if event in _DENIED_EVENTS:
        why = f"{event} is not allowed in a kernel"
    elif event == "open" and len(args) >= 3:
        path, mode, flags = args[0], args[1], args[2]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS)
        if writing and not _inside(path, root):  # type: ignore[arg-type]
            why = f"writing {path!r} outside the private temp dir is not allowed"
    elif event in _PATH_EVENTS:
        paths = [a for a in args[:2] if isinstance(a, (str, bytes, os.PathLike))]
        if any(not _inside(p, root) for p in paths):  # type: ignore[arg-type]
            why = f"{event} outside the private temp dir is not allowed"
    if why:
        _state["violations"].append(why)  # type: ignore[union-attr]
        raise SandboxViolation(why)


_installed = False


def install_hook() -> None:
    """Adds the (inactive) audit hook; call once, early, in the worker."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True


def set_limits(memory_bytes: int | None, file_bytes: int) -> None:
    """Address-space and file-size limits, no core dumps."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))


def lock_down(temp_dir: Path) -> None:
    """From now on the audit hook enforces the rules (irreversibly for this process)."""
    install_hook()
    _state["root"] = os.path.realpath(temp_dir)
    _state["active"] = True

