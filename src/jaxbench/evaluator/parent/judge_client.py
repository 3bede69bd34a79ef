"""The parent's handle on warm trusted runners (:mod:`jaxbench.evaluator.judge.runner`).

A runner never runs candidate Python, so it may be reused; it does run modules
built from candidate kernels, so each request has a wall-clock limit and a
resident-memory watchdog, and a runner that times out, exceeds its memory or
dies is killed (process group) and replaced.
"""

from __future__ import annotations

import json
import os
import queue
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from jaxbench.contract import (
    RAN,
    RULES,
    STATUSES,
    JudgeResponse,
    RecordError,
    Rule,
    Stage,
    StageFailure,
    Status,
)
from jaxbench.evaluator.common.lease import EXCLUSIVE, OWNER_DEPTH, SHARED, DeviceLease
from jaxbench.evaluator.common.procs import group_rss_bytes, kill_group
from jaxbench.evaluator.parent.pool import runner_env


@dataclass
class RunnerOutcome:
    response: dict[str, Any] | None
    timed_out: bool = False
    memory_exceeded: bool = False
    returncode: int | None = None
    log_tail: str = ""
    # spans the parent measured around the request: waiting for the runner (on a device, for
    # the chip's owner to be free) and starting it (process start, imports, chip open)
    waited_s: float = 0.0
    start_s: float = 0.0
    # a chip's owner serving several requests was killed for another one's timeout: this one
    # did nothing wrong and is sent again
    innocent: bool = False


RUNNER_COMMAND = (sys.executable, "-m", "jaxbench.evaluator.judge.runner")


class Runner:
    def __init__(self, env: dict[str, str], command: tuple[str, ...] = RUNNER_COMMAND) -> None:
        self._log_path = Path(tempfile.mkstemp(prefix="jaxbench-runner-", suffix=".log")[1])
        self._log = open(self._log_path, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            start_new_session=True, env={**env, "JAXBENCH_RUNNER_OWNER": str(os.getpid())})
        self._buffer = b""
        self.ready = False
        self.info: dict[str, Any] = {}  # what the runner said it holds (its ready line)

    def _read_line(self, deadline: float, memory_bytes: int | None) -> tuple[bytes | None, str]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            now = time.monotonic()
            if now > deadline:
                return None, "timed out"
            if memory_bytes and group_rss_bytes(self.proc.pid) > memory_bytes:
                return None, "memory"
            readable, _, _ = select.select([fd], [], [], min(0.2, deadline - now))
            if readable:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return None, "eof"
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line, ""

    def first_line(self, timeout_s: float) -> tuple[bytes | None, str]:
        """The runner's first line (a first owner's probe line, before its ready line); or None
        and why, from its log, after which it is killed."""
        line, why = self._read_line(time.monotonic() + timeout_s, None)
        if line is None:
            tail = self._failed(why).log_tail.strip()
            self.kill()  # and its log gone, whichever kind of runner it is
            return None, tail or why
        return line, ""

    def request(self, payload: dict[str, Any], timeout_s: float,
                memory_bytes: int | None, lease: DeviceLease | None = None) -> RunnerOutcome:
        """One request's response. With ``lease`` (device mode), the device lease is held on
        the runner's behalf: shared from the start, and as the runner asks (exclusive while it
        times); time spent waiting for the lease does not count towards ``timeout_s``."""
        started = time.monotonic()
        if not self.ready:  # start-up is not the candidate's time, but bound it too
            line, why = self._read_line(time.monotonic() + 300, None)
            if line is None:
                return self._failed(why)
            self.ready = True
            if line.startswith(b"ready {"):
                self.info = json.loads(line[len(b"ready "):])
        start_s = time.monotonic() - started
        held: str | None = None
        if lease is not None:
            lease.acquire(SHARED)
            held = SHARED
        deadline = time.monotonic() + timeout_s
        try:
            self._send({**payload, "lease": lease is not None})
            while True:
                line, why = self._read_line(deadline, memory_bytes)
                if line is None:
                    return self._failed(why)
                message = json.loads(line)
                if not (isinstance(message, dict) and "lease" in message):
                    return RunnerOutcome(message, start_s=start_s)
                # The runner moves between compiling (shared) and timing (exclusive).
                wanted = message["lease"]
                if wanted not in (SHARED, EXCLUSIVE):
                    return self._failed("eof")
                if lease is not None and wanted != held:
                    waiting = time.monotonic()
                    if held is not None:
                        lease.release(held)
                        held = None
                    lease.acquire(wanted)
                    held = wanted
                    deadline += time.monotonic() - waiting
                self._send("go")
        except (BrokenPipeError, OSError, json.JSONDecodeError):
            return self._failed("eof")
        finally:
            if held is not None:
                lease.release(held)  # type: ignore[union-attr]

    def _send(self, message: dict[str, Any] | str) -> None:
        assert self.proc.stdin is not None
        text = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write((text + "\n").encode())
        self.proc.stdin.flush()

    def _failed(self, why: str) -> RunnerOutcome:
        if not self._log.closed:  # killed meanwhile (the owners' close)
            self._log.flush()
        tail = self._log_path.read_bytes()[-3000:].decode(errors="replace") \
            if self._log_path.exists() else ""
        self.kill()
        return RunnerOutcome(None, timed_out=why == "timed out", memory_exceeded=why == "memory",
                             returncode=self.proc.returncode, log_tail=tail)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        kill_group(self.proc)
        self._log.close()
        self._log_path.unlink(missing_ok=True)


