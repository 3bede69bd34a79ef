"""Untrusted tracer processes: one fresh process per evaluation, with a warm spare waiting.

A tracer (:mod:`jaxbench.evaluator.sandbox.tracer`) is forked by the fork server
(:class:`Zygote`, which imported JAX and the harness once; a tracer started as a
command when there is none), isolates itself and warms up before its job
arrives, so keeping one spare per slot hides start-up without ever reusing a
process that ran candidate code. Each has its
own process group (killed whole at the end, so nothing it started survives), a
private directory (the only place it may write), a minimal environment (no API
keys, no accelerator), a wall-clock timeout, a resident-memory watchdog on top
of its own rlimits, and a watchdog on the size of its private directory (bytes
and entries, ``DIR_MAX_BYTES`` / ``DIR_MAX_ENTRIES``).

Before its job is sent, a tracer reports its isolation in a handshake line
(``ready {json}``, written before any candidate code runs); the parent checks
what it can of that claim in ``/proc/<pid>`` (namespaces, no-new-privileges,
the mounts hiding the host's shared directories) and records the result as
``TracerOutcome.isolation``.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import queue
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaxbench.evaluator.common.procs import group_rss_bytes, kill_group

# The end of a tracer's stdout/stderr that the parent keeps (untrusted text).
LOG_TAIL_BYTES = 8192
# What a tracer's private directory may hold (disk use in bytes, entries of any kind); over
# either, the tracer is killed and ``TracerOutcome.dir_exceeded`` says why.
DIR_MAX_BYTES = 2 << 30
DIR_MAX_ENTRIES = 10_000
# How often the directory is measured while the tracer runs (seconds).
DIR_CHECK_S = 0.5
# How much of the start of a tracer's log is searched for its handshake line.
_HANDSHAKE_BYTES = 256 * 1024


@dataclass
class TracerOutcome:
    returncode: int | None
    timed_out: bool
    memory_exceeded: bool
    wall_s: float
    dir: Path
    stderr_tail: str
    # What the tracer reported in its handshake (before any candidate code) and the parent
    # checked in /proc; "unknown (...)" when it never got that far.
    isolation: str = "unknown"
    # Empty, or why the tracer was killed for its private directory (size or entries).
    dir_exceeded: str = ""
    # The kernel-enforced layers that held while candidate code ran ("seccomp+landlock+
    # namespaces", ...; "none"), each claimed in the handshake and checked where /proc can.
    sealed: str = "none"


class Zygote:
    """The pool's end of the fork server (:mod:`jaxbench.evaluator.sandbox.zygote`): a process
    with the tracers' environment that has imported the harness once and forks each tracer.
    Started from the pool's spawner thread (its parent-death signal follows that thread)."""

    def __init__(self, env: dict[str, str], timeout_s: float = 120.0) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [*TRACER_PYTHON, "jaxbench.evaluator.sandbox.zygote",
                 str(theirs.fileno()), str(os.getpid())],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, env=env, cwd=NEUTRAL_CWD)
        finally:
            theirs.close()
        self._sock = ours
        self._timeout_s = timeout_s
        self._replies: queue.Queue[tuple[str, str]] = queue.Queue()
        self._exits: dict[int, int] = {}
        self._alive = True
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True, name="jaxbench-zygote").start()

    def _read(self) -> None:
        while True:
            try:
                message = self._sock.recv(512)
            except OSError:
                message = b""
            if not message:
                break
            word, _, rest = message.decode(errors="replace").partition(" ")
            if word == "exit":
                pid, code = (int(x) for x in rest.split())
                with self._changed:
                    self._exits[pid] = code
                    self._changed.notify_all()
            else:
                self._replies.put((word, rest))
        with self._changed:
            self._alive = False
            self._changed.notify_all()
        self._replies.put(("error", "the fork server exited"))

    def spawn(self, directory: Path, stdin_fd: int, log_fd: int) -> int | None:
        """A new tracer's pid, or None when the server cannot make one."""
        if not self._alive:
            return None
        try:
            self._sock.sendmsg([os.fsencode(directory)], [(
                socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [stdin_fd, log_fd]))])
            word, rest = self._replies.get(timeout=self._timeout_s)
        except (OSError, queue.Empty):
            # A late reply would pair the next request with this one's tracer: the server
            # goes (and its tracers with it); tracers are started as commands from now on.
            self.close()
            return None
        return int(rest) if word == "pid" else None

    def exit_code(self, pid: int, timeout: float | None) -> int | None:
        """A forked tracer's exit status once the server reaped it (None: still running after
        ``timeout``). When the server is gone, so are its tracers (their parent-death signal)."""
        with self._changed:
            self._changed.wait_for(lambda: pid in self._exits or not self._alive, timeout)
            if pid in self._exits:
                return self._exits.pop(pid)
            return None if self._alive else -signal.SIGKILL

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass
        kill_group(self.proc)


