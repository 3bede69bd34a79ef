"""A held chip: the chip's owner kept between commands (``jaxbench hold``).

A command that evaluates on the chip opens it once (its probe is the chip's first owner,
:mod:`jaxbench.evaluator.parent.first_owner`) and, on its way out, stops that owner. On a
sandboxed host both are slow: a process opening a TPU v5e under gVisor spends about 10 s there,
and a killed chip holder takes about 4 s to be reaped, so one ``jaxbench eval`` spent 20-26 s
for a 6-13 s evaluation. ``jaxbench hold`` pays them once for many commands: it starts the
chip's owner as the first owner does (the probe's line says what it opened) and serves it to
the commands that follow over a Unix socket (:class:`HeldChip`), until it has been idle for its
``--idle`` seconds, is told to stop (``jaxbench hold --stop``) or is interrupted; then it stops
the owner and the chip is free again. The owner keeps what it compiled for the task programs
(reference, truth, input drawing) between commands, as it does between a run's candidates.

Who may use it:

- the socket lives in a directory of this user's alone (:func:`socket_path`: owned by the user,
  no access for anyone else; a directory or socket that is not is refused, never used), and the
  server and the client each check the other end's user (``SO_PEERCRED``): another user can
  neither submit work to the chip nor pose as its owner and hand back verdicts;
- candidates cannot reach it: their tracers may make, bind or connect no socket at all (their
  seccomp seal, :mod:`jaxbench.evaluator.sandbox.seal`), and on a host without Landlock that
  seal is what holds; the owner runs only their exported modules, as it always did;
- a command uses a held chip only where its own owner would have been started exactly as the
  held one was (:func:`fingerprint`: the owner's environment, the Python, jaxbench's source);
  otherwise it stops with a one-line error that says how to stop the held chip, since the chip
  admits one process.

The protocol is JSON lines: ``{"op": "hello"}`` (the probe's line and the fingerprint),
``{"op": "run", "rid", "payload", "timeout_s"}`` (answered ``{"rid", "outcome"}``, a
:class:`~jaxbench.evaluator.parent.judge_client.RunnerOutcome`), ``{"op": "prepare", ...}``
(no answer), ``{"op": "status"}`` and ``{"op": "stop"}``. On the command's side
:class:`HeldOwners` is :class:`~jaxbench.evaluator.parent.judge_client.ChipOwners`' face over
that socket: the held chip's ``ChipOwners`` does the waiting, the timeouts and the restarts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import queue
import socket
import stat
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

from jaxbench.evaluator.common.procs import make_non_dumpable
from jaxbench.evaluator.parent import first_owner
from jaxbench.evaluator.parent.judge_client import (
    RUNNER_COMMAND,
    ChipOwners,
    RunnerOutcome,
    chip_owner_env,
)

DIR_ENV = "JAXBENCH_HOLD_DIR"  # where the socket lives (default: a directory of the user's)
DEFAULT_IDLE_S = 600.0
# The owner's environment variables that make its verdicts what they are (compared between the
# held chip and a command that would use it).
_SETTING_PREFIXES = ("JAX", "XLA", "LIBTPU", "TPU_", "TF_", "CUDA", "NVIDIA", "PYTHONPATH")
_NOT_SETTINGS = {DIR_ENV, "JAXBENCH_RUNNER_OWNER"}
_LOCK = threading.Lock()
_TAKEN: dict[str, HeldOwners | None] = {"client": None}


class HoldError(RuntimeError):
    """A held chip that cannot be used or started, with a one-line reason that says what to do."""


def socket_path() -> Path:
    """The held chip's socket: ``$JAXBENCH_HOLD_DIR/chip.sock``, else under
    ``$XDG_RUNTIME_DIR/jaxbench`` or ``/tmp/jaxbench-<uid>``."""
    base = os.environ.get(DIR_ENV)
    if not base:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        base = os.path.join(runtime, "jaxbench") if runtime and os.path.isdir(runtime) \
            else f"/tmp/jaxbench-{os.getuid()}"
    return Path(base) / "chip.sock"


def _private_dir(path: Path, make: bool) -> None:
    """Checks (and with ``make`` creates) the socket's directory: this user's, no access for
    anyone else, not a link."""
    if make:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path.parent)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise HoldError(f"{path.parent} is not a directory of this user's alone (mode 700): "
                        f"remove it, or set {DIR_ENV} to one that is")


def _peer_uid(sock: socket.socket) -> int:
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[2]


def fingerprint(env: dict[str, str]) -> dict[str, Any]:
    """What makes an owner's verdicts what they are: its environment's settings (JAX, XLA,
    libtpu, CUDA, jaxbench's own), the Python it runs and a hash of jaxbench's source."""
    root = Path(__file__).resolve().parents[2]  # the jaxbench package
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    settings = {k: v for k, v in env.items()
                if k.startswith(_SETTING_PREFIXES) or k.startswith("JAXBENCH_")}
    return {"env": {k: v for k, v in sorted(settings.items()) if k not in _NOT_SETTINGS},
            "python": sys.executable, "source": digest.hexdigest()}


def _differs(held: dict[str, Any], mine: dict[str, Any]) -> list[str]:
    names = [k for k in ("python", "source") if held.get(k) != mine[k]]
    theirs, ours = held.get("env", {}), mine["env"]
    return names + sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))


class _Lines:
    """JSON lines over a connected socket: one writer at a time, one reader."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._reader = sock.makefile("rb")
        self._write = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        with self._write:
            self.sock.sendall(data)

    def read(self) -> dict[str, Any] | None:
        try:
            line = self._reader.readline()
        except OSError:
            return None
        if not line:
            return None
        message = json.loads(line)
        return message if isinstance(message, dict) else None

    def close(self) -> None:
        """Ends the connection; a thread blocked reading it sees its end (then the reader's
        buffer can be closed: closing it first would wait for that thread)."""
        for close in (lambda: self.sock.shutdown(socket.SHUT_RDWR), self.sock.close,
                      self._reader.close):
            try:
                close()
            except OSError:
                pass


def _connect(path: Path, timeout_s: float = 10.0) -> _Lines:
    """A connection to the held chip at ``path`` (its directory and its server checked); a
    held chip that does not answer within ``timeout_s`` raises TimeoutError."""
    info = os.lstat(path)  # no socket: FileNotFoundError, nobody holds the chip
    _private_dir(path, make=False)
    if info.st_uid != os.getuid() or not stat.S_ISSOCK(info.st_mode):
        raise HoldError(f"{path} is not a socket of this user's: remove it")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout_s)
        sock.connect(str(path))
        if _peer_uid(sock) != os.getuid():
            raise HoldError(f"the process behind {path} is another user's: remove the socket")
    except BaseException:
        sock.close()
        raise
    return _Lines(sock)


