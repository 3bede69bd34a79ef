"""Reading the untrusted tracer's hand-over: its traced jaxprs, as data.

The bytes come from the process that ran candidate code, so they are read as hostile:

1. **caps before anything is built**: at most :data:`MAX_BYTES`; the pickle's opcodes are
   walked (:mod:`pickletools`, which builds nothing) to count them and to bound the nesting
   depth of what they would build (a deep structure would exhaust recursion later);
2. **an allow-list of classes**: :class:`_Reader` resolves only the classes, enums and JAX
   helper functions in :data:`ALLOWED` (JAX's jaxpr, aval, sharding, Pallas grid, block-spec,
   compiler-parameter and transform types, PRNG key types; NumPy and ml_dtypes arrays and
   dtypes, never the ``object`` dtype), plus the parameter classes derived from JAX itself
   (:func:`derived_classes`: every enum, dataclass and NamedTuple the modules that define
   JAX's registered primitives can name, none callable); any other class JAX really defines
   is ``unverified`` and named (a gap of the reader), anything else ``rejected``;
   JAX's objects that are not data (a PRNG implementation's functions, a TensorCore mesh's
   devices) arrive as descriptions and are rebuilt here;
3. **primitives by name from JAX's own registry**: a primitive is a persistent reference
   ``("primitive", name, "module:attribute")``, resolved to the object this process's JAX
   keeps at that module attribute, whose name must match; no other way to make a primitive
   exists, so no user primitive or user lowering rule reaches this side;
4. **the shape of the payload**: a dict of closed jaxprs, one per task size, each walked once
   (equations bounded in number), with lines for messages as ``(file, line)`` pairs.

Whatever passes is then lowered, checked and run by JAX's own code in this process
(:mod:`jaxbench.evaluator.judge.runner`). A pickle that crashes the reader's process ends as
``crashed`` (the runner is replaced), never as a verdict for the kernel.
"""

from __future__ import annotations

import io
import math
import pickle
import pickletools
import re
import sys
from typing import TYPE_CHECKING, Any, TypedDict

from jaxbench import compat
from jaxbench.contract import Rule, Stage, StageFailure, Status
from jaxbench.evaluator.common.jaxpr_format import (
    FORMAT,
    PRIMITIVE_ROOTS,
    PRIMITIVE_TAG,
    PRNG_IMPL_TAG,
    PRNG_KEY_TAG,
    TENSORCORE_MESH_TAG,
    import_jax_modules,
    primitive_registry,
    singletons,
)

if TYPE_CHECKING:
    from jax.extend.core import ClosedJaxpr, Primitive

MAX_BYTES = 64 << 20
MAX_OPCODES = 4_000_000
MAX_DEPTH = 400
MAX_EQUATIONS = 1_000_000
MAX_MESH_CORES = 1024  # cores of a TensorCore mesh rebuilt from its description