class _Forked:
    """A tracer forked by the :class:`Zygote`: the part of ``subprocess.Popen`` the pool uses."""

    def __init__(self, zygote: Zygote, pid: int, stdin: Any) -> None:
        self._zygote, self.pid, self.stdin = zygote, pid, stdin
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.wait(0) if self.returncode is None else self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        if self.returncode is None:
            self.returncode = self._zygote.exit_code(self.pid, timeout)
            if self.returncode is None and timeout:
                raise subprocess.TimeoutExpired(f"tracer {self.pid}", timeout)
        return self.returncode


class _Tracer:
    def __init__(self, env: dict[str, str], root: str | None = None,
                 zygote: Zygote | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="jaxbench-tracer-", dir=root))
        # The parent reads the log back through this handle, never by its path: the tracer
        # can replace what the path names (a link, a FIFO), not the file this handle holds.
        self._log = open(self.dir / "tracer.log", "w+b")  # noqa: SIM115
        self.log_tail = b""
        self.proc: subprocess.Popen | _Forked | None = None
        if zygote is not None:  # forked from the server that imported the harness already
            read_end, write_end = os.pipe()
            try:
                pid = zygote.spawn(self.dir, read_end, self._log.fileno())
            finally:
                os.close(read_end)
            if pid is None:
                os.close(write_end)
            else:
                self.proc = _Forked(zygote, pid, open(write_end, "wb"))  # noqa: SIM115
        if self.proc is None:
            self.proc = subprocess.Popen(
                [*TRACER_PYTHON, "jaxbench.evaluator.sandbox.tracer", str(self.dir)],
                stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT,
                start_new_session=True, env=env, cwd=self.dir,
            )
        self.handshake: bytes | None = None  # the "ready ..." line, newline included
        self._handshake_at = (0, 0)  # its offsets in the log

    def read_handshake(self) -> bool:
        """True once the tracer's handshake line (``ready ...``) is complete in the log. Only
        called before the job is sent: no candidate code has run, so everything in the log
        was written by the harness (start-up warnings may come first)."""
        if self.handshake is None and not self._log.closed:
            head = os.pread(self._log.fileno(), _HANDSHAKE_BYTES, 0)
            start = 0 if head.startswith(b"ready ") else head.find(b"\nready ") + 1
            end = head.find(b"\n", start) if start > 0 or head.startswith(b"ready ") else -1
            if end >= 0:
                self.handshake = head[start:end + 1]
                self._handshake_at = (start, end + 1)
        return self.handshake is not None

    def kill(self) -> None:
        kill_group(self.proc)
        if not self._log.closed:
            fd = self._log.fileno()
            size = os.fstat(fd).st_size
            begin = max(0, size - LOG_TAIL_BYTES)
            # The handshake line is the parent's, not output to show: the tail leaves it out.
            hs_start, hs_end = self._handshake_at
            if begin < hs_end:
                self.log_tail = (os.pread(fd, max(0, hs_start - begin), begin)
                                 + os.pread(fd, max(0, size - hs_end), hs_end))
            else:
                self.log_tail = os.pread(fd, size - begin, begin)
            self._log.close()

    def cleanup(self) -> None:
        remove_tree(self.dir)