class SharedRunner(Runner):
    """A chip's owner that takes several requests at once (the runner's
    ``serve_concurrently``): every line carries its request's id, and a reader thread hands
    each answer to the request waiting for it. The runner holds its chip lease itself; the
    time a request waits for the chip (``chip_wait_s`` lines) does not count towards its
    timeout. A request that times out kills the process: the requests beside it end with
    ``innocent`` set (the caller sends them again to a fresh owner)."""

    def __init__(self, env: dict[str, str], command: tuple[str, ...] = RUNNER_COMMAND) -> None:
        super().__init__(env, command)
        self._lock = threading.Lock()
        self._starting = threading.Lock()
        self._answers: dict[int, queue.Queue[dict[str, Any] | None]] = {}
        self._next = 0
        self._dead = False
        self.blamed: int | None = None  # the request whose timeout killed the process
        self.in_flight = 0

    def _start(self) -> str:
        """Reads the ready line once, then starts the reader; '' or why it failed."""
        with self._starting:
            if self.ready:
                return ""
            if self._dead:
                return "eof"
            line, why = self._read_line(time.monotonic() + 300, None)
            if line is None:
                self._dead = True
                return why
            self.ready = True
            if line.startswith(b"ready {"):
                self.info = json.loads(line[len(b"ready "):])
            threading.Thread(target=self._read_all, daemon=True,
                             name="jaxbench-owner-reader").start()
            return ""

    def _read_all(self) -> None:
        while True:
            line, _ = self._read_line(float("inf"), None)
            if line is None:
                break
            try:
                message = json.loads(line)
                waiting = self._answers.get(message.get("id")) if isinstance(message, dict) \
                    else None
            except json.JSONDecodeError:
                break
            if waiting is not None:
                waiting.put(message)
        with self._lock:
            self._dead = True
            for waiting in self._answers.values():
                waiting.put(None)

    def request(self, payload: dict[str, Any], timeout_s: float,
                memory_bytes: int | None, lease: DeviceLease | None = None) -> RunnerOutcome:
        started = time.monotonic()
        why = self._start()
        if why:
            return self._failed(why)
        start_s = time.monotonic() - started
        answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        with self._lock:
            if self._dead:
                return self._ended(None)
            self._next += 1
            rid = self._next
            self._answers[rid] = answers
            self.in_flight += 1
        try:
            try:
                with self._lock:
                    self._send({**payload, "id": rid, "lease": False})
            except (BrokenPipeError, OSError):
                return self._ended(rid)
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    message = answers.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    self.blamed = rid
                    return self._failed("timed out")
                if message is None:
                    return self._ended(rid)
                if "chip_wait_s" in message:  # waiting for the chip: not the candidate's time
                    deadline += float(message["chip_wait_s"])
                    continue
                message.pop("id", None)
                return RunnerOutcome(message, start_s=start_s)
        finally:
            with self._lock:
                self._answers.pop(rid, None)
                self.in_flight -= 1

    def _ended(self, rid: int | None) -> RunnerOutcome:
        outcome = self._failed("eof")
        outcome.innocent = self.blamed is not None and self.blamed != rid
        return outcome

    def _failed(self, why: str) -> RunnerOutcome:
        with self._lock:
            self._dead = True
        self._log.flush() if not self._log.closed else None
        tail = self._log_path.read_bytes()[-3000:].decode(errors="replace") \
            if self._log_path.exists() else ""
        kill_group(self.proc)
        return RunnerOutcome(None, timed_out=why == "timed out", memory_exceeded=why == "memory",
                             returncode=self.proc.poll(), log_tail=tail)

    @property
    def alive(self) -> bool:
        return not self._dead and self.proc.poll() is None