# Everything the hand-over may name, as "module:qualified name"; a name this JAX version does
# not have is left out (tests/test_handover.py checks every shipped kernel's hand-over against
# this list on each supported JAX version).
_ALLOWED_NAMES = (
    # jaxprs and their values
    "jax._src.core:ClosedJaxpr", "jax._src.core:Jaxpr", "jax._src.core:JaxprEqn",
    "jax._src.core:Var", "jax._src.core:DropVar",
    "jax._src.core:Literal", "jax._src.core:ShapedArray", "jax._src.core:DShapedArray",
    "jax._src.core:ManualAxisType", "jax._src.core:MemorySpace", "jax._src.core:NamedAxisEffect",
    "jax._src.linear_util:DebugInfo", "jax._src.core:DebugInfo",
    "jax._src.literals:TypedInt", "jax._src.literals:TypedFloat",
    "jax._src.literals:TypedComplex", "jax._src.literals:TypedNdArray",
    "jax._src.source_info_util:SourceInfo", "jax._src.source_info_util:NameStack",
    "jax._src.source_info_util:Scope", "jax._src.source_info_util:Transform",
    "jax._src.frozen_dict:FrozenDict", "jax._src.api:Inline", "jax._src.util:Either",
    "jax._src.layout:LayoutMode",
    "jax._src.flattree:FTTuple", "jax._src.flattree:FTSingleton", "jax._src.flattree:FTFiltered",
    "jax._src.numpy.hijax:SearchSorted",
    # shardings and meshes (abstract only: devices are never data)
    "jax:P", "jax.sharding:PartitionSpec", "jax._src.partition_spec:PartitionSpec",
    "jax._src.partition_spec:UnconstrainedSingleton",
    "jax._src.mesh:AbstractDevice", "jax._src.mesh:AbstractMesh", "jax._src.mesh:AxisType",
    "jax._src.named_sharding:UnspecifiedValue", "jax._src.named_sharding:_unpickle_named_sharding",
    "jax._src.sharding_impls:UnspecifiedValue",
    # pytrees (the registries by reference; a custom node's class must be on this list too)
    "jax._src.tree_util:default_registry", "jax._src.tree_util:tracing_registry",
    "jaxlib._jax.pytree:PyTreeDef", "jaxlib.xla_extension.pytree:PyTreeDef",
    # lax parameters
    "jax._src.lax.lax:Precision", "jax._src.lax.lax:DotAlgorithmPreset",
    "jax._src.lax.lax:RoundingMethod", "jax._src.lax.lax:AccuracyMode",
    "jax._src.lax.lax:RaggedDotDimensionNumbers", "jax.experimental.sparse.util:SparseInfo",
    "jax._src.lax.control_flow.solves:_LinearSolveTuple",
    "jax._src.lax.slicing:GatherDimensionNumbers", "jax._src.lax.slicing:GatherScatterMode",
    "jax._src.lax.slicing:ScatterDimensionNumbers", "jax._src.lax.convolution:ConvDimensionNumbers",
    "jax._src.lax.lax:DotDimensionNumbers", "jax._src.lax.parallel:ReduceScatterRule",
    "jax._src.indexing:Slice", "jax._src.state.indexing:NDIndexer",
    "jax._src.state.indexing:Slice",
    # state
    "jax._src.state.types:AbstractRef", "jax._src.state.types:ReadEffect",
    "jax._src.state.types:WriteEffect", "jax._src.state.types:AccumEffect",
    "jax._src.state.types:TransformedRef", "jax._src.state.types:BitcastTransform",
    "jax._src.state.types:ReshapeTransform", "jax._src.state.types:TransposeTransform",
    "jax._src.state.types:RefBitcaster", "jax._src.state.types:RefReshaper",
    # PRNG key types (an implementation is handed over by its registered name)
    "jax._src.random.prng:KeyTy", "jax._src.prng:KeyTy",
    # Pallas
    "jax._src.pallas.core:BlockMapping", "jax._src.pallas.core:GridMapping",
    "jax._src.pallas.core:Blocked", "jax._src.pallas.core:Element", "jax._src.pallas.core:Squeezed",
    "jax._src.pallas.core:BoundedSlice", "jax._src.pallas.core:CostEstimate",
    "jax._src.pallas.core:DynamicGridDim", "jax._src.pallas.core:MemorySpace",
    "jax._src.pallas.core:MemoryRef", "jax._src.pallas.core:Buffered",
    "jax._src.pallas.core:NameAndSrcInfo", "jax._src.pallas.core:PallasGridContext",
    "jax._src.pallas.core:AbstractMemoryRef", "jax._src.pallas.core:ScratchShape",
    "jax._src.pallas.core:semaphore", "jax._src.pallas.core:Semaphore",
    "jax._src.pallas.core:SemaphoreType", "jax._src.pallas.core:AbstractSemaphoreTy",
    "jax._src.pallas.core:barrier_semaphore", "jax._src.pallas.core:dma_semaphore",
    "jax._src.pallas.core:CoreType",
    "jax._src.pallas.primitives:DeviceIdType",
    "jax._src.pallas.mosaic.core:CompilerParams", "jax._src.pallas.mosaic.core:MemorySpace",
    "jax._src.pallas.mosaic.core:DMASemaphore", "jax._src.pallas.mosaic.core:SemaphoreType",
    "jax._src.pallas.mosaic.core:GridDimensionSemantics", "jax._src.pallas.mosaic.core:KernelType",
    "jax._src.pallas.mosaic.core:TensorCoreMesh", "jax._src.pallas.mosaic.core:CoreType",
    "jax._src.pallas.mosaic.core:dma_semaphore", "jax._src.pallas.mosaic.core:semaphore",
    "jax._src.pallas.mosaic.core:barrier_semaphore",
    "jax._src.pallas.mosaic.core:AbstractSemaphoreTy", "jax._src.pallas.mosaic.core:Semaphore",
    "jax._src.pallas.triton.core:CompilerParams",
    "jax._src.pallas.mosaic_gpu.core:CompilerParams", "jax._src.pallas.mosaic_gpu.core:Layout",
    "jax._src.pallas.mosaic_gpu.core:ParameterizedLayout",
    "jax._src.pallas.mosaic_gpu.core:ReducedLayout", "jax._src.pallas.mosaic_gpu.core:MemorySpace",
    "jax._src.pallas.mosaic_gpu.core:SwizzleTransform",
    "jax._src.pallas.mosaic_gpu.core:TilingTransform",
    "jax._src.pallas.mosaic_gpu.core:UnswizzleRef", "jax._src.pallas.mosaic_gpu.core:UntilingRef",
    "jax._src.pallas.mosaic_gpu.core:UntilingTransform",
    "jax._src.pallas.mosaic_gpu.core:TransposeTransform",
    "jax._src.pallas.mosaic_gpu.core:TransposeRef",
    "jax._src.pallas.mosaic_gpu.core:PeerMemRef",
    "jax._src.pallas.mosaic_gpu.core:TraceScope",
    "jax._src.pallas.mosaic_gpu.core:WGMMAAbstractAccumulatorRef",
    "jax._src.pallas.mosaic_gpu.core:WGMMAAccumulatorRef",
    "jax._src.pallas.mosaic_gpu.core:_WGMMAPipelineEffect",
    "jax._src.pallas.mosaic_gpu.core:MemoryEffect",
    "jax._src.pallas.mosaic_gpu.core:Mesh", "jax._src.pallas.mosaic_gpu.core:GPUMesh",
    "jax._src.pallas.mosaic_gpu.core:BarrierType", "jax._src.pallas.mosaic_gpu.core:Barrier",
    "jax._src.pallas.mosaic_gpu.core:ClusterBarrierType",
    "jax._src.pallas.mosaic_gpu.core:AbstractTMEMRef", "jax._src.pallas.mosaic_gpu.core:TMEMLayout",
    "jax._src.pallas.mosaic_gpu.core:SemaphoreType",
    "jax._src.pallas.mosaic_gpu.core:GPUMemoryRef", "jax._src.pallas.mosaic_gpu.core:RefUnion",
    "jax._src.pallas.mosaic_gpu.core:AbstractRefUnion",
    "jax.experimental.mosaic.gpu.core:LoweringSemantics",
    "jax.experimental.mosaic.gpu.launch_context:OOBFillMode",
    "jax.experimental.mosaic.gpu.fragmented_array:WGStridedFragLayout",
    "jax.experimental.mosaic.gpu.fragmented_array:WGSplatFragLayout",
    "jax.experimental.mosaic.gpu.fragmented_array:TiledLayout",
    "jax.experimental.mosaic.gpu.fragmented_array:Tiling",
    "jax.experimental.mosaic.gpu.fragmented_array:Replicated",
    # NumPy and ml_dtypes (numpy.dtype is wrapped: no object dtype)
    "numpy:ndarray", "numpy._core.multiarray:_reconstruct", "numpy.core.multiarray:_reconstruct",
    "numpy._core.multiarray:scalar", "numpy.core.multiarray:scalar",
    "ml_dtypes:bfloat16", "ml_dtypes:float8_e4m3fn", "ml_dtypes:float8_e5m2",
    "ml_dtypes:float8_e4m3b11fnuz", "ml_dtypes:float8_e4m3fnuz", "ml_dtypes:float8_e5m2fnuz",
    "ml_dtypes:float8_e3m4", "ml_dtypes:float8_e4m3", "ml_dtypes:float8_e8m0fnu",
    "ml_dtypes:float4_e2m1fn", "ml_dtypes:int4", "ml_dtypes:uint4", "ml_dtypes:int2",
    "ml_dtypes:uint2",
)