def _exchange(lines: _Lines, message: dict[str, Any]) -> dict[str, Any]:
    lines.send(message)
    answer = lines.read()
    if answer is None:
        raise HoldError("the held chip closed the connection without an answer")
    return answer


def _one(op: str, path: Path | None) -> dict[str, Any] | None:
    """The held chip's answer to one ``op``, or None where no chip is held (no socket, or nobody
    behind it)."""
    try:
        lines = _connect(path or socket_path())
    except (TimeoutError, FileNotFoundError, ConnectionRefusedError):
        return None
    try:
        return _exchange(lines, {"op": op})
    finally:
        lines.close()


def held_status(path: Path | None = None) -> dict[str, Any] | None:
    """The held chip's status (pid, what it holds, since when, requests served), or None where
    no chip is held."""
    return _one("status", path)


def stop_held(path: Path | None = None) -> dict[str, Any] | None:
    """Tells the held chip to stop its owner and exit; its status before, or None where no chip
    is held."""
    return _one("stop", path)


def ask(depth: int, env: dict[str, str] | None = None,
        path: Path | None = None) -> dict[str, Any] | None:
    """The probe's line from a held chip, which this process's owners then use (:func:`take`);
    None where no chip is held. A held chip started otherwise than this process would start its
    owner (``depth`` requests at once, ``env``) answers ``{"error": ...}`` naming the difference."""
    path = path or socket_path()
    try:
        lines = _connect(path)
    except (TimeoutError, FileNotFoundError, ConnectionRefusedError):
        return None  # no socket, or a stale one: nobody holds the chip
    except (HoldError, OSError) as exc:
        return {"error": f"a held chip's socket ({path}) cannot be used: {exc}"}
    try:
        hello = _exchange(lines, {"op": "hello"})
        mine = fingerprint(chip_owner_env(0, 1, max(1, depth), env))
        differs = _differs(hello.get("fingerprint", {}), mine)
    except (HoldError, OSError, ValueError) as exc:  # ValueError: not JSON, not UTF-8
        lines.close()
        return {"error": f"the held chip at {path} did not answer: {exc or 'timed out'}"}
    if differs:
        lines.close()
        return {"error": f"the chip is held by `jaxbench hold` (pid {hello.get('pid')}), "
                         f"started with other settings ({', '.join(differs[:4])} differ): stop "
                         "it with `jaxbench hold --stop`, or run this command as it was run"}
    lines.sock.settimeout(None)  # a request may take its whole timeout and the chip's queue
    client = HeldOwners(lines, hello)
    with _LOCK:
        old, _TAKEN["client"] = _TAKEN["client"], client
    if old is not None:
        old.close()
    return dict(hello["probe"])


