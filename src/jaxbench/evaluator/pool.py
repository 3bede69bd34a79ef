"""Untrusted tracer processes: one fresh process per evaluation, with a warm spare waiting.

A tracer (:mod:`jaxbench.evaluator.sandbox.tracer`) isolates itself, imports
JAX and warms up before its job arrives, so keeping one spare per slot hides
start-up without ever reusing a process that ran candidate code. Each has its
own process group (killed whole at the end, so nothing it started survives), a
private directory (the only place it may write), a minimal environment (no API
keys, no accelerator), a wall-clock timeout and a resident-memory watchdog on
top of its own rlimits.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The end of a worker's stdout/stderr that the parent keeps (untrusted text).
LOG_TAIL_BYTES = 8192


@dataclass
class WorkerOutcome:
    returncode: int | None
    timed_out: bool
    memory_exceeded: bool
    wall_s: float
    dir: Path
    stderr_tail: str


class _Worker:
    def __init__(self, env: dict[str, str], root: str | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="jaxbench-worker-", dir=root))
        # The parent reads the log back through this handle, never by its path: the worker
        # can replace what the path names (a link, a FIFO), not the file this handle holds.
        self._log = open(self.dir / "worker.log", "w+b")  # noqa: SIM115
        self.log_tail = b""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jaxbench.evaluator.sandbox.tracer", str(self.dir)],
            stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True, env=env, cwd=self.dir,
        )

    def kill(self) -> None:
        kill_group(self.proc)
        if not self._log.closed:
            fd = self._log.fileno()
            size = os.fstat(fd).st_size
            self.log_tail = os.pread(fd, min(size, LOG_TAIL_BYTES), max(0, size - LOG_TAIL_BYTES))
            self._log.close()

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


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


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to a process's whole group (it was started in a session of its own), reaped."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def group_rss_bytes(pgid: int) -> int:
    """Resident memory of every process in a process group (Linux /proc)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:  # field 5 (pgrp), after state and ppid
                continue
            with open(f"/proc/{entry}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    return total


# Variables a tracer keeps from the parent's environment (everything else, API keys included,
# stays behind).
_TRACER_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONPATH", "VIRTUAL_ENV",
               "TF_CPP_MIN_LOG_LEVEL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def tracer_env() -> dict[str, str]:
    """The untrusted side's environment: minimal, CPU only, no caches shared with the harness."""
    env = {k: v for k, v in os.environ.items() if k in _TRACER_ENV}
    env.update(JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="", TPU_VISIBLE_CHIPS="",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONDONTWRITEBYTECODE="1", JAX_ENABLE_COMPILATION_CACHE="false",
               TF_CPP_MIN_LOG_LEVEL=env.get("TF_CPP_MIN_LOG_LEVEL", "3"))
    return env


def worker_env() -> dict[str, str]:
    """The trusted runner's environment."""
    env = dict(os.environ)
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    cache_root = os.environ.get("JAXBENCH_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "jaxbench")
    env.setdefault("JAXBENCH_XLA_CACHE", os.path.join(cache_root, "xla"))
    return env


class WorkerPool:
    """Hands out fresh worker processes; keeps ``spares`` of them warmed up in advance."""

    def __init__(self, spares: int = 1, root: str | os.PathLike[str] | None = None) -> None:
        self._env = tracer_env()
        self._root = str(root) if root is not None else None
        self._spares: queue.Queue[_Worker] = queue.Queue()
        self._want = spares
        self._lock = threading.Lock()
        self._closed = False
        # Tracers die with the *thread* that started them (their parent-death signal), so all
        # of them are started from one thread that lives as long as the pool.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jaxbench-spawner")
        for _ in range(spares):
            self._spares.put(self._spawn())

    def _spawn(self) -> _Worker:
        return self._spawner.submit(_Worker, self._env, self._root).result()

    def _take(self) -> _Worker:
        try:
            worker = self._spares.get_nowait()
        except queue.Empty:
            worker = self._spawn()
        if worker.proc.poll() is not None:  # a spare that died while waiting
            worker.kill()
            worker.cleanup()
            worker = self._spawn()
        with self._lock:
            if not self._closed and self._want > 0:
                self._spares.put(self._spawn())
        return worker

    def run(self, job: dict[str, Any], timeout_s: float, memory_bytes: int | None) -> WorkerOutcome:
        """Runs one job in a fresh worker; the caller reads and then removes ``outcome.dir``."""
        worker = self._take()
        job = {**job, "out_dir": str(worker.dir)}
        started = time.monotonic()
        timed_out = memory_exceeded = False
        try:
            assert worker.proc.stdin is not None
            worker.proc.stdin.write(json.dumps(job).encode())
            worker.proc.stdin.close()
        except BrokenPipeError:
            pass
        while True:
            try:
                worker.proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() - started > timeout_s:
                timed_out = True
                break
            if memory_bytes and group_rss_bytes(worker.proc.pid) > memory_bytes:
                memory_exceeded = True
                break
        worker.kill()  # always: nothing the candidate started may outlive the evaluation
        tail = worker.log_tail.decode(errors="replace")
        return WorkerOutcome(worker.proc.returncode, timed_out, memory_exceeded,
                             time.monotonic() - started, worker.dir, tail)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        while True:
            try:
                worker = self._spares.get_nowait()
            except queue.Empty:
                break
            worker.kill()
            worker.cleanup()
        self._spawner.shutdown(wait=False)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
