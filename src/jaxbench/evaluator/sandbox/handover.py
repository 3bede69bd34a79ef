"""The one artefact the untrusted tracer hands over: its traced jaxprs, as bytes.

The tracer (the candidate's process) writes nothing else that the judge reads. The bytes are a
pickle of plain data — JAX's jaxpr, aval and Pallas parameter objects, NumPy arrays, strings —
in which every JAX primitive is written as a persistent reference, its name and the module
attribute JAX keeps it under (``("primitive", "add", "jax._src.lax.lax:add_p")``), never as an
object; the judge (:mod:`jaxbench.evaluator.judge.jaxpr_reader`) resolves those from its own
JAX and reads the rest with an allow-list of classes. Before pickling:

- custom derivative and custom vmap wrappers are replaced by a ``jit`` call of their primal
  computation (their rules are Python callables, which are not data and are never needed to
  run the forward computation); a host callback's functions become their type names (the
  judge refuses the callback itself);
- tracebacks are dropped: each equation made outside JAX keeps its ``(file, line)`` for
  messages, and debug information keeps strings only;
- device arrays become NumPy arrays, and concrete meshes (a ``shard_map``'s, a
  ``NamedSharding``'s) their abstract meshes: axes and the device kind they name;
- a TensorCore mesh (``pl.kernel``/``core_map`` over ``pltpu.create_tensorcore_mesh``), whose
  devices are an object array, becomes its description (axis names, shape), which the judge
  rebuilds; a PRNG implementation (a tuple of functions) its registered name, and a concrete
  key array that name and its ``uint32`` data.

Nothing here is trusted: it runs beside candidate code, which may have replaced any of it.
Whatever these bytes say, the judge checks.
"""

from __future__ import annotations

import io
import pickle
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from jaxbench import compat
from jaxbench.evaluator.common.jaxpr_format import (
    FORMAT,
    PRIMITIVE_TAG,
    PRNG_IMPL_TAG,
    PRNG_KEY_TAG,
    TENSORCORE_MESH_TAG,
    primitive_registry,
    singletons,
)

if TYPE_CHECKING:
    from jax.extend.core import ClosedJaxpr


def primitive_keys() -> dict[int, str]:
    """``id(primitive) -> "module:attribute"``: the judge's registry, inverted (the first
    place in sorted order where a primitive is kept)."""
    keys: dict[int, str] = {}
    for key, primitive in sorted(primitive_registry().items(), reverse=True):
        keys[id(primitive)] = key
    return keys


_CUSTOM_DERIVATIVES = ("custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr", "custom_vmap_call")


def _primal(eqn: Any) -> Any:
    """A ``jit`` call of a custom derivative wrapper's primal computation (what every Pallas
    backend lowers inside a kernel), or a ``closed_call`` where it takes references."""
    from jax._src import core

    inner = eqn.params.get("call_jaxpr", eqn.params.get("call"))
    if not isinstance(inner, compat.ClosedJaxpr):
        inner = compat.ClosedJaxpr(inner, ())
    inner = inline_custom_derivatives(inner)
    called = compat.as_jit_call(eqn, inner, eqn.primitive.name)
    if called is not None:
        return called
    return eqn.replace(primitive=core.closed_call_p, params={"call_jaxpr": inner})


# Host callbacks: their Python function is not data. The judge refuses the primitive by name,
# so the function is handed over as its name only.
_CALLBACKS = ("pure_callback", "io_callback", "debug_callback", "callback")


def _handed_over(eqn: Any) -> Any:
    """An equation as it is handed over, or None when only its sub-jaxprs change."""
    if eqn.primitive.name in _CUSTOM_DERIVATIVES and isinstance(
            eqn.params.get("call_jaxpr", eqn.params.get("call")),
            (compat.ClosedJaxpr, compat.Jaxpr)):
        return _primal(eqn)
    if eqn.primitive.name in _CALLBACKS:
        return eqn.replace(params={k: f"<{type(v).__name__}>" if callable(v) else v
                                   for k, v in eqn.params.items()})
    return None


def inline_custom_derivatives(closed: Any) -> Any:
    """``closed`` with every custom derivative wrapper, at any depth, replaced by a call of its
    primal computation, and host callbacks' functions replaced by their type names."""
    return compat.ClosedJaxpr(compat.rewrite_jaxpr(closed.jaxpr, _handed_over), closed.consts)


