"""Who may open the accelerator: the chip has one owner.

A TPU admits one process at a time (libtpu holds a lock file), and a GPU shared by many
processes times badly. So exactly one trusted process per chip, the *device owner* (a trusted
runner started by :mod:`jaxbench.evaluator.parent.judge_client` with :func:`owner_env`),
compiles, runs and times on it. Every other process (the command, ``serve``, the agents, the
tracers, the checking runners) sees only the CPU:

- :func:`keep_off_accelerators` is called before JAX initialises a backend (first thing in the
  CLI, and when an :class:`~jaxbench.evaluator.Evaluator` is made): it sets
  ``JAX_PLATFORMS=cpu`` for this process and every child it starts, keeping what the user had
  asked for in ``JAXBENCH_ACCELERATOR_PLATFORMS`` for the owner;
- :func:`attached` says whether a chip is present, and which, from a probe in another process
  (run once per process, and only where an accelerator plugin is installed), never by asking
  JAX here: a short-lived one, or, where :func:`probe_with` says so, the chip's first owner,
  which keeps the chip for the evaluator (:mod:`jaxbench.evaluator.parent.first_owner`).

And what else this host is: :func:`versions`, the software and host an evaluation or a run
records (the device it ran on is added by the runner).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypedDict

ACCELERATOR_PLATFORMS = "JAXBENCH_ACCELERATOR_PLATFORMS"  # what the user asked JAX for
PROBE_TIMEOUT_S = 240.0
# Said by libtpu when another process holds the chip; a chip just released can refuse a
# new process for a few seconds.
CHIP_BUSY = ("multi-process lockfile", "TPU is already in use", "device or resource busy")

# The probe: a script of its own (backends/chip_probe.py), run by path in a short-lived
# process, the only one of the command's that asks JAX for the accelerator.
_PROBE = str(Path(__file__).with_name("chip_probe.py"))


@dataclass(frozen=True)
class Attached:
    """The accelerator a probe saw: ``platform`` ``tpu`` or ``gpu``, JAX's device kind, how
    many chips, and one chip's memory as its runtime reports it (None where it does not)."""

    platform: str
    device_kind: str
    count: int
    memory_bytes: int | None = None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def user_platforms() -> str:
    """What the user asked JAX for (``JAX_PLATFORMS`` before this process set it to cpu)."""
    if ACCELERATOR_PLATFORMS in os.environ:
        return os.environ[ACCELERATOR_PLATFORMS]
    return os.environ.get("JAX_PLATFORMS", "")


def _backends_initialised() -> list[str]:
    """The platforms this process's JAX has opened (none when JAX is not imported)."""
    if "jax" not in sys.modules:
        return []
    from jaxbench.compat import opened_platforms

    return opened_platforms()


def holds_accelerator() -> bool:
    """Whether this process's JAX already opened a backend other than the CPU."""
    return any(p != "cpu" for p in _backends_initialised())


def keep_off_accelerators() -> None:
    """Makes this process, and every process it starts, see only the CPU, remembering what the
    user asked for (the device owner gets it back). Where JAX is imported but has opened no
    backend yet, its config is set too. A process that already opened an accelerator keeps
    it (:func:`holds_accelerator` says so; device mode then refuses with that reason)."""
    if os.environ.get("JAX_PLATFORMS", "") != "cpu":
        os.environ[ACCELERATOR_PLATFORMS] = os.environ.get("JAX_PLATFORMS", "")
    else:
        os.environ.setdefault(ACCELERATOR_PLATFORMS, "cpu")
    os.environ["JAX_PLATFORMS"] = "cpu"
    if "jax" in sys.modules and not _backends_initialised():
        import jax

        jax.config.update("jax_platforms", "cpu")


def cpu_device() -> Any:
    """This process's CPU device, for work that must stay off the accelerator (the parent's
    float32 truth, the validator's): where JAX has opened no backend yet, this process is
    kept to the CPU first (:func:`keep_off_accelerators`), since asking JAX for any device
    opens every platform it may use, a TPU among them."""
    import jax

    if not _backends_initialised():
        keep_off_accelerators()
    return jax.devices("cpu")[0]


def owner_env(base: dict[str, str], chip: int | None = None, chips: int = 1) -> dict[str, str]:
    """The device owner's environment: the platforms the user asked for, and on a host of
    several chips only chip ``chip`` visible (one owner per chip)."""
    env = dict(base)
    asked = user_platforms()
    env.pop(ACCELERATOR_PLATFORMS, None)
    if asked and asked != "cpu":
        env["JAX_PLATFORMS"] = asked
    else:
        env.pop("JAX_PLATFORMS", None)
    if chip is not None and chips > 1:
        # TPU: one chip per process; GPU: one visible device (names from JAX's and CUDA's docs)
        env.update(TPU_VISIBLE_CHIPS=str(chip), TPU_CHIPS_PER_PROCESS_BOUNDS="1,1,1",
                   TPU_PROCESS_BOUNDS="1,1,1", CUDA_VISIBLE_DEVICES=str(chip))
    return env