class RunnerPool:
    """Warm trusted runners, handed out one per evaluation and taken back afterwards."""

    def __init__(self, spares: int = 1, command: tuple[str, ...] = RUNNER_COMMAND) -> None:
        self._env = runner_env()
        self._command = command
        self._idle: queue.Queue[Runner] = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False
        # Runners die with the thread that started them (their parent-death signal): all are
        # started from one thread that lives as long as the pool.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jaxbench-runners")
        for _ in range(spares):
            self._idle.put(self._spawn())

    def _spawn(self) -> Runner:
        return self._spawner.submit(Runner, self._env, self._command).result()

    def prestart(self) -> None:
        """Starts a runner now when none is waiting, so that it imports and warms up while the
        tracer works instead of after it (an evaluator without spares: ``jaxbench eval``).
        Starting returns at once (the runner reports ready on its first request)."""
        with self._lock:
            if not self._closed and self._idle.empty():
                self._idle.put(self._spawn())

    def run(self, payload: dict[str, Any], timeout_s: float,
            memory_bytes: int | None, lease: DeviceLease | None = None) -> RunnerOutcome:
        try:
            runner = self._idle.get_nowait()
        except queue.Empty:
            runner = self._spawn()
        if not runner.alive:
            runner.kill()
            runner = self._spawn()
        outcome = runner.request(payload, timeout_s, memory_bytes, lease)
        with self._lock:
            keep = (outcome.response is not None and not outcome.response.get("retire")
                    and runner.alive and not self._closed)
        if keep:
            self._idle.put(runner)
        else:
            runner.kill()
        return outcome

    def close(self) -> None:
        with self._lock:
            self._closed = True
        while True:
            try:
                self._idle.get_nowait().kill()
            except queue.Empty:
                break
        self._spawner.shutdown(wait=False)