class _Pickler(pickle.Pickler):
    def __init__(self, file: Any, keys: dict[int, str]) -> None:
        super().__init__(file, protocol=4)
        from jax._src import core, literals, source_info_util
        from jax._src import linear_util as lu
        from jax._src.state import types as state_types

        self._keys = keys
        self._singletons = {id(value): name for name, value in singletons().items()}
        self._primitive, self._tracer, self._context = (core.Primitive, core.Tracer,
                                                        core.JaxprEqnContext)
        self._source_info, self._debug_info = source_info_util.SourceInfo, lu.DebugInfo
        self._transformed_ref = state_types.TransformedRef
        self._typed_array = getattr(literals, "TypedNdArray", None)
        self._mesh = jax.sharding.Mesh
        prng = compat.prng_module()
        self._prng = (prng.PRNGImpl, prng.PRNGKeyArray) if prng is not None else ()
        tensorcore = compat.tensorcore_classes()
        self._tensorcore_mesh = tensorcore[0] if tensorcore is not None else ()

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, self._primitive):
            return (PRIMITIVE_TAG, str(obj.name), self._keys.get(id(obj), ""))
        if isinstance(obj, self._tracer):
            # JAX 0.12 leaves the enclosing trace's values attached to some inner jaxprs
            # (Mosaic GPU's run_scoped); lowering reads their types only
            return ("abstract", obj.aval)
        if id(obj) in self._singletons:  # compared by identity: named, not copied
            return ("singleton", self._singletons[id(obj)])
        if self._prng and isinstance(obj, self._prng):
            # a PRNG implementation is a tuple of functions, which are not data: named as JAX
            # registered it; a key array as its implementation's name and its uint32 data
            name = compat.prng_impl_name(obj)
            if name is not None:
                return (PRNG_IMPL_TAG, name)
            parts = compat.prng_key_parts(obj)
            if parts is not None:
                return (PRNG_KEY_TAG, parts[0], parts[1])
            return None  # a kernel's own implementation: the judge refuses what it holds
        if self._tensorcore_mesh and type(obj) is self._tensorcore_mesh:
            # its devices are TensorCore objects (an object array): handed over as its
            # description, rebuilt by the judge
            description = compat.tensorcore_mesh_description(obj)
            if description is not None:
                return (TENSORCORE_MESH_TAG, *description)
        if type(obj) is self._context:
            # it pickles as "the context current when unpickled"; what it holds is named here,
            # field by field in the order JAX's constructor takes them (compat: by version)
            return ("eqn_context", compat.eqn_context_fields(obj))
        return None

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, jax.Array):
            return np.asarray(obj).__reduce_ex__(4)
        if isinstance(obj, self._mesh):
            # a concrete mesh (shard_map's, a NamedSharding's) holds devices, which are not
            # data: handed over as its abstract mesh (axes and the device it names)
            return obj.abstract_mesh.__reduce_ex__(4)
        if isinstance(obj, self._source_info):
            return (self._source_info, (None, obj.name_stack))
        if isinstance(obj, self._debug_info):
            paths = obj.result_paths
            paths = tuple(str(p) for p in paths) if isinstance(paths, (tuple, list)) else None
            names = obj.arg_names
            names = tuple(str(n) for n in names) if isinstance(names, (tuple, list)) else None
            return (self._debug_info, (str(obj.traced_for), str(obj.func_src_info or ""),
                                       names, paths))
        if self._typed_array is not None and type(obj) is self._typed_array:
            # its own __reduce__ passes a bool where its constructor takes the aval (JAX 0.10)
            return (self._typed_array, (np.asarray(obj), obj.aval))
        if isinstance(obj, self._transformed_ref):  # its __getattr__ defeats default unpickling
            return (self._transformed_ref, (obj.ref, obj.transforms))
        return NotImplemented


def _lines(closed: Any) -> list[tuple[Any, tuple[str, int]]]:
    """``(equation, (file, line))`` for equations made outside JAX, kernel bodies included:
    the judge's messages name the kernel file's line."""
    found = []
    for eqn in compat.walk_eqns(closed.jaxpr):
        frame = compat.user_frame(eqn)
        if frame is not None:
            found.append((eqn, (str(frame[0]), int(frame[1]))))
    return found


def dumps(traces: dict[str, ClosedJaxpr]) -> bytes:
    """The hand-over: ``traces`` (size -> closed jaxpr of ``kernel``), inlined and pickled."""
    inlined = {size: inline_custom_derivatives(closed) for size, closed in traces.items()}
    payload = {"format": FORMAT, "traces": inlined,
               "lines": {size: _lines(closed) for size, closed in inlined.items()}}
    buffer = io.BytesIO()
    _Pickler(buffer, primitive_keys()).dump(payload)
    return buffer.getvalue()