def _fmt_bytes(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def _ns_id(pid: int | str, name: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/{name}")
    except OSError:
        return None


def _unescape_mountinfo(field: str) -> str:
    """Mount points in /proc/<pid>/mountinfo escape space, tab, newline and backslash as \\ooo."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def _top_mounts(pid: int) -> dict[str, tuple[str, str]] | None:
    """Mount point -> (filesystem type, per-mount options) of the mount on top at each point
    (the last listed), as process ``pid`` sees them; None when unreadable."""
    try:
        with open(f"/proc/{pid}/mountinfo") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    mounts: dict[str, tuple[str, str]] = {}
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 6 or not tail:
            continue
        mounts[_unescape_mountinfo(fields[4])] = (tail[0], fields[5])
    return mounts


def verify_isolation(pid: int, handshake: bytes | None) -> str:
    """The isolation description for results: what the tracer's handshake line said (written
    before any candidate code ran), with every claim the parent can check in ``/proc/<pid>``
    checked — fresh user, network and mount namespaces, no-new-privileges, a tmpfs on every hidden
    directory. A claim that does not hold is folded into the description."""
    from jaxbench.evaluator.common.procs import seccomp_state

    if handshake is None:
        return "unknown (the tracer sent no handshake)"
    if not handshake.startswith(b"ready "):
        return "unknown (malformed handshake)"
    try:
        claim = json.loads(handshake[len("ready "):].decode())
    except (UnicodeDecodeError, ValueError):
        return "unknown (malformed handshake)"
    if not isinstance(claim, dict) or not isinstance(claim.get("isolation"), str):
        return "unknown (malformed handshake)"
    text = claim["isolation"][:1000]
    namespaces = claim.get("namespaces") if isinstance(claim.get("namespaces"), list) else []
    hidden = claim.get("hidden") if isinstance(claim.get("hidden"), list) else []
    problems: list[str] = []
    for label, name in (("userns", "user"), ("netns", "net"), ("mntns", "mnt")):
        if label in namespaces or label in text:
            theirs = _ns_id(pid, name)
            if theirs is None or theirs == _ns_id("self", name):
                problems.append(f"{label} claimed, but /proc/{pid}/ns/{name} "
                                f"{'is unreadable' if theirs is None else 'is the parent’s'}")
    if claim.get("seccomp") is True:
        state = seccomp_state(pid)
        if state is None or state[0] != 2:
            problems.append("seccomp claimed, but /proc/<pid>/status "
                            + ("is unreadable" if state is None else f"says Seccomp: {state[0]}"))
    if claim.get("no_new_privs") or "no_new_privs" in text:
        try:
            with open(f"/proc/{pid}/status") as f:
                nnp = [ln.split()[-1] for ln in f if ln.startswith("NoNewPrivs:")]
            missing = "has no NoNewPrivs line (gVisor's has none)"
        except OSError:
            nnp, missing = [], "is unreadable"
        if nnp != ["1"]:
            problems.append("no_new_privs claimed, but /proc/<pid>/status "
                            + ("says NoNewPrivs: " + nnp[0] if nnp else missing))
    if hidden:
        mounts = _top_mounts(pid)
        for path in hidden[:64]:
            top = mounts.get(str(path)) if mounts is not None else None
            if top is None or top[0] != "tmpfs":
                problems.append(f"{str(path)[:100]} claimed hidden, but no tmpfs is mounted "
                                "there in /proc/<pid>/mountinfo")
    if problems:
        text += " [parent check failed: " + "; ".join(problems)[:600] + "]"
    return text


def verified_seal(pid: int, handshake: bytes | None) -> str:
    """The layers that seal a tracer, as the result's ``sealed`` records them: ``seccomp``
    (claimed, and ``Seccomp: 2`` in ``/proc/<pid>/status``), ``landlock`` (claimed before any
    candidate code ran), ``namespaces`` (fresh user or network namespace claimed and seen in
    ``/proc/<pid>/ns``); "none" when none holds."""
    from jaxbench.evaluator.common.procs import seccomp_state

    try:
        claim = json.loads(handshake[len("ready "):].decode()) if handshake else None
    except (UnicodeDecodeError, ValueError):
        claim = None
    if not isinstance(claim, dict):
        return "none"
    layers = []
    state = seccomp_state(pid) if claim.get("seccomp") is True else None
    if state is not None and state[0] == 2:  # a debug tracer's lets files be read
        layers.append("seccomp-debug" if claim.get("reads") is True else "seccomp")
    if claim.get("landlock") is True:
        layers.append("landlock")
    namespaces = claim.get("namespaces") if isinstance(claim.get("namespaces"), list) else []
    if any(label in namespaces and _ns_id(pid, name) not in (None, _ns_id("self", name))
           for label, name in (("userns", "user"), ("netns", "net"))):
        layers.append("namespaces")
    return "+".join(layers) or "none"


_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_dir(name: str, dir_fd: int, fix_mode: bool) -> int:
    """An fd for the directory ``name`` in ``dir_fd`` (never through a symlink). With
    ``fix_mode``, one the owner cannot list is made 0o700 first: through an O_PATH handle of
    that very directory, so a swapped-in link cannot redirect the chmod."""
    try:
        return os.open(name, _DIR_OPEN, dir_fd=dir_fd)
    except PermissionError:
        if not fix_mode:
            raise
    handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    try:
        os.chmod(f"/proc/self/fd/{handle}", 0o700)
        return os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    finally:
        os.close(handle)


def _walk_tree(path: str | os.PathLike[str], remove: bool, max_entries: int | None = None
               ) -> tuple[int, int]:
    """(bytes on disk, entries) beneath ``path`` (itself included), iteratively: one directory
    fd open at a time, ``..`` checked against the directory it came from, links never
    followed, any depth. With ``remove``, everything is deleted on the way (directories made
    listable first). A counting walk stops once it has seen more than ``max_entries``.
    Raises OSError only when ``path``'s parent cannot be opened."""
    top = os.path.abspath(os.fspath(path))
    parent, name = os.path.split(top)
    fd = os.open(parent or "/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    seen: set[tuple[int, int]] = set()
    total = entries = 0

    def count(st: os.stat_result) -> None:
        nonlocal total, entries
        entries += 1
        if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):  # hard links: once per file
            if (st.st_dev, st.st_ino) in seen:
                return
            seen.add((st.st_dev, st.st_ino))
        total += st.st_blocks * 512

    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        os.close(fd)
        return 0, 0
    count(st)
    if not stat.S_ISDIR(st.st_mode):
        if remove:
            try:
                os.unlink(name, dir_fd=fd)
            except OSError:
                pass
        os.close(fd)
        return total, entries
    own = os.fstat(fd)
    # one level per open directory: (its name in the level above, its identity, subdirectories
    # still to visit)
    levels: list[tuple[str, tuple[int, int], list[str]]] = [("", (own.st_dev, own.st_ino), [name])]
    try:
        while levels:
            if max_entries is not None and entries > max_entries:
                break
            pending = levels[-1][2]
            if pending:
                child = pending.pop()
                try:
                    cfd = _open_dir(child, fd, fix_mode=True)
                except OSError:
                    if remove:  # no longer a directory (or not openable): drop it as a file
                        try:
                            os.unlink(child, dir_fd=fd)
                        except OSError:
                            pass
                    continue
                cst = os.fstat(cfd)
                subdirs: list[str] = []
                try:
                    with os.scandir(cfd) as it:
                        for entry in it:
                            try:
                                est = entry.stat(follow_symlinks=False)
                            except OSError:
                                continue
                            count(est)
                            if stat.S_ISDIR(est.st_mode):
                                subdirs.append(entry.name)
                            elif remove:
                                try:
                                    os.unlink(entry.name, dir_fd=cfd)
                                except OSError:
                                    pass
                            if max_entries is not None and entries > max_entries:
                                break
                except OSError:
                    pass
                os.close(fd)
                fd = cfd
                levels.append((child, (cst.st_dev, cst.st_ino), subdirs))
                continue
            if len(levels) == 1:
                break
            up = os.open("..", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
            ust = os.fstat(up)
            os.close(fd)
            fd = up
            if (ust.st_dev, ust.st_ino) != levels[-2][1]:
                break  # the tree was moved while walking it: stop rather than go astray
            done = levels.pop()[0]
            if remove:
                try:
                    os.rmdir(done, dir_fd=fd)
                except OSError:
                    pass
    finally:
        os.close(fd)
    return total, entries


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Deletes ``path`` and everything beneath it; never raises and never recurses (a chain of
    100,000 nested directories is fine; links are removed, never followed; directories the
    owner cannot list or write are made 0o700 first). What cannot be removed is left."""
    for _ in range(2):  # a second pass for what a directory's own permissions kept back
        try:
            _walk_tree(path, remove=True)
        except Exception:  # noqa: BLE001 - never raises, by contract
            pass
        if not os.path.lexists(path):
            return


def dir_usage(path: str | os.PathLike[str], max_entries: int | None = None) -> tuple[int, int]:
    """(bytes on disk, entries) of a directory tree, without following links; stops counting
    once past ``max_entries``. (0, 0) when it cannot be read."""
    try:
        return _walk_tree(path, remove=False, max_entries=max_entries)
    except OSError:
        return 0, 0


def _dir_over(path: Path, max_bytes: int, max_entries: int) -> str:
    """Empty, or why a tracer's directory is over its limits (the message for results)."""
    used, entries = dir_usage(path, max_entries)
    if entries > max_entries:
        return (f"its private directory held more than the limit of {max_entries:,} entries "
                f"(files and directories)")
    if used > max_bytes:
        return (f"its private directory held {_fmt_bytes(used)}, over the limit of "
                f"{_fmt_bytes(max_bytes)} on disk")
    return ""


# How tracers and their fork server start: ``-P`` keeps the working directory (``python -m``
# would put it first on ``sys.path``) off their path; they start in a directory of nothing, so
# no relative path names the host's files either (issue 46: a tracer started from a repository
# root read ``runs/*/.secret``, where runs then kept their secret). What they may read is the
# installation (``isolation.python_read_roots``), never a ``sys.path`` entry outside it.
TRACER_PYTHON = (sys.executable, "-P", "-m")
NEUTRAL_CWD = "/"

# Variables a tracer keeps from the parent's environment (everything else, API keys included,
# stays behind).
_TRACER_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONPATH", "VIRTUAL_ENV",
               "TF_CPP_MIN_LOG_LEVEL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
               # the host profile (sandbox/seal.py): set by whoever starts the evaluator
               "JAXBENCH_HOST_PROFILE")
# Kernel libraries that are not installed, which tracers may read (sandbox/isolation.py
# library_roots): passed on without the working directory or any directory holding it.
LIBRARY_PATH = "JAXBENCH_TRACER_LIBRARY_PATH"


# The XLA flag for processes that only check on the host CPU (the tracers always; the trusted
# runner and the parent where JAX_PLATFORMS=cpu): compiling dominates there (input generators,
# interpret-mode modules, truths, interpreters: each compiled, then run once on small inputs),
# so LLVM's optimizations cost more than they save (measured: about a third less CPU per
# evaluation, docs/measurements.md). Numerics stay IEEE (no fast-math); never set where a
# device computes or anything is timed.
CPU_CHECK_XLA_FLAGS = "--xla_backend_optimization_level=0"


def with_cpu_check_flags(env: dict[str, str] | os._Environ[str]) -> None:
    """Adds :data:`CPU_CHECK_XLA_FLAGS` to ``env``'s XLA_FLAGS unless an optimization level
    is set there already (the user's choice stands)."""
    flags = env.get("XLA_FLAGS", "")
    if "--xla_backend_optimization_level" not in flags:
        env["XLA_FLAGS"] = f"{flags} {CPU_CHECK_XLA_FLAGS}".strip()


def tracer_env() -> dict[str, str]:
    """The untrusted side's environment: minimal, CPU only, no caches shared with the harness."""
    env = {k: v for k, v in os.environ.items() if k in _TRACER_ENV}
    if "PYTHONPATH" in env:
        # absolute, as tracers start in NEUTRAL_CWD; an empty entry (the working directory)
        # is dropped
        entries = [os.path.abspath(e) for e in env["PYTHONPATH"].split(os.pathsep) if e]
        env["PYTHONPATH"] = os.pathsep.join(entries)
    here = os.path.realpath(os.getcwd())
    libraries = [os.path.realpath(e) for e in os.environ.get(LIBRARY_PATH, "").split(os.pathsep)
                 if e and os.path.isabs(e)]
    libraries = [e for e in libraries if not (here == e or here.startswith(e.rstrip("/") + "/"))]
    if libraries:
        env[LIBRARY_PATH] = os.pathsep.join(libraries)
    env.update(JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="", TPU_VISIBLE_CHIPS="",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONDONTWRITEBYTECODE="1", JAX_ENABLE_COMPILATION_CACHE="false",
               # it compiles only for the host CPU, for checks (CPU_CHECK_XLA_FLAGS above)
               XLA_FLAGS=CPU_CHECK_XLA_FLAGS,
               TF_CPP_MIN_LOG_LEVEL=env.get("TF_CPP_MIN_LOG_LEVEL", "3"))
    return env


def runner_env(device_owner: bool = False) -> dict[str, str]:
    """The trusted runner's environment; a device owner's keeps XLA's flags as the user set
    them (the CPU checks' flags would change how the chip's modules are compiled)."""
    env = dict(os.environ)
    if env.get("JAX_PLATFORMS") == "cpu" and not device_owner:  # it can only check on the CPU
        with_cpu_check_flags(env)
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


class TracerPool:
    """Hands out fresh tracer processes; keeps ``spares`` of them warmed up in advance."""

    def __init__(self, spares: int = 1, root: str | os.PathLike[str] | None = None,
                 debug: bool = False) -> None:
        self._env = tracer_env()
        if debug:  # tracers for debug runs: their seal lets files be read (sandbox/tracer.py)
            self._env["JAXBENCH_TRACER_DEBUG"] = "1"
        self._root = str(root) if root is not None else None
        self._spares: queue.Queue[_Tracer] = queue.Queue()
        self._want = spares
        self._lock = threading.Lock()
        self._closed = False
        # Tracers die with the *thread* that started them (their parent-death signal), so all
        # of them are started from one thread that lives as long as the pool.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jaxbench-spawner")
        self._zygote: Zygote | None = None
        if os.environ.get("JAXBENCH_FORK_SERVER", "1") != "0":
            try:
                self._zygote = self._spawner.submit(Zygote, self._env).result()
            except OSError:  # no Unix sockets here: each tracer starts as a command
                self._zygote = None
        # Spares start on the spawner's thread without holding up the caller: the first one
        # waits for the fork server's preload (seconds), while the caller goes on (the trusted
        # runner starts, the first candidate is checked) and takes it when it needs it.
        for _ in range(spares):
            self._fill()

    def _spawn(self) -> _Tracer:
        return self._spawner.submit(_Tracer, self._env, self._root, self._zygote).result()

    def _fill(self) -> None:
        """Starts one spare on the spawner's thread, without waiting for it."""

        def make() -> None:
            tracer = _Tracer(self._env, self._root, self._zygote)
            with self._lock:
                closed = self._closed
                if not closed:
                    self._spares.put(tracer)
            if closed:  # the pool closed while it started
                tracer.kill()
                tracer.cleanup()

        self._spawner.submit(make)

    def settle(self) -> None:
        """Returns once every spare asked for so far has started (or failed to)."""
        with contextlib.suppress(RuntimeError):  # the spawner is shut down: none will start
            self._spawner.submit(lambda: None).result()

    def _take(self) -> _Tracer:
        try:
            tracer = self._spares.get_nowait()
        except queue.Empty:
            self.settle()  # a spare on its way is taken rather than another started
            try:
                tracer = self._spares.get_nowait()
            except queue.Empty:
                tracer = self._spawn()
        if tracer.proc.poll() is not None:  # a spare that died while waiting
            tracer.kill()
            tracer.cleanup()
            tracer = self._spawn()
        with self._lock:
            refill = not self._closed and self._want > 0
        if refill:  # the next spare starts while this one works
            self._fill()
        return tracer

    def run(self, job: dict[str, Any], timeout_s: float, memory_bytes: int | None, *,
            dir_bytes: int | None = None, dir_entries: int | None = None) -> TracerOutcome:
        """Runs one job in a fresh tracer; the caller reads and then removes ``outcome.dir``
        (with ``remove_tree``). The tracer is killed past ``timeout_s``, past ``memory_bytes``
        of resident memory, or when its directory holds more than ``dir_bytes`` on disk or
        ``dir_entries`` entries (default ``DIR_MAX_BYTES`` / ``DIR_MAX_ENTRIES``)."""
        dir_bytes = DIR_MAX_BYTES if dir_bytes is None else dir_bytes
        dir_entries = DIR_MAX_ENTRIES if dir_entries is None else dir_entries
        tracer = self._take()
        started = time.monotonic()
        timed_out = memory_exceeded = False
        dir_exceeded = ""
        # The handshake first: the job (and with it the candidate) goes only to a tracer that
        # is ready, and its isolation is read and checked before any candidate code runs.
        isolation, sealed = "unknown (the tracer sent no handshake)", "none"
        while not tracer.read_handshake() and tracer.proc.poll() is None:
            if time.monotonic() - started > timeout_s:
                break
            time.sleep(0.02)
        if tracer.handshake is not None:
            isolation = verify_isolation(tracer.proc.pid, tracer.handshake)
            sealed = verified_seal(tracer.proc.pid, tracer.handshake)
            try:
                assert tracer.proc.stdin is not None
                tracer.proc.stdin.write(json.dumps(job).encode())
                tracer.proc.stdin.close()
            except BrokenPipeError:
                pass
        checked = 0.0
        while True:
            try:
                tracer.proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if now - started > timeout_s:
                timed_out = True
                break
            if memory_bytes and group_rss_bytes(tracer.proc.pid) > memory_bytes:
                memory_exceeded = True
                break
            if now - checked >= DIR_CHECK_S:
                checked = now
                dir_exceeded = _dir_over(tracer.dir, dir_bytes, dir_entries)
                if dir_exceeded:
                    break
        tracer.kill()  # always: nothing the candidate started may outlive the evaluation
        if not (timed_out or memory_exceeded or dir_exceeded):  # what it left at the end
            dir_exceeded = _dir_over(tracer.dir, dir_bytes, dir_entries)
        tail = tracer.log_tail.decode(errors="replace")
        return TracerOutcome(tracer.proc.returncode, timed_out, memory_exceeded,
                             time.monotonic() - started, tracer.dir, tail, isolation=isolation,
                             dir_exceeded=dir_exceeded, sealed=sealed)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._spawner.shutdown(wait=False, cancel_futures=True)  # no spare starts after this
        if self._zygote is not None:
            self._zygote.close()  # (a spare starting now fails at once)
        self._spawner.shutdown(wait=True)  # one that was starting has ended
        while True:
            try:
                tracer = self._spares.get_nowait()
            except queue.Empty:
                break
            tracer.kill()
            tracer.cleanup()

    def __enter__(self) -> TracerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def early_tracers(spares: int = 0) -> TracerPool:
    """The tracers' pool, started by a command before it imports JAX (this module imports
    none): the fork server's own imports and preload (4-5 s on a TPU host under gVisor) then
    run beside the command's, instead of after them. Hand it to the
    :class:`~jaxbench.evaluator.Evaluator` (``tracers=``)."""
    from jaxbench.backends.host import keep_off_accelerators

    keep_off_accelerators()  # the fork server and the tracers see only the CPU
    return TracerPool(spares=spares)
