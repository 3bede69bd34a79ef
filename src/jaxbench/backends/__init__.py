"""How kernels run: device detection, forced interpret modes, cross-lowering, peak figures.

Candidates never pass ``interpret``; the harness decides. On CPU every
``pallas_call`` traced under :func:`interpret_mode` runs interpreted, including
calls made inside library kernels, because Pallas reads the forcing flag at
trace time for every call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from jaxbench.backends.chips import resolve_chip
from jaxbench.backends.host import attached, holds_accelerator, keep_off_accelerators
from jaxbench.backends.peaks import PEAKS, peak_for
from jaxbench.contract import MODES, Mode

LOWERING_PLATFORM = {"tpu": "tpu", "gpu": "cuda"}


def accelerator_platform() -> str | None:
    """``"tpu"`` or ``"gpu"`` when this host has such a chip (:func:`jaxbench.backends.host
    .attached`: a short-lived probe, never this process's JAX), else ``None``."""
    found = attached()
    return found.platform if found is not None and found.platform in ("tpu", "gpu") else None


def resolve_mode(mode: str, target: str) -> Mode:
    """``auto`` -> ``device`` when the target's hardware is present, else ``interpret``."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; use auto, interpret or device")
    mode = Mode(mode)
    if mode == Mode.AUTO:
        return Mode.DEVICE if accelerator_platform() == target else Mode.INTERPRET
    if mode == "device" and accelerator_platform() != target:
        raise RuntimeError(f"--mode device needs a {target.upper()}; none is visible to JAX")
    if mode == "device" and holds_accelerator():
        raise RuntimeError("this process's JAX already opened the accelerator, so the device "
                           "owner cannot (a chip has one owner): make the Evaluator, or run "
                           "jaxbench, before using JAX on the chip in this process")
    return mode


@contextlib.contextmanager
def interpret_mode(kind: str = "generic", **tpu_params: Any) -> Iterator[None]:
    """Forces every ``pallas_call`` traced inside to run interpreted.

    ``generic`` is Pallas' HLO interpreter (any kernel, CPU); ``tpu`` is the TPU
    interpreter, which simulates VMEM/SMEM, DMAs and semaphores, fills
    uninitialised memory with NaN and can detect races.
    """
    from jax._src import config as jax_config

    if kind == "generic":
        flag: Any = True
    elif kind == "tpu":
        from jaxbench import compat

        flag = compat.tpu_interpret_params(**{"uninitialized_memory": "nan", **tpu_params})
    else:
        raise ValueError(f"unknown interpret kind {kind!r}")
    setting = jax_config.pallas_tpu_interpret_mode_context_manager
    previous = setting.swap_local(flag)
    try:
        yield
    finally:
        setting.set_local(previous)


def tpu_check_params(key_word: int) -> dict[str, Any]:
    """The TPU-interpreter check every TPU kernel gets: two simulated cores, parallel grid
    axes in a shuffled order (seeded per trial), race detection, NaN-filled memory."""
    return {"detect_races": True, "num_cores_or_threads": 2, "random_seed": key_word % 2**31}


_TPU_INTERPRETER_RESETS = [0]


def tpu_interpreter_resets() -> int:
    """How often this process reset the TPU interpreter after a failure (a trusted runner
    that did is replaced: what the reset leaves behind is JAX's, and not known)."""
    return _TPU_INTERPRETER_RESETS[0]


def reset_tpu_interpreter() -> None:
    """The TPU interpreter keeps global state after a failure; clear it."""
    _TPU_INTERPRETER_RESETS[0] += 1
    with contextlib.suppress(Exception):
        from jax._src.pallas.mosaic.interpret import interpret_pallas_call

        interpret_pallas_call.reset_tpu_interpret_mode_state()


# Kernel custom-call targets in an exported module -> the Pallas backend that made them.
KERNEL_CALL_BACKENDS = {
    "__gpu$xla.gpu.triton": "triton",
    "mosaic_gpu": "mosaic_gpu",
    "mosaic_gpu_v2": "mosaic_gpu",
    "tpu_custom_call": "mosaic_tpu",
}


def kernel_backend_of_calls(custom_calls: dict[str, int]) -> str | None:
    """The Pallas backend(s) of an exported module's kernel calls: ``triton``, ``mosaic_gpu``,
    ``mosaic_tpu``, several joined by ``+``, or None when it has none. Read from the module
    the judge checks (trusted), not from what the candidate's trace claims."""
    found = sorted({KERNEL_CALL_BACKENDS[t] for t in custom_calls if t in KERNEL_CALL_BACKENDS})
    return "+".join(found) or None


def device_kind() -> str:
    """The attached chip's device kind (from the probe), or ``"unknown"`` without one."""
    found = attached()
    return found.device_kind if found is not None else "unknown"


__all__ = [
    "KERNEL_CALL_BACKENDS", "LOWERING_PLATFORM", "PEAKS", "accelerator_platform", "device_kind",
    "interpret_mode", "keep_off_accelerators", "kernel_backend_of_calls",
    "peak_for", "reset_tpu_interpreter", "resolve_chip", "resolve_mode", "tpu_check_params",
]