class ChipOwners:
    """The device owners: one trusted runner per chip, the only processes that open it
    (:mod:`jaxbench.backends.host`). A request waits until a chip's owner is free (the
    outcome's ``waited_s``), and its owner, started on first use and kept warm, does all of the
    request's device work; an owner that fails or times out is replaced. A chip that refuses
    a new owner because it was released a moment ago is asked again after a pause."""

    BUSY_RETRIES = 4
    BUSY_PAUSE_S = 5.0

    def __init__(self, chips: int = 1, command: tuple[str, ...] = RUNNER_COMMAND,
                 env: dict[str, str] | None = None, depth: int = 1,
                 adopt: Adopt | None = None) -> None:
        self._command = command
        self._free: queue.Queue[_Owner] = queue.Queue()
        self.depth = max(1, depth)
        self._owners = []
        for chip in range(max(chips, 1)):
            owner = _Owner(chip_owner_env(chip, chips, self.depth, env))
            self._owners.append(owner)
            self._free.put(owner)
        if adopt is not None:  # the first owner, started as the probe, serves chip 0 of one
            kind = SharedRunner if self.depth > 1 else Runner
            self._owners[0].runner = adopt(self._owners[0].env if chips <= 1 else None, kind,
                                           command)
        self._slots = threading.Condition()
        self._closed = False
        self._prepared: set[tuple[Any, Any]] = set()
        self._lock = threading.Lock()
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jaxbench-owners")

    def prestart(self) -> None:
        """Starts every owner that is not running, without waiting for it: the TPU runtime's
        start (15 s under gVisor on a v5e) then overlaps the tracer's work on the first
        candidate instead of following it. The runner says it is ready on its first request."""
        with self._lock:
            if self._closed:
                return
            for owner in self._owners:
                if owner.runner is None:
                    kind = SharedRunner if self.depth > 1 else Runner
                    owner.runner = self._spawner.submit(kind, owner.env, self._command).result()

    def prepare(self, payload: dict[str, Any], timeout_s: float) -> None:
        """Sends a ``prepare`` op (the runner's ``_prepare``: the task's programs compiled for
        the chip) once per task and size, in a thread of its own, without waiting: the owner
        compiles while the candidate is traced, and the candidate's request finds them kept."""
        key = (payload.get("task"), payload.get("size"))
        with self._lock:
            if self._closed or key in self._prepared:
                return
            self._prepared.add(key)
        threading.Thread(target=self.run, args=(payload, timeout_s), daemon=True,
                         name="jaxbench-owner-prepare").start()

    def run(self, payload: dict[str, Any], timeout_s: float) -> RunnerOutcome:
        if self.depth > 1:
            return self._run_beside(payload, timeout_s)
        waiting = time.monotonic()
        owner = self._free.get()
        waited = time.monotonic() - waiting
        try:
            start_s = 0.0
            for attempt in range(self.BUSY_RETRIES + 1):
                if owner.runner is None or not owner.runner.alive:
                    if owner.runner is not None:
                        owner.runner.kill()
                    with self._lock:
                        if self._closed:
                            return RunnerOutcome(None, log_tail="the evaluator is closing")
                        owner.runner = self._spawner.submit(Runner, owner.env,
                                                            self._command).result()
                ready = owner.runner.ready
                outcome = owner.runner.request(payload, timeout_s, None, owner.lease)
                start_s += outcome.start_s
                if outcome.response is not None or ready or attempt == self.BUSY_RETRIES \
                        or not _chip_busy(outcome.log_tail):
                    break
                owner.runner = None  # refused the chip at start: released a moment ago
                time.sleep(self.BUSY_PAUSE_S)
                start_s += self.BUSY_PAUSE_S
            if outcome.response is None or outcome.response.get("retire"):
                owner.runner.kill()
                owner.runner = None
            outcome.waited_s, outcome.start_s = waited, start_s
            return outcome
        finally:
            self._free.put(owner)

    def _run_beside(self, payload: dict[str, Any], timeout_s: float) -> RunnerOutcome:
        """Depth > 1: the owner with the fewest requests in flight takes this one beside them
        (waiting while every owner has ``depth``); one killed for another request's timeout is
        sent again, once, to a fresh owner."""
        waiting = time.monotonic()
        with self._slots:
            self._slots.wait_for(lambda: self._closed or min(
                o.taken for o in self._owners) < self.depth)
            owner = min(self._owners, key=lambda o: o.taken)
            owner.taken += 1
        waited = time.monotonic() - waiting
        try:
            start_s = 0.0
            for attempt in range(self.BUSY_RETRIES + 2):
                with self._lock:
                    if self._closed:
                        return RunnerOutcome(None, log_tail="the evaluator is closing")
                    if owner.runner is None or not owner.runner.alive:
                        if owner.runner is not None:
                            owner.runner.kill()
                        owner.runner = self._spawner.submit(SharedRunner, owner.env,
                                                            self._command).result()
                    runner = owner.runner
                ready = runner.ready
                outcome = runner.request(payload, timeout_s, None)
                start_s += outcome.start_s
                if outcome.response is not None or attempt >= self.BUSY_RETRIES:
                    break
                if outcome.innocent and attempt == 0:
                    continue  # killed for another request's timeout: once more, afresh
                if ready or not _chip_busy(outcome.log_tail):
                    break
                time.sleep(self.BUSY_PAUSE_S)  # refused the chip at start: released a moment ago
                start_s += self.BUSY_PAUSE_S
            if outcome.response is not None and outcome.response.get("retire"):
                with self._lock:  # no new request; it ends once those beside it are answered
                    if owner.runner is runner:
                        owner.runner = None
                    runner.retiring = True
            if getattr(runner, "retiring", False) and runner.in_flight == 0:
                runner.kill()
            outcome.waited_s, outcome.start_s = waited, start_s
            return outcome
        finally:
            with self._slots:
                owner.taken -= 1
                self._slots.notify_all()

    def close(self) -> None:
        """Stops every owner, a busy one too (its requests end without a response): the chip
        is free once this returns and the processes are reaped."""
        with self._lock:
            self._closed = True
        with self._slots:
            self._slots.notify_all()
        for owner in self._owners:
            if owner.runner is not None:
                owner.runner.kill()
        self._spawner.shutdown(wait=False)