def accelerator_installed() -> bool:
    """Whether JAX here could find an accelerator: a TPU or CUDA/ROCm plugin is installed, or a
    module under ``jax_plugins``. Cheap: imports nothing of JAX."""
    if user_platforms() == "cpu":
        return False
    if importlib.util.find_spec("libtpu") is not None:
        return True
    try:
        spec = importlib.util.find_spec("jax_plugins")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and list(spec.submodule_search_locations or []):
        for location in spec.submodule_search_locations or []:
            if any(not n.startswith((".", "_")) for n in os.listdir(location)):
                return True
    names = {d.metadata["Name"].lower().replace("_", "-") for d in importlib.metadata.distributions()
             if d.metadata["Name"]}
    return any(n.startswith(("libtpu", "jax-cuda", "jax-rocm")) for n in names)


def _run_probe(env: dict[str, str], timeout_s: float) -> dict[str, Any]:
    """The short-lived probe's one line (backends/chip_probe.py), or ``{"error": ...}``."""
    try:
        out = subprocess.run([sys.executable, _PROBE], capture_output=True, text=True, env=env,
                             timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the accelerator probe did not answer within {timeout_s:g} s") \
            from None
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else {"error": out.stderr[-600:]}


# Who answers this process's probe instead of a short-lived process (:func:`probe_with`).
_ASK: list[Callable[[], dict[str, Any]] | None] = [None]


def probe_with(ask: Callable[[], dict[str, Any]] | None) -> None:
    """Makes ``ask()`` answer this process's probe (:func:`attached`) with the probe's line:
    the evaluator's first owner, a device owner that says what it opened and keeps the chip
    (:mod:`jaxbench.evaluator.parent.first_owner`), so that a command opens the chip once.
    None: the short-lived probe again."""
    _ASK[0] = ask


def probe(env: dict[str, str] | None = None, timeout_s: float = PROBE_TIMEOUT_S,
          ask: Callable[[], dict[str, Any]] | None = None) -> Attached | None:
    """The accelerator a probe sees, or None (only the CPU): the short-lived probe with
    ``env`` (default: the owner's), or ``ask``. A chip that another process holds raises
    RuntimeError naming it."""
    if ask is None:
        probe_env = owner_env(dict(os.environ) if env is None else env)

        def ask() -> dict[str, Any]:
            return _run_probe(probe_env, timeout_s)

    last = ""
    for attempt in range(3):  # a chip released a moment ago can refuse a new process
        said = ask()
        if "error" not in said:
            if said["platform"] == "cpu":
                return None
            platform = "gpu" if said["platform"] in ("gpu", "cuda", "rocm") else said["platform"]
            return Attached(platform, said["device_kind"], int(said["count"]),
                            said.get("memory_bytes"))
        last = str(said["error"])
        if not any(m in last for m in CHIP_BUSY) or attempt == 2:
            break
        time.sleep(5)
    if any(m in last for m in CHIP_BUSY):
        raise RuntimeError("the accelerator is held by another process (a TPU admits one at a "
                           "time): stop it, or evaluate in interpret mode (--mode interpret)")
    raise RuntimeError(f"the accelerator probe failed: {last.strip().splitlines()[-1:] or last}")


@functools.lru_cache(maxsize=1)
def attached() -> Attached | None:
    """The accelerator of this host, probed once per process; None on a CPU-only host (no
    plugin installed, or ``JAX_PLATFORMS=cpu`` asked by the user). A failed probe (a chip held
    by another process) raises RuntimeError with the reason."""
    if not accelerator_installed():
        return None
    return probe(ask=_ASK[0])


class Versions(TypedDict, total=False):
    """What :func:`versions` says: Python's, the host's name and machine, JAX's and jaxlib's
    (where JAX imports) and jaxbench's."""

    python: str
    host: str
    machine: str
    jax: str
    jaxlib: str
    jaxbench: str


def versions() -> Versions:
    """Software and host versions; the worker adds the device it ran on."""
    import platform

    info: Versions = {
        "python": sys.version.split()[0],
        "host": platform.node(),
        "machine": platform.machine(),
    }
    try:
        import jax
        import jaxlib

        info["jax"] = jax.__version__
        info["jaxlib"] = jaxlib.__version__
    except ImportError:  # pragma: no cover - jax is a dependency
        pass
    from jaxbench._version import __version__

    info["jaxbench"] = __version__
    return info


__all__ = ["ACCELERATOR_PLATFORMS", "CHIP_BUSY", "Attached", "Versions", "accelerator_installed",
           "attached", "cpu_device",
           "holds_accelerator", "keep_off_accelerators", "owner_env", "probe", "probe_with",
           "user_platforms",
           "versions"]
