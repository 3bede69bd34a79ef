"""From the handed-over jaxpr to the modules the judge checks and runs (trusted side).

Everything derives from the jaxpr the tracer handed over, without candidate Python:
every kernel equation (``pallas_call``, ``core_map``) is wrapped in its own named
``jit`` (so the judge can find kernel regions in the lowered module) and gets the
``interpret`` parameter the module needs: ``False`` for the target platform
(Mosaic TPU, Triton or Mosaic GPU custom calls inside), ``True`` for the CPU
interpret-mode module, the interpreters' parameters for their race checks.
"""

from __future__ import annotations

import contextlib
from typing import Any

from jaxbench import compat

# The chips kernels are lowered for when none is attached: chip facts shared with the parent and
# the tracer, kept in jaxbench/backends/chips.py.
from jaxbench.backends.chips import (  # noqa: E402, F401 - re-exported
    CROSS_LOWERING_GPU,
    CROSS_LOWERING_TPU,
)
from jaxbench.evaluator.common.jaxprs import (  # noqa: F401 - re-exported for the judge's rules
    CALLBACK_PRIMITIVES,
    KERNEL_PREFIX,
    Scan,
    scan,
    with_interpret,
)

# Triton's custom call has no export compatibility guarantee; the judge allow-lists it itself.
UNSTABLE_KERNEL_TARGETS = {"cuda": ("__gpu$xla.gpu.triton",)}


def export(closed: Any, specs: list[Any], platform: str, interpret: Any = False,
           tpu_device_kind: str = CROSS_LOWERING_TPU,
           gpu_device_kind: str = CROSS_LOWERING_GPU, portable: bool = False,
           target: str | None = None) -> Any:
    """The ``jax.export.Exported`` of the traced computation for ``platform``. ``portable``:
    the glue lowered as for the CPU where JAX's rules differ per platform (the target export
    of an interpret-mode evaluation, which must match the interpret-mode export). The chip
    (``tpu_device_kind`` for ``tpu``, ``gpu_device_kind`` for ``cuda``, and for a ``cpu``
    export the chip of ``target``, "tpu" or "gpu", if given) is named in every equation's
    context (:func:`jaxbench.compat.on_chip`): what Mosaic's and Triton's lowering ask for
    the current device. The trace itself names no chip."""
    disabled = UNSTABLE_KERNEL_TARGETS.get(platform, ())
    chip_platform = platform if platform in ("tpu", "cuda") else \
        {"tpu": "tpu", "gpu": "cuda"}.get(target or "")
    if chip_platform is None:
        return compat.export_fn(compat.jaxpr_as_fun(with_interpret(closed, interpret)), specs,
                                platform, disabled)
    kind, cores = judged_chip(chip_platform, tpu_device_kind if chip_platform == "tpu"
                              else gpu_device_kind)
    closed = compat.on_chip(closed, chip_platform, kind, cores)
    if platform == "cpu":  # the interpret module: the CPU's own lowering around the kernels
        return compat.export_fn(compat.jaxpr_as_fun(with_interpret(closed, interpret)), specs,
                                platform, disabled)
    with compat.abstract_device(chip_platform, kind, cores), \
            compat.portable_glue(platform) if portable else contextlib.nullcontext():
        fn = compat.jaxpr_as_fun(with_interpret(closed, interpret))
        return compat.export_fn(fn, specs, platform, disabled)


def on_judged_chip(closed: Any, target: str, tpu_device_kind: str = CROSS_LOWERING_TPU,
                   gpu_device_kind: str = CROSS_LOWERING_GPU) -> Any:
    """``closed`` with the chip of ``target`` ("tpu" or "gpu") named in every equation's
    context, for what the judge runs from the jaxpr itself (the interpreters)."""
    platform = "tpu" if target == "tpu" else "cuda"
    kind, cores = judged_chip(platform, tpu_device_kind if target == "tpu" else gpu_device_kind)
    return compat.on_chip(closed, platform, kind, cores)


def judged_chip(platform: str, device_kind: str) -> tuple[str, int | None]:
    """(the device kind, the cores) lowering is told for ``device_kind``: the chip table's
    entry, as the tracer answered the kernel's questions (TensorCores of a TPU, SMs of a
    GPU)."""
    from jaxbench.backends.chips import chip_or_default

    entry = chip_or_default(device_kind, "tpu" if platform == "tpu" else "gpu")
    return entry.device_kind, entry.num_cores if entry.platform == "tpu" else entry.core_count
