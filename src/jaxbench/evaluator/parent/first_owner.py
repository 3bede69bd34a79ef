"""The first owner: the chip's probe and its owner in one process, so a command opens it once.

Opening a chip is slow where the host is sandboxed: on a TPU v5e under gVisor any process that
asks JAX for the TPU spends about 10 s there. A command in device mode used to open it twice:
a short-lived probe (which chip is attached, how many; :func:`jaxbench.backends.host.attached`)
that had to exit before the chip's owner could open it. Here, in a process that evaluates on
the chip (``probe_by_first_owner``: an :class:`~jaxbench.evaluator.Evaluator` when made, and
``run`` and ``optimize`` before they make theirs), the probe is the chip's first owner: a trusted
runner started with ``--probe`` (:mod:`jaxbench.evaluator.judge.runner`) says the probe's line,
keeps the chip, and goes on to load what its requests need while the command resolves the case
and the tracer works.

- :func:`ask` starts it and answers the probe (``jaxbench.backends.host.probe_with``). Where it
  found no accelerator, or JAX failed, it is stopped at once.
- :func:`take` hands it to the chip owners (:class:`~jaxbench.evaluator.parent.judge_client
  .ChipOwners`) as chip 0's owner when their owner would have been started exactly as it was
  (the same environment, kind and command); otherwise, and on a host of several chips (it opened
  all of them, and each owner must see one), it is stopped so that they can open theirs.
- :func:`release` stops one that was never taken (the evaluator's close).

It is started from a thread of this module's own that lives as long as the process: a trusted
runner dies with the thread that started it (its parent-death signal).
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from jaxbench.backends.host import PROBE_TIMEOUT_S
from jaxbench.evaluator.parent.judge_client import RUNNER_COMMAND, Runner, SharedRunner, chip_owner_env

PROBE_FLAG = "--probe"

_LOCK = threading.Lock()
_SPAWNER: list[ThreadPoolExecutor] = []
# the first owner waiting to be taken, and how it was started: (environment, kind, command)
_HELD: dict[str, Any] = {"runner": None, "how": None}


def _spawn(env: dict[str, str], kind: type[Runner], command: tuple[str, ...]) -> Runner:
    with _LOCK:
        if not _SPAWNER:
            _SPAWNER.append(ThreadPoolExecutor(max_workers=1,
                                               thread_name_prefix="jaxbench-first-owner"))
        spawner = _SPAWNER[0]
    return spawner.submit(kind, env, (*command, PROBE_FLAG)).result()


def ask(depth: int = 1, command: tuple[str, ...] = RUNNER_COMMAND,
        env: dict[str, str] | None = None, timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """Starts chip 0's owner of a one-chip host (taking ``depth`` requests at once) as the
    probe and returns the probe's line (``jaxbench.backends.chip_probe.seen``): what it opened,
    or ``{"error": ...}``. It is kept only where it holds an accelerator."""
    release()  # asked again (a chip that refused it a moment ago): never two
    owner_env = chip_owner_env(0, 1, max(1, depth), env)
    kind = SharedRunner if depth > 1 else Runner
    runner = _spawn(owner_env, kind, command)
    line, why = runner.first_line(timeout_s)
    if line is None:
        return {"error": why or "the first owner died before it said what it opened"}
    try:
        said = json.loads(line[len(b"probe "):]) if line.startswith(b"probe {") else None
    except json.JSONDecodeError:
        said = None
    if not isinstance(said, dict):
        runner.kill()
        return {"error": f"the first owner said {line[:200]!r} instead of the probe's line"}
    if "error" in said or said.get("platform") == "cpu":
        runner.kill()
        return said
    with _LOCK:
        _HELD.update(runner=runner, how=(owner_env, kind, tuple(command)))
    return said


def take(env: dict[str, str] | None, kind: type, command: tuple[str, ...]) -> Runner | None:
    """The first owner, for an owner to be started with ``env``, ``kind`` and ``command``; None
    when none is held or it was started otherwise (then it is stopped: the chip is needed).
    ``env`` None (a host of several chips) stops it."""
    with _LOCK:
        runner, how = _HELD["runner"], _HELD["how"]
        _HELD.update(runner=None, how=None)
    if runner is None:
        return None
    if env is not None and how == (env, kind, tuple(command)) and runner.alive:
        return runner
    runner.kill()
    return None


def release() -> None:
    """Stops the first owner if nobody took it."""
    take(None, Runner, ())


def holding() -> bool:
    """Whether a first owner waits to be taken."""
    with _LOCK:
        return _HELD["runner"] is not None


__all__ = ["PROBE_FLAG", "ask", "holding", "release", "take"]
