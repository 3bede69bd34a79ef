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
import itertools
from typing import Any

import jax

from jaxbench import compat

KERNEL_PREFIX = "jaxbench_kernel"
# The chips kernels are lowered for when none is attached: a contract with the parent, kept in
# evaluator/result.py.
from jaxbench.evaluator.result import (  # noqa: E402, F401 - re-exported
    CROSS_LOWERING_GPU,
    CROSS_LOWERING_TPU,
)

# Triton's custom call has no export compatibility guarantee; the judge allow-lists it itself.
UNSTABLE_KERNEL_TARGETS = {"cuda": ("__gpu$xla.gpu.triton",)}


def _kernel_wrapper(eqn: Any, interpret: Any, index: int) -> Any:
    """A ``pjit`` equation named ``jaxbench_kernel_<i>`` holding only ``eqn`` (rebound with
    ``interpret``), with ``eqn``'s own operands and results."""
    params = {**eqn.params, "interpret": interpret}
    if not isinstance(interpret, bool):  # the TPU interpreter's parameters: the race probe
        params["compiler_params"] = _semantics_for_every_axis(eqn.params)
    primitive = eqn.primitive

    def body(*args: Any) -> Any:
        out = primitive.bind(*args, **params)
        return out if primitive.multiple_results else [out]

    body.__name__ = body.__qualname__ = f"{KERNEL_PREFIX}_{index}"
    avals = [v.aval for v in eqn.invars]
    with eqn.ctx.manager:  # the wrapper in the kernel's own context (mesh, chip)
        wrapped = jax.make_jaxpr(jax.jit(body))(*avals)
    (call,) = wrapped.jaxpr.eqns
    return call.replace(invars=list(eqn.invars), outvars=list(eqn.outvars))


def _semantics_for_every_axis(params: dict[str, Any]) -> Any:
    """The kernel's compiler parameters with a dimension semantic for every grid axis. ``vmap``
    of a kernel adds grid axes in front without extending ``dimension_semantics``, which the
    TPU interpreter cannot handle (it zips the two); the added axes are independent batch
    entries, so they are ``parallel`` (and parallel axes must come first)."""
    compiler_params = params.get("compiler_params")
    grid = getattr(params.get("grid_mapping"), "grid", ()) or ()

    def padded(p: Any) -> Any:
        semantics = getattr(p, "dimension_semantics", None)
        if semantics is None or len(semantics) >= len(grid) or not hasattr(p, "replace"):
            return p
        return p.replace(dimension_semantics=("parallel",) * (len(grid) - len(semantics))
                         + tuple(semantics))

    if isinstance(compiler_params, dict):
        return {k: padded(v) for k, v in compiler_params.items()}
    return padded(compiler_params)


def with_interpret(closed: Any, interpret: Any) -> Any:
    """``closed`` with every kernel equation wrapped in a named jit and set to ``interpret``."""
    counter = itertools.count()
    return compat.ClosedJaxpr(compat.rewrite_jaxpr(closed.jaxpr, lambda eqn: _kernel_wrapper(
        eqn, interpret, next(counter)) if compat.is_kernel(eqn) else None), closed.consts)


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


CALLBACK_PRIMITIVES = ("pure_callback", "io_callback", "debug_callback", "callback")


class Scan:
    """Kernel equations, host callbacks and platform-dependent code found anywhere in a jaxpr
    (kernel bodies included)."""

    def __init__(self) -> None:
        self.kernels = 0
        self.callbacks: list[str] = []
        self.kernel_eqns: list[Any] = []
        self.own_interpret: list[str] = []  # kernels that set `interpret` themselves
        self.platform_dependent = 0
        self.primitives: dict[int, Any] = {}  # every primitive used, kernel bodies included


sub_jaxprs = compat.sub_jaxprs


def _scan(jaxpr: Any, found: Scan) -> None:
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        found.primitives[id(eqn.primitive)] = eqn.primitive
        if compat.is_kernel(eqn):
            mapping = eqn.params.get("grid_mapping")
            for block in getattr(mapping, "block_mappings", ()) or ():
                index_map = getattr(block, "index_map_jaxpr", None)
                if index_map is not None:
                    _scan(getattr(index_map, "jaxpr", index_map), found)
            found.kernels += 1
            found.kernel_eqns.append(eqn)
            if eqn.params.get("interpret"):
                found.own_interpret.append(repr(eqn.params["interpret"])[:60])
        if name in CALLBACK_PRIMITIVES:
            found.callbacks.append(name)
        if eqn.primitive is compat.platform_index_primitive():
            found.platform_dependent += 1
        for sub in sub_jaxprs(eqn.params):
            _scan(sub, found)


def scan(closed: Any) -> Scan:
    found = Scan()
    _scan(closed.jaxpr, found)
    return found
