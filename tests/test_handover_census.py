"""The hand-over reads every object a public Pallas kernel can leave in its trace (issue 48.1,
46.5): its parameter classes are derived from JAX itself, and a census of the classes that the
modules defining JAX's registered primitives declare checks the derivation on the installed
JAX. Widening the list must not let a kernel smuggle a callable or a host object: a JAX class
the reader does not read is `unverified` and named, anything else `rejected`, and no class is
ever built from a name off the list."""

from __future__ import annotations

import ast
import enum
import inspect
import io
import pickle
import sys
import types

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax.experimental import pallas as pl

from jaxbench import compat
from jaxbench.contract import StageFailure
from jaxbench.evaluator.common.jaxpr_format import (
    FORMAT,
    PRNG_IMPL_TAG,
    PRNG_KEY_TAG,
    TENSORCORE_MESH_TAG,
    primitive_registry,
)
from jaxbench.evaluator.judge import jaxpr_reader
from jaxbench.evaluator.sandbox import handover


def _census() -> dict[str, tuple[str, type]]:
    """``"module:name" -> (kind, class)`` for each enum, dataclass and NamedTuple declared in
    the source of a module that keeps one of JAX's registered primitives, or of a JAX module
    it imports (read from the source text, independently of the reader's own walk)."""
    found = {}
    keeping = {key.split(":")[0] for key in primitive_registry()}
    imported = {value.__name__ for name in keeping for value in vars(sys.modules[name]).values()
                if isinstance(value, types.ModuleType)
                and value.__name__.split(".")[0] in ("jax", "jaxlib")}
    for name in sorted(keeping | imported):
        module = sys.modules[name]
        try:
            tree = ast.parse(inspect.getsource(module))
        except (OSError, TypeError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or not isinstance(
                    getattr(module, node.name, None), type):
                continue
            bases = " ".join(ast.unparse(b) for b in node.bases)
            decorators = " ".join(ast.unparse(d) for d in node.decorator_list)
            if issubclass(getattr(module, node.name), type):  # a metaclass (of enums) is no
                continue                                      # parameter: nothing holds one
            kind = ("enum" if "Enum" in bases or "IntFlag" in bases else
                    "dataclass" if "dataclass" in decorators else
                    "namedtuple" if "NamedTuple" in bases else None)
            cls = getattr(module, node.name)
            if kind and cls.__module__ == name:
                found[f"{name}:{node.name}"] = (kind, cls)
    return found


def test_the_census_finds_the_parameter_classes_of_the_issue():
    census = _census()
    assert len(census) > 100
    names = {key.rsplit(":", 1)[1] for key in census}
    assert {"AtomicOpType", "GridDimensionSemantics", "DeviceIdType"} <= names


def test_every_primitive_parameter_class_of_this_jax_is_read_or_refused_for_a_reason():
    """The census: every enum of a primitive's module is read (enums are data), and every
    dataclass or NamedTuple is read unless the reader names why it is not data (JAX's
    machinery, a callable, functions in its fields, its own unpickling). A JAX that adds a
    parameter class the derivation misses fails here."""
    readable = {**jaxpr_reader.allowed(), **jaxpr_reader.derived_classes()}
    unread = []
    for key, (kind, cls) in _census().items():
        reason = jaxpr_reader.unread_reason(cls)
        if key in readable:
            continue
        if kind == "enum" and not reason.startswith("defined in a module of JAX's machinery"):
            unread.append(f"{key} (enum): {reason or 'not derived'}")
        elif not reason:
            unread.append(f"{key} ({kind}): admitted by unread_reason but not derived")
    assert not unread, unread


def test_the_derived_list_holds_classes_only_and_no_callable_instances():
    derived = jaxpr_reader.derived_classes()
    assert derived
    for key, value in derived.items():
        assert isinstance(value, type), key
        assert not isinstance(value, types.ModuleType), key
        assert "__call__" not in {n for k in value.__mro__ if k is not object for n in vars(k)}, key
        assert value.__module__.split(".")[0] in ("jax", "jaxlib", "tokamax"), key
    prng = compat.prng_module()
    assert f"{prng.__name__}:PRNGImpl" not in derived  # a tuple of functions


@pytest.mark.parametrize("name", ["AtomicOpType"])
def test_the_triton_atomic_enum_is_derived(name):
    from jax._src.pallas.triton import primitives as triton_primitives

    cls = getattr(triton_primitives, name)
    assert issubclass(cls, enum.Enum)
    assert jaxpr_reader.derived_classes()[f"{cls.__module__}:{cls.__qualname__}"] is cls


def _round_trip(closed):
    payload = jaxpr_reader.read(handover.dumps({"small": closed}))
    return payload["traces"]["small"]


def test_a_concrete_prng_key_crosses_as_its_implementation_and_data():
    key = jax.random.key(3)
    closed = jax.make_jaxpr(lambda x: x + jax.random.normal(key, x.shape))(jnp.ones((4,)))
    again = _round_trip(closed)
    assert str(again) == str(closed)
    assert np.array_equal(jax.random.key_data(again.consts[0]), jax.random.key_data(key))
    out = jax.core.eval_jaxpr(again.jaxpr, again.consts, jnp.ones((4,)))[0]
    assert np.allclose(out, 1 + jax.random.normal(key, (4,)))


def test_prng_keys_traced_in_a_kernel_module_are_read():
    def kernel(x):
        w = jax.random.normal(jax.random.PRNGKey(0), x.shape)
        bits = jax.random.bits(jax.random.key(1), x.shape)
        return x + 0 * w + 0 * bits.astype(x.dtype)

    closed = jax.make_jaxpr(kernel)(jnp.ones((8,)))
    assert "random_wrap" in str(closed) or "random_seed" in str(closed)
    assert str(_round_trip(closed)) == str(closed)


@pytest.mark.parametrize("dtype", [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
                                   ml_dtypes.int4, ml_dtypes.uint4, jnp.bfloat16])
def test_narrow_dtypes_cross_as_constants_and_avals(dtype):
    table = np.arange(8).astype(dtype)
    closed = jax.make_jaxpr(lambda x: x + jnp.asarray(table).astype(jnp.float32))(
        jnp.ones((8,), jnp.float32))
    again = _round_trip(closed)
    assert str(again) == str(closed)


def test_a_tensorcore_mesh_crosses_as_its_description():
    from jax.experimental.pallas import tpu as pltpu

    try:  # JAX 0.12.1 removed the function for the class
        mesh = pltpu.create_tensorcore_mesh("core", num_cores=2)
    except AttributeError:
        mesh = pltpu.TensorCoreMesh(axis_name="core", num_cores=2)

    def run(x):
        @pl.kernel(out_type=jax.ShapeDtypeStruct(x.shape, x.dtype), mesh=mesh)
        def copy(x_hbm, o_hbm):
            pltpu.sync_copy(x_hbm, o_hbm)

        return copy(x)

    closed = jax.make_jaxpr(run)(jnp.ones((8, 128)))
    again = _round_trip(closed)
    assert str(again) == str(closed)
    meshes = [m for eqn in compat.walk_eqns(again.jaxpr)
              for m in (eqn.params.get("mesh"), *eqn.params.get("meshes", ()))
              if type(m) is type(mesh)]
    assert meshes
    for rebuilt in meshes:
        assert compat.tensorcore_mesh_description(rebuilt) == (("core",), (2,))
        if hasattr(rebuilt, "devices"):  # JAX 0.10: an array of cores; later, a count
            assert [d.id for d in rebuilt.devices] == [0, 1]


def _payload_pickle(obj) -> bytes:
    return pickle.dumps({"format": FORMAT, "traces": {"small": obj}, "lines": {}}, protocol=4)


class _Persistent(pickle.Pickler):
    def __init__(self, file, pid):
        super().__init__(file, protocol=4)
        self.pid = pid

    def persistent_id(self, obj):
        return self.pid if isinstance(obj, str) and obj == "MARK" else None


def _with_pid(pid) -> bytes:
    buffer = io.BytesIO()
    _Persistent(buffer, pid).dump({"format": FORMAT, "traces": {"small": "MARK"}, "lines": {}})
    return buffer.getvalue()


def _failure(data: bytes) -> StageFailure:
    with pytest.raises(StageFailure) as caught:
        jaxpr_reader.read(data)
    return caught.value


@pytest.mark.parametrize("pid", [
    (PRNG_IMPL_TAG, "my_own_prng"),
    (PRNG_KEY_TAG, "my_own_prng", np.zeros(2, np.uint32)),
    (PRNG_KEY_TAG, "threefry2x32", np.zeros(2, object)),
    (TENSORCORE_MESH_TAG, ("core",), (1 << 20,)),
    (TENSORCORE_MESH_TAG, ("a", "b", "c", "d"), (64, 64, 64, 64)),  # 16M cores: never built
    (TENSORCORE_MESH_TAG, ("core",), (0,)),
    (TENSORCORE_MESH_TAG, (b"core",), (1,)),
])
def test_forged_descriptions_are_refused(pid):
    failure = _failure(_with_pid(pid))
    assert failure.status == "rejected"


def test_a_jax_function_named_in_the_pickle_is_unverified_and_never_called(tmp_path):
    """A function of JAX's own is not data: the reader names it (``unverified``, a reader gap
    where the tracer is honest) and returns nothing, so nothing calls it."""
    class Smuggle:
        def __reduce__(self):
            return (jax._src.util.safe_map, (print, [1]))

    failure = _failure(_payload_pickle(Smuggle()))
    assert failure.status == "unverified" or failure.status == "rejected"
    assert failure.rule in ("handover_unread", "handover_refused")
    assert "safe_map" in failure.message


def test_a_jax_class_the_reader_does_not_read_is_unverified_and_named():
    from jax._src.pallas.mosaic.primitives import AsyncCopyDescriptor  # it defines __del__

    assert not jaxpr_reader.parameter_class(AsyncCopyDescriptor)
    data = pickle.dumps({"format": FORMAT, "traces": {"small": AsyncCopyDescriptor},
                         "lines": {}}, protocol=4)
    failure = _failure(data)
    assert failure.status == "unverified" and failure.rule == "handover_unread"
    assert "AsyncCopyDescriptor" in failure.message


@pytest.mark.parametrize("target", ["os:system", "subprocess:Popen", "builtins:eval",
                                    "jaxbench.contract.codes:Status"])
def test_host_objects_stay_rejected(target):
    module, name = target.split(":")
    data = (b"\x80\x04" + b"\x8c" + bytes([len(module)]) + module.encode() + b"\x8c"
            + bytes([len(name)]) + name.encode() + b"\x93" + b".")
    failure = _failure(data)
    assert failure.status == "rejected", failure


def test_a_prng_implementation_built_from_functions_is_never_built():
    """A PRNGImpl pickled field by field (a kernel's own implementation would carry its own
    functions) is not read: the class is JAX's, so the verdict is `unverified`, and the
    functions are never resolved."""
    prng = compat.prng_module()
    impl = prng.prngs["threefry2x32"]
    data = pickle.dumps({"format": FORMAT, "traces": {"small": tuple(impl)}, "lines": {}},
                        protocol=4)
    failure = _failure(data)
    assert failure.status in ("unverified", "rejected")
