"""The chip a kernel sees while it loads and is traced: the target's identity, on any host.

Kernels tune themselves at trace time: ``pltpu.get_tpu_info()`` (tiles from VMEM size), JAX's
ragged paged attention picks its block sizes from ``jax.devices()[0].device_kind`` (and fails
with "TPU version must be 4 or higher" anywhere else), megablox reads the device kind, JAX's
Mosaic GPU ops size their grids by ``backend.get_default_device().core_count``, Tokamax checks
``supported_on(get_default_device())`` and picks its Mosaic ragged dot for TPU or GPU from the
device kind, others branch on ``jax.default_backend()``. The tracer never has an accelerator
(``JAX_PLATFORMS=cpu``, also in device mode), so on its own every such question would be
answered by the CPU.

:func:`as_chip` answers them as the chip would, from the chip table
(:mod:`jaxbench.backends.chips`) that the memory rules read too. Every question it answers is
one row of :data:`QUESTIONS`: what the program asks, where the answer is installed, and how it
is answered (``tests/test_chip.py`` asks each row). The answers are plain replacements of the
public functions (and of Pallas' own two device questions behind ``get_tpu_info``), installed
only while the kernel loads and is traced and put back before the integrity check.

Nothing else changes for the program: no mesh or other context is entered, so
``jax.sharding.get_abstract_mesh()`` is empty as in plain JAX and a ``jax.shard_map`` or
``NamedSharding`` over a one-device mesh traces as it would on the chip. The chip's identity
reaches Mosaic's and Triton's lowering on the judge's side, which knows the chip from its
request and supplies it to every equation it lowers (``jaxbench.compat.on_chip``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jax

from jaxbench import compat
from jaxbench.backends.chips import Chip, chip_or_default


class ChipDevice:
    """What ``jax.devices()`` lists while a kernel is traced for a chip that is not attached."""

    __slots__ = ("_chip",)

    def __init__(self, chip: Chip) -> None:
        object.__setattr__(self, "_chip", chip)

    id = 0
    process_index = 0
    host_id = 0
    local_hardware_id = 0
    slice_index = 0

    @property
    def device_kind(self) -> str:
        return self._chip.device_kind

    @property
    def platform(self) -> str:
        return self._chip.platform

    def __getattr__(self, name: str) -> Any:
        chip = object.__getattribute__(self, "_chip")
        known = _identity(chip)
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

    def __str__(self) -> str:
        return f"{self._chip.platform.upper()}_0" if self._chip.platform == "tpu" else "cuda:0"


def _identity(chip: Chip) -> dict[str, int | str | tuple[int, int, int]]:
    """The attributes beyond kind and platform a device of the chip has."""
    if chip.platform == "tpu":
        return {"num_cores": chip.num_cores, "core_on_chip": 0, "coords": (0, 0, 0)}
    return {"compute_capability": chip.compute_capability, "core_count": chip.core_count}


@dataclass(frozen=True)
class Asked:
    """What one question is asked about: the chip's table entry, its device, the names a
    backend argument may give it, and the original answer (for questions about the host)."""

    chip: Chip
    device: ChipDevice
    original: Any

    def ours(self, backend: Any) -> bool:
        """``backend`` (None, a name, a platform) means the chip rather than the host."""
        names = {"tpu"} if self.chip.platform == "tpu" else {"gpu", "cuda"}
        return backend is None or str(backend).lower() in names


@dataclass(frozen=True)
class Question:
    """One question a program can ask about its hardware, and how the tracer answers it."""

    asks: str  # as the program writes it
    where: Callable[[], list[Any]]  # the namespaces holding the name the program calls
    name: str  # the attribute replaced in each of them
    answer: Callable[[Asked], Any]  # the replacement, made from what is asked about
    how: str  # the answer, in words


def _devices(asked: Asked) -> Any:
    def devices(backend: Any = None) -> list[Any]:
        return [asked.device] if asked.ours(backend) else asked.original(backend)

    devices.__doc__ = asked.original.__doc__
    return devices


def _local_devices(asked: Asked) -> Any:
    def local_devices(process_index: int | None = None, backend: Any = None,
                      host_id: int | None = None) -> list[Any]:
        if asked.ours(backend) and (process_index or host_id or 0) == 0:
            return [asked.device]
        return asked.original(process_index, backend, host_id)

    local_devices.__doc__ = asked.original.__doc__
    return local_devices


def _count(asked: Asked) -> Any:
    def count(backend: Any = None) -> int:
        return 1 if asked.ours(backend) else asked.original(backend)

    count.__doc__ = asked.original.__doc__
    return count


def _default_backend(asked: Asked) -> Any:
    def default_backend() -> str:
        return asked.chip.platform

    return default_backend


def _default_device(asked: Asked) -> Any:
    def get_default_device() -> Any:
        return asked.device

    return get_default_device


def _default_device_context(asked: Asked) -> Any:
    def default_device(device: Any) -> Any:
        # the chip's own device (or its platform) as the default: the host's default stays
        # what runs the traced computation, as the chip's would on the chip
        if device is asked.device or (isinstance(device, str) and asked.ours(device)):
            return asked.original(None)
        return asked.original(device)

    default_device.__doc__ = asked.original.__doc__
    return default_device


class _ConfigAsChip:
    """``jax.config`` with the reads that name the platform answered as the chip's host would;
    everything else (``update``, every other option) is JAX's own config."""

    __slots__ = ("_config", "_answers")

    def __init__(self, config: Any, answers: dict[str, str | None]) -> None:
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "_answers", answers)

    def __getattr__(self, name: str) -> Any:
        answers = object.__getattribute__(self, "_answers")
        if name in answers:
            return answers[name]
        return getattr(object.__getattribute__(self, "_config"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_config"), name, value)

    def read(self, name: str) -> Any:
        answers = object.__getattribute__(self, "_answers")
        if name in answers:
            return answers[name]
        return object.__getattribute__(self, "_config").read(name)

    @property
    def values(self) -> dict[str, Any]:
        return {**object.__getattribute__(self, "_config").values,
                **object.__getattribute__(self, "_answers")}


def _make_mesh(asked: Asked) -> Any:
    def make_mesh(axis_shapes: Any, axis_names: Any, *args: Any, devices: Any = None,
                  **kwargs: Any) -> Any:
        if devices is None:  # JAX's own choice is the host's devices: the chip's instead
            devices = [asked.device]
        return asked.original(axis_shapes, axis_names, *args, devices=devices, **kwargs)

    make_mesh.__doc__ = asked.original.__doc__
    return make_mesh


def _config(asked: Asked) -> Any:
    return _ConfigAsChip(asked.original, {
        "jax_platforms": "tpu" if asked.chip.platform == "tpu" else "cuda",
        "jax_default_device": None})


def _tpu_device_kind(asked: Asked) -> Any:
    def get_device_kind() -> str:
        return asked.chip.device_kind

    return get_device_kind


def _tpu_device_cores(asked: Asked) -> Any:
    def get_num_device_cores() -> int:
        return asked.chip.num_cores if asked.chip.platform == "tpu" else asked.chip.core_count

    return get_num_device_cores


def _jax() -> list[Any]:
    return [jax]


def _extend_backend() -> list[Any]:
    import jax.extend.backend

    return [jax.extend.backend]


QUESTIONS: tuple[Question, ...] = (
    Question("jax.devices(backend=None | 'tpu' | 'gpu' | 'cuda')", _jax, "devices", _devices,
             "[the chip's device]; any other backend (e.g. 'cpu') answers as before"),
    Question("jax.local_devices(process_index=0, backend=...)", _jax, "local_devices",
             _local_devices, "[the chip's device]; another process or backend as before"),
    Question("jax.device_count(backend)", _jax, "device_count", _count, "1"),
    Question("jax.local_device_count(backend)", _jax, "local_device_count", _count, "1"),
    Question("jax.default_backend()", _jax, "default_backend", _default_backend,
             "'tpu' or 'gpu'"),
    Question("jax.extend.backend.get_default_device()", _extend_backend, "get_default_device",
             _default_device, "the chip's device"),
    Question("jax.make_mesh(shape, names) (no devices given)", _jax, "make_mesh", _make_mesh,
             "a mesh over the chip's device, as jax.sharding.Mesh(jax.devices(), ...) is"),
    Question("jax.default_device(the chip's device)", _jax, "default_device",
             _default_device_context, "accepted; the host's default device stays in place"),
    Question("jax.config.jax_platforms, jax.config.jax_default_device, jax.config.read(...)",
             _jax, "config", _config,
             "'tpu' or 'cuda' (the chip's platform only); no default device set (None)"),
    Question("pltpu.get_tpu_info(), pltpu.is_tpu_device() (Pallas' device kind)",
             compat.tpu_info_modules, "get_device_kind", _tpu_device_kind,
             "the chip's device kind"),
    Question("pltpu.get_tpu_info() (Pallas' number of cores)", compat.tpu_info_modules,
             "get_num_device_cores", _tpu_device_cores,
             "the chip's TensorCores (TPU), SMs (GPU)"),
)
"""Every question :func:`as_chip` answers. A device's own attributes are answered by
:class:`ChipDevice`: ``device_kind``, ``platform``, ``id`` 0, and for a TPU ``num_cores`` and
coordinates, for a GPU ``compute_capability`` and ``core_count``; any other raises
AttributeError naming why."""


@contextlib.contextmanager
def as_chip(platform: str, device_kind: str) -> Iterator[Chip]:
    """Within: the kernel's questions about its hardware (:data:`QUESTIONS`) answer as
    ``device_kind`` would (``platform``: "tpu", or "cuda"/"gpu"). Yields the chip's table
    entry."""
    chip = chip_or_default(device_kind, "tpu" if platform == "tpu" else "gpu")
    device = ChipDevice(chip)
    saved: list[tuple[Any, str, Any]] = []
    try:
        for question in QUESTIONS:
            for namespace in question.where():
                original = getattr(namespace, question.name, None)
                if original is None:
                    continue
                answer = question.answer(Asked(chip, device, original))
                saved.append((namespace, question.name, original))
                setattr(namespace, question.name, answer)
        compat.forget_tpu_info()  # answers JAX cached for another chip or for the host
        yield chip
    finally:
        for namespace, name, original in reversed(saved):
            setattr(namespace, name, original)
        compat.forget_tpu_info()
