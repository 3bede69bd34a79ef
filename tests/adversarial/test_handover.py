"""The jaxpr hand-over (the tracer's traced jaxprs as data) and its reader on the judge's side:
forged, hostile and malformed hand-overs are refused (allow-listed classes, primitives from
JAX's own registry, caps) and never run anything; the judge's random fills of uninitialised
memory differ and are never NaN (the kernels that look for the NaN are in test_adversarial)."""

from __future__ import annotations

import io
import os
import pickle

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl

from jaxbench.contract import JudgeRequest, StageFailure
from jaxbench.evaluator.judge import jaxpr_reader, lowering
from jaxbench.evaluator.sandbox import handover
from jaxbench.tasks import get_task


def _copy_kernel_jaxpr(shape=(8, 128), dtype=jnp.float32):
    def copy(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    spec = jax.ShapeDtypeStruct(shape, dtype)
    return jax.make_jaxpr(lambda a: pl.pallas_call(copy, out_shape=a)(a))(spec)


def _refused(data: bytes) -> StageFailure:
    with pytest.raises(StageFailure) as caught:
        jaxpr_reader.read(data)
    assert caught.value.status == "rejected", caught.value
    return caught.value


def test_an_honest_hand_over_round_trips_and_lowers():
    closed = _copy_kernel_jaxpr()
    payload = jaxpr_reader.read(handover.dumps({"small": closed}))
    again = payload["traces"]["small"]
    assert str(again) == str(closed)
    lowering.jaxpr_rules(again)  # a kernel, no callback: passes


class _Touch:
    """Pickles as a call of os.makedirs: what a forged hand-over would smuggle in."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.makedirs, (self.path,))


def test_a_pickle_naming_a_class_off_the_list_runs_nothing(tmp_path):
    target = tmp_path / "made_by_the_pickle"
    data = pickle.dumps({"format": jaxpr_reader.FORMAT, "traces": {"small": _Touch(str(target))},
                         "lines": {}})
    failure = _refused(data)
    assert "os.makedirs" in failure.message or "posix.makedirs" in failure.message
    assert not target.exists()


def _with_primitive(name: str, key: str) -> bytes:
    """An honest hand-over whose pallas_call is written under another name or module."""
    closed = _copy_kernel_jaxpr()
    buffer = io.BytesIO()

    class Forger(handover._Pickler):
        def persistent_id(self, obj):
            found = super().persistent_id(obj)
            if found and found[0] == "primitive" and found[1] == "pallas_call":
                return ("primitive", name, key)
            return found

    Forger(buffer, handover.primitive_keys()).dump(
        {"format": jaxpr_reader.FORMAT, "traces": {"small": closed}, "lines": {}})
    return buffer.getvalue()


def test_a_primitive_of_the_candidates_own_is_refused_by_name():
    failure = _refused(_with_primitive("pallas_call", "candidate:my_pallas_call_p"))
    assert "primitives JAX does not define (pallas_call" in failure.message


def test_a_primitive_under_a_real_key_but_another_name_is_refused():
    failure = _refused(_with_primitive("not_pallas", "jax._src.pallas.pallas_call:pallas_call_p"))
    assert "primitives JAX does not define (not_pallas" in failure.message


def test_a_deeply_nested_pickle_is_refused_before_it_is_built():
    deep: list = []
    for _ in range(jaxpr_reader.MAX_DEPTH + 50):
        deep = [deep]
    failure = _refused(pickle.dumps(deep, protocol=4))
    assert "nested more than" in failure.message


def test_a_pickle_with_too_many_operations_is_refused(monkeypatch):
    monkeypatch.setattr(jaxpr_reader, "MAX_OPCODES", 1000)
    failure = _refused(pickle.dumps(list(range(5000)), protocol=4))
    assert "pickle operations" in failure.message


def test_an_oversized_hand_over_is_refused_unread(monkeypatch):
    monkeypatch.setattr(jaxpr_reader, "MAX_BYTES", 100)
    failure = _refused(b"\x80\x04" + b"N" * 200 + b".")
    assert "byte limit" in failure.message


def test_a_truncated_or_garbage_pickle_is_refused():
    data = handover.dumps({"small": _copy_kernel_jaxpr()})
    _refused(data[: len(data) // 2])
    _refused(os.urandom(4096))


def test_an_object_array_is_refused():
    import numpy as np

    data = pickle.dumps({"format": jaxpr_reader.FORMAT,
                         "traces": {"small": np.array([None, 1], dtype=object)}, "lines": {}})
    failure = _refused(data)
    assert "object" in failure.message


def test_a_payload_that_is_not_a_jaxpr_is_refused():
    _refused(pickle.dumps({"format": jaxpr_reader.FORMAT, "traces": {"small": (1, 2)},
                           "lines": {}}))
    _refused(pickle.dumps(["not", "a", "payload"]))


def _request():
    return JudgeRequest(dir="", task="12p_rmsnorm", size="small", platform="tpu", target="tpu",
                        mode="interpret", trial_keys=[], recheck_keys=[])


def test_a_jaxpr_whose_types_differ_from_the_task_is_refused_before_lowering():
    task = get_task("12p_rmsnorm")
    specs = task.input_specs("small")
    closed = _copy_kernel_jaxpr((8, 128), jnp.float32)
    payload = jaxpr_reader.read(handover.dumps({s: closed for s in task.inputs}))
    with pytest.raises(StageFailure) as caught:
        lowering.lower(payload, _request(), task)
    assert caught.value.status == "rejected"
    assert str(tuple(specs[0].shape)) in caught.value.message


def test_a_jaxpr_without_every_size_is_refused():
    task = get_task("12p_rmsnorm")
    payload = jaxpr_reader.read(handover.dumps({"small": _copy_kernel_jaxpr()}))
    with pytest.raises(StageFailure) as caught:
        lowering.lower(payload, _request(), task)
    assert caught.value.status == "rejected" and "no trace at size" in caught.value.message


def test_random_fills_differ_and_hide_the_nan():
    """Uninitialised scratch holds random bits under the judge's fills (never NaN), different
    for two seeds."""
    from jax.experimental.pallas import tpu as pltpu

    from jaxbench.evaluator.judge import exporting

    def kernel(x_ref, o_ref, scratch):
        o_ref[...] = scratch[...]

    spec = jax.ShapeDtypeStruct((8, 128), jnp.float32)
    closed = jax.make_jaxpr(lambda a: pl.pallas_call(
        kernel, out_shape=a, scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32)])(a))(spec)
    outs = []
    for seed in (1, 2):
        with lowering.random_fill(seed):
            module = exporting.export(closed, [spec], "cpu", interpret=True)
        outs.append(jax.jit(module.call)(jnp.ones((8, 128), jnp.float32))[0])
    assert not bool(jnp.isnan(outs[0][0, 0]) & jnp.isnan(outs[1][0, 0]))
    assert not bool(jnp.array_equal(outs[0], outs[1], equal_nan=True))


def test_a_jaxpr_with_a_forged_type_is_refused():
    """A type written into the hand-over that its primitive does not give (here a
    pallas_call's output claimed twice as large) is refused before anything is lowered."""
    from jax._src import core

    closed = jax.make_jaxpr(lambda a: _copy_kernel_jaxpr_fn(a) + 1.0)(
        jax.ShapeDtypeStruct((8, 128), jnp.float32))
    eqn = closed.jaxpr.eqns[0]
    bigger = core.ShapedArray((16, 128), jnp.float32)
    forged_out = core.Var(bigger)
    eqns = [eqn.replace(outvars=[forged_out])] + [
        e.replace(invars=[forged_out if v is eqn.outvars[0] else v for v in e.invars])
        for e in closed.jaxpr.eqns[1:]]
    forged = closed.replace(jaxpr=closed.jaxpr.replace(eqns=eqns))
    payload = jaxpr_reader.read(handover.dumps({"small": forged}))
    with pytest.raises(StageFailure) as caught:
        lowering.well_formed(payload["traces"]["small"], "TPU v6 lite", "tpu")
    assert caught.value.status == "rejected" and "does not type-check" in caught.value.message


def test_an_equation_lowered_for_another_chip_is_refused():
    """The trace names no chip; an equation whose context names one (a mesh's device: what
    Mosaic's lowering would ask) must name the judged chip."""
    from jax.sharding import AbstractDevice, AbstractMesh, AxisType

    v5e = AbstractDevice(device_kind="TPU v5 lite", num_cores=1, platform="tpu")
    with jax.sharding.use_abstract_mesh(AbstractMesh((1,), ("x",), (AxisType.Auto,),
                                                     abstract_device=v5e)):
        closed = _copy_kernel_jaxpr()
    payload = jaxpr_reader.read(handover.dumps({"small": closed}))
    lowering.well_formed(payload["traces"]["small"], "TPU v5 lite", "tpu")
    with pytest.raises(StageFailure) as caught:
        lowering.well_formed(payload["traces"]["small"], "TPU v6 lite", "tpu")
    assert caught.value.status == "rejected" and "'TPU v5 lite'" in caught.value.message


def test_a_trace_for_the_chip_names_no_chip_and_is_judged_for_any():
    from jaxbench.evaluator.sandbox.chip import as_chip

    with as_chip("tpu", "TPU v5 lite"):
        closed = _copy_kernel_jaxpr()
    payload = jaxpr_reader.read(handover.dumps({"small": closed}))
    lowering.well_formed(payload["traces"]["small"], "TPU v6 lite", "tpu")


def _copy_kernel_jaxpr_fn(a):
    def copy(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    return pl.pallas_call(copy, out_shape=a)(a)