_SCALAR_TYPES = ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float16", "float32", "float64", "complex64", "complex128")


# Classes a primitive's parameters may hold besides the list above, derived from JAX itself:
# every enum, dataclass and NamedTuple that a module defining a registered primitive (or a JAX
# module it imports) can name, defined by JAX (or an allowed library). Left out:
# - modules that are machinery rather than traced data (the interpreters' own state,
#   configuration, backends, export, profiling, lowering contexts, MLIR bindings) and private
#   classes;
# - classes with behaviour of their own when built or used: ``__call__`` (a callable is not
#   data), ``__setstate__``, ``__getattr__``, ``__del__``, a ``__new__`` of their own, and
#   classes with fields typed as callables.
# JAX's extended dtypes (PRNG key types, semaphore types) are dtypes: data.
_MACHINERY_MODULE = re.compile(
    r"(^|\.)(interpret|profiler|config|xla_bridge|export|dispatch|stages|deprecations|"
    r"compilation_cache|compiler|monitoring|cudnn|ffi|callback|debugging|pretty_printer|"
    r"_pretty_printer|\w*lowering|layout_inference|mlir|partial_eval|pxla|pjit|tree_util|"
    r"discharge|error_handling|helpers|tpu_info|launch_context|typing|utils)(\.|$)"
    r"|^jaxlib\.(cpu|cuda|rocm|mlir|_jax|_hlo)(\.|$)")