def take() -> HeldOwners | None:
    """The held chip's owners that :func:`ask` connected to, once; None where it found none."""
    with _LOCK:
        client, _TAKEN["client"] = _TAKEN["client"], None
    return client


def release() -> None:
    """Closes a connection nobody took (the held chip itself goes on)."""
    client = take()
    if client is not None:
        client.close()


class HeldOwners:
    """:class:`~jaxbench.evaluator.parent.judge_client.ChipOwners`' face (``run``, ``prepare``,
    ``prestart``, ``close``) for a held chip: each request goes over the socket to the held
    chip's own owners. A held chip that goes away ends the requests in flight without a
    response (the trusted runner died), as an owner's death does."""

    def __init__(self, lines: _Lines, hello: dict[str, Any]) -> None:
        self._lines = lines
        self.pid = hello.get("pid")
        self.depth = int(hello.get("depth", 1))
        self._lock = threading.Lock()
        self._answers: dict[int, queue.Queue[dict[str, Any] | None]] = {}
        self._next = 0
        self._gone = False
        threading.Thread(target=self._read_all, daemon=True, name="jaxbench-held-reader").start()

    def _read_all(self) -> None:
        while True:
            try:
                message = self._lines.read()
            except ValueError:  # not JSON, not UTF-8
                message = None
            if message is None:
                break
            waiting = self._answers.get(message.get("rid"))
            if waiting is not None:
                waiting.put(message.get("outcome"))
        with self._lock:
            self._gone = True
            for waiting in self._answers.values():
                waiting.put(None)

    def run(self, payload: dict[str, Any], timeout_s: float) -> RunnerOutcome:
        answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        with self._lock:
            self._next += 1
            rid = self._next
            self._answers[rid] = answers
            gone = self._gone
        try:
            if not gone:
                try:
                    self._lines.send({"op": "run", "rid": rid, "payload": payload,
                                      "timeout_s": timeout_s})
                except OSError:
                    gone = True
            outcome = None if gone else answers.get()
        finally:
            with self._lock:
                self._answers.pop(rid, None)
        if not isinstance(outcome, dict):
            return RunnerOutcome(None, log_tail=f"the held chip (jaxbench hold, pid {self.pid}) "
                                                "went away during the request")
        fields = {f.name for f in dataclasses.fields(RunnerOutcome)}
        return RunnerOutcome(**{k: v for k, v in outcome.items() if k in fields})

    def prepare(self, payload: dict[str, Any], timeout_s: float) -> None:
        try:
            self._lines.send({"op": "prepare", "payload": payload, "timeout_s": timeout_s})
        except OSError:
            pass  # the request that follows says so

    def prestart(self) -> None:
        """Nothing to start: the held chip's owner is running (or restarted there)."""

    def close(self) -> None:
        self._lines.close()


