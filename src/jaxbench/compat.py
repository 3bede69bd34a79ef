"""The one place jaxbench touches JAX APIs that moved or are private (JAX 0.10 to 0.12).

Everything version-dependent goes through here, so a JAX upgrade is one file to
review. Each helper says what it wraps.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import jax
from jax.extend import core as jex_core

ClosedJaxpr = jex_core.ClosedJaxpr
Jaxpr = jex_core.Jaxpr
jaxpr_as_fun = jex_core.jaxpr_as_fun



_KERNEL_PRIMITIVE_NAMES = ("pallas_call_p", "core_map_p")


@functools.cache
def kernel_primitives() -> tuple[Any, ...]:
    """The Pallas primitives whose lowering *is* a kernel (they carry an ``interpret``
    parameter), as objects: a user primitive that merely has the same name is not one.
    Found in whichever of JAX's Pallas modules defines them (they move between versions)."""
    import importlib
    import sys

    for name in ("jax._src.pallas.pallas_call", "jax._src.pallas.core",
                 "jax._src.pallas.primitives", "jax.experimental.pallas"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    found: dict[str, Any] = {}
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith("jax._src.pallas"):
            continue
        for attribute in _KERNEL_PRIMITIVE_NAMES:
            value = getattr(module, attribute, None)
            if value is not None and attribute not in found:
                found[attribute] = value
    if "pallas_call_p" not in found:
        raise RuntimeError(f"pallas_call_p not found in JAX {jax.__version__}: update "
                           "jaxbench.compat.kernel_primitives")
    return tuple(found.values())


def is_kernel(eqn: Any) -> bool:
    return any(eqn.primitive is p for p in kernel_primitives())


def platform_index_primitive() -> Any:
    """``lax.platform_dependent``'s primitive: code whose lowering differs per platform."""
    from jax._src.lax.control_flow import conditionals

    return conditionals.platform_index_p


def join_effects(eqns: list[Any]) -> Any:
    """The effect set of a list of equations (``jax._src.core.join_effects``)."""
    from jax._src import core

    return core.join_effects(*(e.effects for e in eqns))


def tpu_interpret_params(**params: Any) -> Any:
    from jax.experimental.pallas import tpu as pltpu

    return pltpu.InterpretParams(**params)


@contextlib.contextmanager
def abstract_device(platform: str, device_kind: str) -> Iterator[None]:
    """Lowering for a chip that is not attached: Mosaic asks the "current device" for its TPU
    generation, and from JAX 0.11 Pallas' Triton lowering asks it for the GPU's compute
    capability; an abstract mesh naming the chip answers both."""
    from jax._src import mesh as mesh_lib

    kind = "tpu" if platform == "tpu" else "gpu"
    device = mesh_lib.AbstractDevice(device_kind=device_kind, num_cores=1 if kind == "tpu" else None,
                                     platform=kind)
    with jax.sharding.use_abstract_mesh(
            jax.sharding.AbstractMesh((1,), ("cross_lowering",), abstract_device=device)):
        yield


def abstract_tpu(device_kind: str) -> Any:
    return abstract_device("tpu", device_kind)


def export_fn(fn: Any, specs: list[Any], platform: str, disabled_custom_calls: tuple[str, ...] = ()
              ) -> Any:
    """``jax.export.export`` of ``jax.jit(fn)`` for one platform."""
    from jax import export

    checks = [export.DisabledSafetyCheck.custom_call(t) for t in disabled_custom_calls]
    return export.export(jax.jit(fn), platforms=[platform], disabled_checks=checks)(*specs)


def deserialize(data: bytes) -> Any:
    from jax import export

    return export.deserialize(bytearray(data))


def tpu_interpreter_state() -> Any:
    """The TPU interpreter's module (race flags, state reset)."""
    from jax._src.pallas.mosaic.interpret import interpret_pallas_call

    return interpret_pallas_call


def tpu_races_found() -> bool:
    """Whether the last TPU-interpreter run with ``detect_races`` found a data race."""
    races = getattr(tpu_interpreter_state(), "races", None)
    return bool(races is not None and races.races_found)


def user_frame(eqn: Any) -> tuple[str, int] | None:
    """(file name, line) of the first non-JAX frame that made an equation, or None."""
    from jax._src import source_info_util

    info = getattr(eqn, "source_info", None)
    traceback = getattr(info, "traceback", None)
    if traceback is None:
        return None
    try:
        frame = source_info_util.user_frame(traceback)
    except Exception:  # noqa: BLE001 - an internal API that may change shape
        return None
    if frame is None:
        return None
    return frame.file_name, int(frame.start_line)