_BEHAVIOUR = ("__call__", "__setstate__", "__getattr__", "__del__")


def parameter_class(value: Any) -> bool:
    """Whether ``value`` is a class the derived allow-list admits (see :func:`unread_reason`)."""
    return isinstance(value, type) and not unread_reason(value)


def unread_reason(value: type) -> str:
    """Why the derived allow-list leaves the class ``value`` out ('' when it admits it): it
    admits an enum, dataclass, NamedTuple or extended dtype defined by JAX or an allowed
    library, outside its machinery modules, with no behaviour of its own on building or
    calling."""
    import dataclasses
    import enum

    module = getattr(value, "__module__", None)
    if not isinstance(module, str) or module.split(".")[0] not in PRIMITIVE_ROOTS:
        return "not defined by JAX or an allowed library"
    if _MACHINERY_MODULE.search(module):
        return "defined in a module of JAX's machinery, not of traced data"
    if issubclass(value, enum.Enum):
        for klass in value.__mro__:
            if klass.__module__.split(".")[0] in PRIMITIVE_ROOTS:
                for name in _BEHAVIOUR:
                    if name in vars(klass):
                        return f"it defines {name}"
        return ""
    if issubclass(value, (BaseException, type)):
        return "an exception or a metaclass"
    if value.__qualname__.startswith("_"):
        return "a private class"
    extended = sys.modules.get("jax._src.dtypes")
    if extended is not None and issubclass(value, extended.ExtendedDType):
        return ""  # a dtype of JAX's own (PRNG keys, semaphores): data
    named_tuple = issubclass(value, tuple) and hasattr(value, "_fields")
    if not (dataclasses.is_dataclass(value) or named_tuple):
        return "not an enum, dataclass, NamedTuple or extended dtype"
    for klass in value.__mro__:
        if klass is object or klass is tuple:
            continue
        own = vars(klass)
        if any("Callable" in str(kind) for kind in own.get("__annotations__", {}).values()):
            return "it has fields that hold functions"
        for name in _BEHAVIOUR:
            if name in own:
                return f"it defines {name}"
        if "__new__" in own and not (named_tuple and klass is value):
            return "it defines __new__"
    return ""


def derived_classes() -> dict[str, type]:
    """``"module:qualified name" -> class`` for the parameter classes JAX's primitives can
    name (see :func:`parameter_class`): the modules that keep a registered primitive, and the
    JAX modules they import, are walked."""
    import types

    registry = primitive_registry()
    modules = {key.split(":")[0] for key in registry}
    key = frozenset(modules)
    cached = _derived.get(key)
    if cached is not None:
        return cached
    walked = set(modules)
    for name in modules:
        for value in list(vars(sys.modules[name]).values()):
            if isinstance(value, types.ModuleType) and value.__name__.split(".")[0] in PRIMITIVE_ROOTS:
                walked.add(value.__name__)
    found: dict[str, type] = {}
    for name in sorted(walked):
        module = sys.modules.get(name)
        if module is None:
            continue
        for value in list(vars(module).values()):
            if parameter_class(value) and "<locals>" not in value.__qualname__:
                found[f"{value.__module__}:{value.__qualname__}"] = value
    _derived.clear()
    _derived[key] = found
    return found