class HeldChip:
    """The server of ``jaxbench hold``: the chip's owners (one chip, ``depth`` requests at
    once) served to this user's commands over :func:`socket_path`'s socket."""

    def __init__(self, idle_s: float = DEFAULT_IDLE_S, depth: int = 1,
                 command: tuple[str, ...] = RUNNER_COMMAND, env: dict[str, str] | None = None,
                 path: Path | None = None) -> None:
        self.path = path or socket_path()
        self.idle_s = idle_s
        self.depth = max(1, depth)
        self._command, self._env = command, env
        self.probe: dict[str, Any] = {}
        self.owners: ChipOwners | None = None
        self._server: socket.socket | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._clients = 0
        self._in_flight = 0
        self._served = 0
        self._accepted = 0  # connections ever taken (a refused one of another user's is not)
        self._since = time.time()
        self._last = time.monotonic()

    def start(self) -> dict[str, Any]:
        """Binds the socket and opens the chip (its first owner); the probe's line. Raises
        :class:`HoldError` where a chip is held already or no accelerator answers."""
        make_non_dumpable()  # requests carry trial keys: no ptrace, no /proc reads of this one
        _private_dir(self.path, make=True)
        if held_status(self.path) is not None:
            raise HoldError(f"the chip is held already (see `jaxbench hold --status`; socket "
                            f"{self.path})")
        self.path.unlink(missing_ok=True)  # a stale socket: its server is gone
        said = first_owner.ask(self.depth, command=self._command, env=self._env)
        if "error" in said or said.get("platform") == "cpu":
            first_owner.release()
            raise HoldError("no accelerator to hold here: " + str(said.get("error") or "only the "
                            "CPU (jaxbench hold keeps a TPU's or GPU's owner between commands)"))
        if int(said.get("count", 1)) > 1:  # one owner per chip: the commands start their own
            first_owner.release()
            raise HoldError(f"this host has {said['count']} chips: jaxbench hold keeps the owner "
                            "of a one-chip host; here each command starts one owner per chip")
        env = chip_owner_env(0, 1, self.depth, self._env)
        self.owners = ChipOwners(1, command=self._command, env=self._env, depth=self.depth,
                                 adopt=first_owner.take)
        self._fingerprint = fingerprint(env)
        self.probe = said
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            server.bind(str(self.path))
        finally:
            os.umask(old)
        server.listen(16)
        server.settimeout(0.5)
        self._server = server
        self._since, self._last = time.time(), time.monotonic()
        return said

    def serve(self) -> str:
        """Serves until stopped or idle; then stops the owner (the chip is free) and removes the
        socket. Why it stopped."""
        assert self._server is not None, "start() first"
        why = "stopped"
        try:
            while not self._stopping.is_set():
                if self._idle():
                    why = f"idle for {self.idle_s:g} s"
                    break
                try:
                    conn, _ = self._server.accept()
                except (TimeoutError, BlockingIOError):
                    continue
                if _peer_uid(conn) != os.getuid():
                    conn.close()
                    continue
                conn.settimeout(None)
                with self._lock:
                    self._clients += 1
                    self._accepted += 1
                threading.Thread(target=self._client, args=(_Lines(conn),), daemon=True,
                                 name="jaxbench-held-client").start()
        finally:
            self.close()
        return why

    def _idle(self) -> bool:
        with self._lock:
            busy = self._clients or self._in_flight
            return not busy and time.monotonic() - self._last > self.idle_s

    def _client(self, lines: _Lines) -> None:
        try:
            while True:
                try:
                    message = lines.read()
                except ValueError:  # not JSON, not UTF-8
                    break
                if message is None or not self._answer(lines, message):
                    break
        finally:
            lines.close()
            with self._lock:
                self._clients -= 1
                self._last = time.monotonic()

    def _answer(self, lines: _Lines, message: dict[str, Any]) -> bool:
        """Answers one message; False where the connection should end."""
        op = message.get("op")
        if op == "hello":
            lines.send({"probe": self.probe, "fingerprint": self._fingerprint,
                        "pid": os.getpid(), "depth": self.depth})
        elif op == "status":
            lines.send(self.status())
        elif op == "stop":
            lines.send(self.status())
            self._stopping.set()
            return False
        elif op in ("run", "prepare") and isinstance(message.get("payload"), dict):
            with self._lock:
                self._in_flight += 1
            threading.Thread(target=self._request, args=(lines, message), daemon=True,
                             name="jaxbench-held-request").start()
        else:
            return False
        return True

    def _request(self, lines: _Lines, message: dict[str, Any]) -> None:
        assert self.owners is not None
        try:
            timeout_s = float(message.get("timeout_s", 600))
            if message["op"] == "prepare":
                self.owners.prepare(message["payload"], timeout_s)
                return
            outcome = self.owners.run(message["payload"], timeout_s)
            try:
                lines.send({"rid": message.get("rid"), "outcome": dataclasses.asdict(outcome)})
            except OSError:
                pass  # the command went away
        finally:
            with self._lock:
                self._in_flight -= 1
                self._served += message["op"] == "run"
                self._last = time.monotonic()

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {"pid": os.getpid(), "probe": self.probe, "since": self._since,
                    "served": self._served, "in_flight": self._in_flight,
                    "clients": self._clients, "accepted": self._accepted,
                    "idle_s": self.idle_s, "depth": self.depth, "socket": str(self.path)}

    def stop(self) -> None:
        self._stopping.set()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
            self.path.unlink(missing_ok=True)
        if self.owners is not None:
            self.owners.close()
            self.owners = None
        first_owner.release()


__all__ = ["DEFAULT_IDLE_S", "DIR_ENV", "HeldChip", "HeldOwners", "HoldError", "ask",
           "fingerprint", "held_status", "release", "socket_path", "stop_held", "take"]
