"""Walking and rewriting traced jaxprs, shared by the judge (which lowers the hand-over) and the
tracer's debug run (``jaxbench eval --debug``, whose verdict never counts): the scan for
kernels, host callbacks and platform-dependent code, and the rewrite that wraps each kernel
equation in its own named ``jit`` with the ``interpret`` parameter a module needs."""

from __future__ import annotations

import itertools
from typing import Any

import jax

from jaxbench import compat

KERNEL_PREFIX = "jaxbench_kernel"


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