_derived: dict[frozenset[str], dict[str, type]] = {}


def _refused(message: str, rule: Rule = Rule.HANDOVER) -> StageFailure:
    """The judge refuses the hand-over (``rejected`` at the trace stage)."""
    return StageFailure(Status.REJECTED, Stage.TRACE, message, rule=rule)


def _safe_dtype(*args: Any) -> Any:
    """``numpy.dtype`` for the unpickler: any dtype but ``object`` (an object array would hold
    arbitrary objects)."""
    import numpy as np

    dtype = np.dtype(*args)
    if dtype.hasobject:
        raise _refused("the hand-over holds an object-dtype array")
    return dtype


_allowed: dict[str, object] | None = None


def allowed() -> dict[str, object]:
    """``"module:name" -> object`` for every entry of the allow-list this JAX has."""
    global _allowed
    if _allowed is None:
        import numpy as np

        import_jax_modules()
        found: dict[str, object] = {"numpy:dtype": _safe_dtype}
        import jax.numpy as jnp

        for name in _SCALAR_TYPES:  # a scalar type as a parameter (preferred_element_type)
            found[f"numpy:{name}"] = getattr(np, name)
            found[f"jax.numpy:{name}"] = getattr(jnp, name)
        found["jax.numpy:bfloat16"] = jnp.bfloat16
        for entry in _ALLOWED_NAMES:
            module_name, name = entry.split(":")
            value = sys.modules.get(module_name)
            if value is None:
                continue
            for part in name.split("."):
                value = getattr(value, part, None)
            if value is not None:
                found[entry] = value
        _allowed = found
    return _allowed


class _Reader(pickle.Unpickler):
    def __init__(self, data: bytes, registry: dict[str, Primitive]) -> None:
        super().__init__(io.BytesIO(data))
        self._allowed = allowed()
        self._derived = derived_classes()
        self._registry = registry

    def find_class(self, module: str, name: str) -> Any:
        value = self._allowed.get(f"{module}:{name}") or self._derived.get(f"{module}:{name}")
        if value is None and module.split(".")[0] == "candidate":  # the tracer's name for it
            raise StageFailure(Status.REJECTED, Stage.TRACE,
                               "the kernel passes objects of its own classes as parameters of JAX "
                               f"operations ({module}.{name}): only JAX's own parameter classes "
                               "can be handed to the judge", rule=Rule.OWN_CLASSES)
        if value is None and _own_class(module, name):
            # JAX's own (or NumPy's, or an allowed library's): a gap in the reader, not a cheat
            raise StageFailure(Status.UNVERIFIED, Stage.TRACE,
                               f"the traced kernel holds an object of {module}.{name}, a class of "
                               f"{module.split('.')[0]} that the judge does not read, so it "
                               "cannot check the kernel", rule=Rule.HANDOVER_UNREAD)
        if value is None:
            raise _refused(f"the traced kernel holds an object of {module}.{name}, which is not "
                           "on the judge's list of JAX and NumPy data types it reads")
        return value

    def persistent_load(self, pid: Any) -> Any:
        if (isinstance(pid, tuple) and len(pid) == 3 and pid[0] == PRIMITIVE_TAG
                and all(isinstance(p, str) for p in pid)):
            _, name, key = pid
            primitive = self._registry.get(key)
            if primitive is None or primitive.name != name:
                raise StageFailure(Status.REJECTED, Stage.TRACE,
                                   f"the kernel uses primitives JAX does not define "
                                   f"({name[:80]}): kernels may not define primitives or lowering "
                                   f"rules (handed over as {key[:120] or 'no JAX module'!r})",
                                   rule=Rule.UNKNOWN_PRIMITIVE)
            return primitive
        if isinstance(pid, tuple) and len(pid) == 2 and pid[0] == PRNG_IMPL_TAG:
            impl = compat.registered_prng_impl(pid[1])
            if impl is not None:
                return impl
        if isinstance(pid, tuple) and len(pid) == 3 and pid[0] == PRNG_KEY_TAG:
            return _prng_key(pid[1], pid[2])
        if isinstance(pid, tuple) and len(pid) == 3 and pid[0] == TENSORCORE_MESH_TAG:
            return _tensorcore_mesh(pid[1], pid[2])
        if isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "eqn_context":
            return _eqn_context(pid[1])
        if isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "abstract":
            from jax._src import core

            if isinstance(pid[1], core.AbstractValue):
                compat.keep_type_only_constants()
                return pid[1]  # a value of a trace that ended: its type only
        if isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "singleton":
            value = singletons().get(pid[1]) if isinstance(pid[1], str) else None
            if value is not None:
                return value
        raise _refused(f"the hand-over holds an unknown reference {str(pid)[:80]!r}")


