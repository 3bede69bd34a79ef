"""The chip a kernel sees while it loads and is traced: the target's identity, on any host.

Kernels tune themselves at trace time: ``pltpu.get_tpu_info()`` (tiles from VMEM size), JAX's
ragged paged attention picks its block sizes from ``jax.devices()[0].device_kind`` (and fails
with "TPU version must be 4 or higher" anywhere else), megablox reads the device kind, JAX's
Mosaic GPU ops size their grids by ``jax.devices()[0].core_count``, others branch on
``jax.default_backend()``. The tracer never has an accelerator (``JAX_PLATFORMS=cpu``, also in
device mode), so on its own every such question would be answered by the CPU.

:func:`as_chip` answers them as the chip would, from the chip table
(:mod:`jaxbench.backends.chips`) that the memory rules read too:

- the abstract mesh's device (what Pallas' own ``get_tpu_info`` / ``get_device_kind``, JAX's
  Mosaic GPU matmuls and, from JAX 0.11, Triton's lowering read): the chip's kind and its
  TensorCores (TPU) or SMs (GPU), as JAX's own meshes fill it in;
- ``jax.devices()`` / ``jax.local_devices()`` (no backend, or the target's): one
  :class:`ChipDevice` with the chip's identity (kind, platform, id 0, TPU ``num_cores`` and
  coordinates, GPU ``compute_capability`` and ``core_count``); any other attribute (memory,
  client, ...) raises AttributeError naming why;
- ``jax.default_backend()``: ``"tpu"`` or ``"gpu"``.

Only the public names in the ``jax`` namespace are answered for the chip (JAX's internals
ask ``xla_bridge`` and still see the CPU, which runs the interpret-mode check), and only while
the kernel loads and is traced; the originals are put back before the integrity check.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import jax

from jaxbench import compat
from jaxbench.backends.chips import Chip, chip_or_default

_ANSWERED = ("devices", "local_devices", "default_backend")


class ChipDevice:
    """What ``jax.devices()`` lists while a kernel is traced for a chip that is not attached."""

    __slots__ = ("_chip",)

    def __init__(self, chip: Chip) -> None:
        object.__setattr__(self, "_chip", chip)

    id = 0
    process_index = 0
    host_id = 0
    local_hardware_id = 0

    @property
    def device_kind(self) -> str:
        return self._chip.device_kind

    @property
    def platform(self) -> str:
        return self._chip.platform

    def __getattr__(self, name: str) -> Any:
        chip = object.__getattribute__(self, "_chip")
        tpu = chip.platform == "tpu"
        known = {"num_cores": chip.num_cores, "core_on_chip": 0, "coords": (0, 0, 0)} if tpu \
            else {"compute_capability": chip.compute_capability, "core_count": chip.core_count}
        if name in known:
            return known[name]
        raise AttributeError(
            f"{name!r}: this kernel is traced for a {chip.device_kind} that is not attached to "
            "this process, so only the chip's identity can be asked while tracing (device_kind, "
            f"platform, id, {', '.join(known)})")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"the chip's device is read-only ({name!r})")

    def __repr__(self) -> str:
        if self._chip.platform == "tpu":
            return "TpuDevice(id=0, process_index=0, coords=(0,0,0), core_on_chip=0)"
        return "CudaDevice(id=0)"


@contextlib.contextmanager
def as_chip(platform: str, device_kind: str) -> Iterator[Chip]:
    """Within: the kernel's questions about its hardware answer as ``device_kind`` would
    (``platform``: "tpu", or "cuda"/"gpu"). Yields the chip's table entry."""
    chip = chip_or_default(device_kind, "tpu" if platform == "tpu" else "gpu")
    device = ChipDevice(chip)
    names = {"tpu"} if chip.platform == "tpu" else {"gpu", "cuda"}
    saved = {name: getattr(jax, name) for name in _ANSWERED}

    def ours(backend: Any) -> bool:
        return backend is None or str(backend).lower() in names

    def devices(backend: Any = None) -> list[Any]:
        return [device] if ours(backend) else saved["devices"](backend)

    def local_devices(process_index: int | None = None, backend: Any = None,
                      host_id: int | None = None) -> list[Any]:
        if ours(backend) and (process_index or host_id or 0) == 0:
            return [device]
        return saved["local_devices"](process_index, backend, host_id)

    def default_backend() -> str:
        return chip.platform

    for fn, original in ((devices, saved["devices"]), (local_devices, saved["local_devices"])):
        fn.__doc__ = original.__doc__
    cores = chip.num_cores if chip.platform == "tpu" else chip.core_count
    with compat.abstract_device(platform, chip.device_kind, num_cores=cores):
        jax.devices, jax.local_devices, jax.default_backend = \
            devices, local_devices, default_backend
        try:
            yield chip
        finally:
            for name, value in saved.items():
                setattr(jax, name, value)