# Hands ChipOwners a running owner for an environment, kind and command, or None (given None
# for the environment, a host of several chips, it stops any it holds): the first owner's.
Adopt = Callable[[dict[str, str] | None, type, tuple[str, ...]], "Runner | None"]


def chip_owner_env(chip: int, chips: int, depth: int, base: dict[str, str] | None = None
                   ) -> dict[str, str]:
    """The environment of chip ``chip``'s owner of ``chips``, taking ``depth`` requests at once
    (``base``: the trusted runner's environment by default)."""
    from jaxbench.backends.host import owner_env

    base = runner_env(device_owner=True) if base is None else base
    return {**owner_env(base, chip, chips), **({OWNER_DEPTH: str(depth)} if depth > 1 else {})}


@dataclass
class _Owner:
    """One chip's owner: its environment (that chip visible), its runner once started, and the
    lease that marks its timing window (uncontended: the owner serves one request at a time)."""

    env: dict[str, str]
    runner: Runner | None = None
    lease: DeviceLease = field(default_factory=DeviceLease)
    taken: int = 0  # requests in flight on it (depth > 1)


def _chip_busy(log: str) -> bool:
    from jaxbench.backends.host import CHIP_BUSY

    return any(marker in log for marker in CHIP_BUSY)


def triton_compiler() -> ModuleType:
    """The judge's driver of Triton's compiler (:mod:`jaxbench.evaluator.judge.gpu.triton_compile`:
    whether it runs here, ``compile_all``, its errors and version skew). Like the runner, it
    works in a process of its own (``python -I`` on that file, importing nothing of jaxbench)
    and only ever reads IR the runner verified; the parent reaches the judge only through this
    module."""
    from jaxbench.evaluator.judge.gpu import triton_compile

    return triton_compile


def read_response(outcome: RunnerOutcome, case: Any, stages: dict[str, dict[str, Any]]
                  ) -> JudgeResponse:
    """The runner's response to a judge request as its record, whatever its status; a runner
    that timed out, ran out of memory, died or answered off its record raises a
    :class:`StageFailure` with its rule code."""
    if outcome.timed_out:
        done = ", ".join(f"{name} {info['seconds']:.1f} s" for name, info in stages.items()
                         if isinstance(info, dict) and isinstance(info.get("seconds"), float))
        raise StageFailure(Status.TIMEOUT, Stage.CORRECT,
                           f"no verdict within {case.timeout_s:g} s (wall clock) while the "
                           "trusted runner lowered, checked and ran the kernel at size "
                           f"{case.size} (the interpreters' checks and the trials)"
                           + (f" (finished: {done})" if done else "") + "; runner killed",
                           rule=Rule.TIME_LIMIT)
    if outcome.memory_exceeded:
        raise StageFailure(Status.CRASHED, Stage.CORRECT, f"the exported module exceeded the "
                           f"{case.memory_bytes / 2**30:g} GiB memory limit", rule=Rule.MEMORY_LIMIT)
    if outcome.response is None:
        tail = [ln for ln in outcome.log_tail.splitlines() if ln.strip()][-2:]
        raise StageFailure(Status.CRASHED, Stage.CORRECT, "the trusted runner died running the "
                           "exported module" + (": " + " | ".join(tail)[-300:] if tail else ""),
                           rule=Rule.PROCESS_DIED)
    try:
        return JudgeResponse.from_dict(outcome.response)
    except RecordError as exc:
        raise StageFailure(Status.CRASHED, Stage.CORRECT, f"the trusted runner's response does "
                           f"not fit its record: {exc}", rule=Rule.HARNESS) from None


def ran(response: JudgeResponse) -> JudgeResponse:
    """``response`` when the runner ran the trials (``ran``); else the failure it reports,
    raised as a :class:`StageFailure` (an unknown status or rule code is the harness's)."""
    if response.status != RAN:
        status, rule = response.status, response.rule
        raise StageFailure(status if status in STATUSES else Status.CRASHED,
                           response.stage or Stage.CORRECT, response.message,
                           rule=rule if rule in RULES else Rule.HARNESS)
    return response