_OWN_ROOTS = (*PRIMITIVE_ROOTS, "numpy", "ml_dtypes")


def _own_class(module: str, name: str) -> bool:
    """Whether ``module:name`` is a class this process's JAX, NumPy or an allowed library
    really defines there (looked up among imported modules only, nothing is imported)."""
    if module.split(".")[0] not in _OWN_ROOTS:
        return False
    value = sys.modules.get(module)
    for part in name.split("."):
        value = getattr(value, part, None) if value is not None else None
    return isinstance(value, type) and getattr(value, "__module__", "").split(".")[0] in _OWN_ROOTS


def _prng_key(name: Any, data: Any) -> Any:
    """A concrete key array of a registered PRNG implementation, from its ``uint32`` data."""
    import numpy as np

    from jaxbench import compat

    if not (isinstance(name, str) and compat.registered_prng_impl(name) is not None
            and type(data) is np.ndarray and data.dtype == np.uint32 and data.size <= 1 << 20):
        raise _refused("the hand-over holds a malformed PRNG key")
    return compat.prng_key(name, data)


def _tensorcore_mesh(axis_names: Any, shape: Any) -> Any:
    """A TensorCore mesh rebuilt from its description: a few named axes of a few cores."""
    from jaxbench import compat

    if not (isinstance(axis_names, tuple) and isinstance(shape, tuple)
            and len(axis_names) == len(shape) <= 4
            and all(isinstance(a, str) and len(a) <= 100 for a in axis_names)
            and all(type(n) is int and 1 <= n for n in shape)
            and math.prod(shape) <= MAX_MESH_CORES):
        raise _refused("the hand-over holds a malformed TensorCore mesh")
    return compat.tensorcore_mesh(axis_names, shape)


def _eqn_context(fields: Any) -> Any:
    """An equation's context (compute type, PRNG mode, abstract mesh, XLA metadata, ...), its
    fields checked against this JAX's own and typed data only, interned as JAX interns it."""
    import enum

    from jax._src import mesh as mesh_lib

    names = list(compat.eqn_context_names())
    malformed = _refused("the hand-over holds a malformed equation context")
    if not (isinstance(fields, tuple) and [f[0] if isinstance(f, tuple) and len(f) == 2 else None
                                           for f in fields] == names):
        raise malformed
    values = []
    for name, value in fields:
        if name in compat.MESH_FIELDS:
            ok = isinstance(value, mesh_lib.AbstractMesh)
        elif name == "xla_metadata":
            ok = value is None or (isinstance(value, tuple) and all(
                isinstance(kv, tuple) and len(kv) == 2 and isinstance(kv[0], str)
                and isinstance(kv[1], (str, int, float, bool)) for kv in value))
        else:
            ok = value is None or isinstance(value, (str, bool, int, enum.Enum)) or (
                isinstance(value, frozenset) and all(isinstance(v, str) for v in value))
        if not ok:
            raise malformed
        values.append(value)
    return compat.make_eqn_context(values)


def _prescan(data: bytes) -> None:
    """Counts the pickle's opcodes and bounds the nesting depth of what it builds, building
    nothing (a malformed stream is refused here too)."""
    stack: list[int] = []
    marks: list[int] = []
    memo: dict[Any, int] = {}
    count = 0
    mark = pickletools.markobject
    try:
        for opcode, arg, _ in pickletools.genops(data):
            count += 1
            if count > MAX_OPCODES:
                raise ValueError(f"more than {MAX_OPCODES} pickle operations")
            name = opcode.name
            if name == "MARK":
                marks.append(len(stack))
                continue
            if name in ("MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"):
                memo[len(memo) if name == "MEMOIZE" else arg] = stack[-1] if stack else 0
                continue
            if name in ("GET", "BINGET", "LONG_BINGET"):
                stack.append(memo.get(arg, 0))
                continue
            before = opcode.stack_before
            popped: list[int] = []
            if mark in before:
                if not marks:
                    raise ValueError("unbalanced MARK")
                at = marks.pop()
                popped, stack[at:] = stack[at:], []
                below = before.index(mark)
            else:
                below = len(before)
            if below:
                if len(stack) < below:
                    raise ValueError("stack underflow")
                popped += stack[-below:]
                del stack[-below:]
            depth = 1 + max(popped, default=0)
            if depth > MAX_DEPTH:
                raise ValueError(f"nested more than {MAX_DEPTH} deep")
            stack.extend([depth] * len(opcode.stack_after))
    except ValueError as exc:
        raise _refused(f"the hand-over is not an acceptable pickle: {exc}") from None


class Handover(TypedDict):
    """The hand-over as the judge reads it (:func:`read`): the traced kernel's closed jaxpr
    at each size, and the kernel file's ``(file, line)`` of the equations made there, by
    ``id(eqn)`` (the equations stay alive with the traces)."""

    traces: dict[str, ClosedJaxpr]
    lines: dict[int, tuple[str, int]]


def read(data: bytes) -> Handover:
    """The hand-over's payload ``{"traces": {size: closed jaxpr}, "lines": {id(eqn): (file,
    line)}}``, or :class:`StageFailure` (``rejected``) naming what was refused."""
    if len(data) > MAX_BYTES:
        raise _refused(f"the hand-over is {len(data)} bytes, over the {MAX_BYTES} byte limit")
    _prescan(data)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * MAX_DEPTH + 1000))
    try:
        payload = _Reader(data, primitive_registry()).load()
    except StageFailure:
        raise
    except Exception as exc:  # noqa: BLE001 - malformed data: never the judge's crash
        raise _refused("the hand-over cannot be read: "
                       f"{type(exc).__name__}: {str(exc)[:200]}") from None
    finally:
        sys.setrecursionlimit(limit)
    return _validated(payload)


def _validated(payload: Any) -> Handover:
    from jaxbench import compat

    def refuse(why: str) -> StageFailure:
        return _refused(f"the hand-over is malformed: {why}")

    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise refuse("not a jaxbench jaxpr hand-over")
    traces, lines = payload.get("traces"), payload.get("lines")
    if not isinstance(traces, dict) or not isinstance(lines, dict):
        raise refuse("no traces")
    from jax._src import core

    eqn_lines: dict[int, tuple[str, int]] = {}
    for size, closed in traces.items():
        walked: set[int] = set()
        if not isinstance(size, str) or type(closed) is not compat.ClosedJaxpr:
            raise refuse("a trace that is not a closed jaxpr")
        try:
            for eqn in compat.walk_eqns(closed.jaxpr, MAX_EQUATIONS):
                if type(eqn) is not core.JaxprEqn or not isinstance(eqn.primitive,
                                                                    core.Primitive):
                    raise refuse("an equation that is not JAX's")
                if not isinstance(eqn.params, dict):
                    raise refuse("equation parameters that are not a dict")
                walked.add(id(eqn))
        except (ValueError, AttributeError, TypeError) as exc:
            raise refuse(str(exc)[:200]) from None
        for item in lines.get(size, ()) if isinstance(lines.get(size), list) else ():
            # only equations of the traces themselves (they stay alive with the traces)
            if (isinstance(item, tuple) and len(item) == 2 and id(item[0]) in walked
                    and isinstance(item[1], tuple) and len(item[1]) == 2
                    and isinstance(item[1][0], str) and isinstance(item[1][1], int)):
                eqn_lines[id(item[0])] = (item[1][0][:500], item[1][1])
    return {"traces": traces, "lines": eqn_lines}
