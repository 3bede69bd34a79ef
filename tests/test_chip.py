"""Trace as the chip: what a kernel can ask about its hardware while it is traced answers as the
target chip would (the chip table, jaxbench/backends/chips.py), and only while it is traced."""

import math
from pathlib import Path

import jax
import jax.extend.backend
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.sharding import PartitionSpec as P

from jaxbench import compat
from jaxbench.backends.chips import CHIPS, chip, chip_or_default
from jaxbench.evaluator.sandbox.chip import QUESTIONS, as_chip
from jaxbench.tasks import get_task


@pytest.mark.parametrize("kind,expected_kind,cores,vmem", [
    ("TPU v6 lite", "TPU v6 lite", 1, 128 << 20),
    ("TPU v6e", "TPU v6 lite", 1, 128 << 20),  # the marketing name answers as the device does
    ("TPU v5 lite", "TPU v5 lite", 1, 128 << 20),
    ("TPU v5p", "TPU v5", 2, 64 << 20),  # a megacore device: two TensorCores
])
def test_a_tpu_kernel_sees_its_tpu(kind, expected_kind, cores, vmem):
    with as_chip("tpu", kind):
        device = jax.devices()[0]
        assert (device.device_kind, device.platform, device.id, device.num_cores) == \
            (expected_kind, "tpu", 0, cores)
        assert jax.local_devices()[0] is device and jax.devices("tpu") == [device]
        assert jax.default_backend() == "tpu"
        info = pltpu.get_tpu_info()  # JAX's own table, through the abstract device
        assert info.vmem_capacity_bytes == vmem == chip(kind).physical_vmem
        assert jax.devices("cpu")[0].platform == "cpu"  # asking for the host still gets it
    assert jax.devices()[0].platform == "cpu" and jax.default_backend() == "cpu"


@pytest.mark.parametrize("kind,capability,sms", [
    ("NVIDIA H200", "9.0", 132), ("NVIDIA A100", "8.0", 108),
    ("NVIDIA A100-SXM4-80GB", "8.0", 108),  # as a real A100 reports its kind
])
def test_a_gpu_kernel_sees_its_gpu(kind, capability, sms):
    with as_chip("cuda", kind):
        device = jax.devices()[0]
        assert (device.device_kind, device.platform, device.compute_capability,
                device.core_count) == (kind, "gpu", capability, sms)
        assert jax.devices("gpu") == jax.devices("cuda") == [device]
        assert jax.default_backend() == "gpu"
        # What JAX's Mosaic GPU matmuls read for their grid with no mesh in context: the
        # default device's SMs (no mesh is entered for them: the context is as in plain JAX).
        assert jax.sharding.get_abstract_mesh().empty
        assert jax.extend.backend.get_default_device().core_count == sms
        with pytest.raises(AttributeError, match="only the chip's identity"):
            device.memory_stats()  # not attached: no memory, no client
        with pytest.raises(AttributeError, match="read-only"):
            device.device_kind = "NVIDIA B200"
    assert jax.devices()[0].platform == "cpu"


# -- the table of questions (sandbox/chip.py QUESTIONS), asked one by one ----------------------

def _devices(c):
    (device,) = jax.devices()
    assert (device.device_kind, device.platform) == (c.device_kind, c.platform)
    assert jax.devices(c.platform) == [device]
    assert jax.devices("cpu")[0].platform == "cpu"  # asking for the host still gets it


def _local_devices(c):
    (device,) = jax.local_devices()
    assert device.device_kind == c.device_kind and jax.local_devices(backend=c.platform) == [device]
    assert jax.local_devices(backend="cpu")[0].platform == "cpu"


def _device_count(c):
    assert jax.device_count() == jax.device_count(c.platform) == 1


def _local_device_count(c):
    assert jax.local_device_count() == 1


def _default_backend(c):
    assert jax.default_backend() == c.platform


def _get_default_device(c):
    device = jax.extend.backend.get_default_device()
    assert device is jax.devices()[0] and device.device_kind == c.device_kind


def _make_mesh(c):
    mesh = jax.make_mesh((1,), ("x",))
    assert mesh.devices.flat[0] is jax.devices()[0]
    assert mesh.abstract_mesh.abstract_device.device_kind == c.device_kind


def _default_device(c):
    with jax.default_device(jax.devices()[0]):
        assert float(jnp.ones(()) + 1) == 2.0  # computed on the host, as before


def _config(c):
    assert jax.config.jax_platforms == {"tpu": "tpu", "gpu": "cuda"}[c.platform]
    assert jax.config.read("jax_platforms") == jax.config.jax_platforms
    assert jax.config.jax_default_device is None
    assert jax.config.values["jax_platforms"] == jax.config.jax_platforms
    assert jax.config.jax_enable_x64 is False  # everything else is JAX's own


def _get_device_kind(c):
    assert pltpu.is_tpu_device() == (c.platform == "tpu")
    if c.platform == "tpu":
        assert pltpu.get_tpu_info().vmem_capacity_bytes == c.physical_vmem


def _get_num_device_cores(c):
    if c.platform == "tpu":
        assert pltpu.get_tpu_info().num_cores == c.num_cores


ASKED = {f.__name__[1:]: f for f in (
    _devices, _local_devices, _device_count, _local_device_count, _default_backend,
    _get_default_device, _make_mesh, _default_device, _config, _get_device_kind,
    _get_num_device_cores)}


def test_every_question_in_the_table_is_asked_here():
    assert {q.name for q in QUESTIONS} == set(ASKED)


@pytest.mark.parametrize("kind", ["TPU v5p", "NVIDIA A100"])
@pytest.mark.parametrize("question", [q.name for q in QUESTIONS])
def test_each_question_answers_as_the_chip_and_as_the_host_after(question, kind):
    entry = chip(kind)
    before = {q.name: [getattr(ns, q.name) for ns in q.where()] for q in QUESTIONS}
    with as_chip("tpu" if entry.platform == "tpu" else "cuda", kind) as c:
        assert c == entry
        ASKED[question](c)
    assert {q.name: [getattr(ns, q.name) for ns in q.where()] for q in QUESTIONS} == before
    assert jax.devices()[0].platform == "cpu" and jax.config.jax_platforms == "cpu"


def test_no_context_the_program_can_see():
    """No mesh is entered for the chip: a one-device shard_map (pod code on one chip) and a
    NamedSharding trace as in plain JAX, over the chip's device."""
    def body(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1

    def kernel(x):
        assert jax.sharding.get_abstract_mesh().empty
        mesh = jax.sharding.Mesh(np.array(jax.devices()), ("x",))
        x = jax.lax.with_sharding_constraint(x, jax.sharding.NamedSharding(mesh, P("x")))
        return jax.shard_map(lambda a: pl.pallas_call(body, out_shape=a)(a), mesh=mesh,
                             in_specs=P("x"), out_specs=P("x"), check_vma=False)(x)

    with as_chip("tpu", "TPU v6 lite"):
        assert jax.sharding.get_abstract_mesh().abstract_device is None
        traced = jax.make_jaxpr(kernel)(jax.ShapeDtypeStruct((8, 128), jnp.float32))
    assert "pallas_call" in str(traced)


def _sign(x_ref, o_ref):
    # Mosaic lowers sign by the TPU's generation (get_tpu_info): it must know the chip
    o_ref[...] = jnp.sign(x_ref[...])


def _sign_kernel(in_shard_map, triton):
    params = {}
    if triton:
        from jax.experimental.pallas import triton as pltriton
        params = {"compiler_params": pltriton.CompilerParams(num_warps=4)}

    def call(a):
        return pl.pallas_call(_sign, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype),
                              **params)(a)

    def kernel(x):
        if not in_shard_map:
            return call(x)
        mesh = jax.make_mesh((1,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
        return jax.shard_map(call, mesh=mesh, in_specs=P("x"), out_specs=P("x"),
                             check_vma=False)(x)

    return kernel


@pytest.mark.parametrize("in_shard_map", [False, True], ids=["plain", "one_device_shard_map"])
@pytest.mark.parametrize("platform", ["tpu", "cuda"])
def test_the_judge_names_the_chip_to_lowering_and_the_interpret_run_agrees(platform,
                                                                            in_shard_map):
    """Traced with the chip's answers, handed over, lowered by the judge for the chip (the chip
    named by the judge, not by anything in the trace) and run in interpret mode; a kernel inside
    a one-device shard_map works as in plain JAX."""
    from jaxbench.evaluator.judge import exporting, jaxpr_reader
    from jaxbench.evaluator.sandbox import handover

    spec = jax.ShapeDtypeStruct((16, 128), jnp.float32)
    kind = "TPU v5 lite" if platform == "tpu" else "NVIDIA A100"
    with as_chip(platform, kind):
        closed = jax.make_jaxpr(_sign_kernel(in_shard_map, platform == "cuda"))(spec)
    traced = jaxpr_reader.read(handover.dumps({"small": closed}))["traces"]["small"]
    assert all(getattr(compat.eqn_mesh_device(e), "device_kind", kind) == kind
               for e in compat.walk_eqns(traced.jaxpr))  # a mesh names the chip, or nothing
    exported = exporting.export(traced, [spec], platform, tpu_device_kind=kind,
                                gpu_device_kind=kind)
    assert ("tpu_custom_call" if platform == "tpu" else "triton") in exported.mlir_module()
    target = "tpu" if platform == "tpu" else "gpu"
    interpret = exporting.export(traced, [spec], "cpu", interpret=True, target=target,
                                 tpu_device_kind=kind, gpu_device_kind=kind)
    x = jax.random.normal(jax.random.key(0), spec.shape)
    out = interpret.call(x)
    out = out[0] if isinstance(out, (list, tuple)) else out
    np.testing.assert_array_equal(np.asarray(out), np.sign(np.asarray(x)))


def test_without_the_judge_naming_it_mosaic_would_lower_for_the_host():
    """What the judge's naming of the chip does: the same hand-over, lowered as it is, asks
    the host CPU for its TPU generation."""
    from jaxbench.evaluator.judge import exporting, jaxpr_reader
    from jaxbench.evaluator.sandbox import handover

    spec = jax.ShapeDtypeStruct((16, 128), jnp.float32)
    with as_chip("tpu", "TPU v6 lite"):
        closed = jax.make_jaxpr(_sign_kernel(False, False))(spec)
    traced = jaxpr_reader.read(handover.dumps({"small": closed}))["traces"]["small"]
    with pytest.raises(Exception, match="cpu"):
        compat.export_fn(compat.jaxpr_as_fun(exporting.with_interpret(traced, False)), [spec],
                         "tpu")


def test_the_originals_come_back_when_tracing_fails():
    with pytest.raises(ZeroDivisionError), as_chip("tpu", "TPU v6 lite"):
        1 / 0  # noqa: B018
    assert jax.devices()[0].platform == "cpu" and jax.default_backend() == "cpu"


def test_unknown_kinds_keep_their_name_and_get_the_default_limits():
    assert chip("TPU7x") is None
    assert chip_or_default("TPU7x", "tpu").device_kind == "TPU7x"
    assert chip_or_default("TPU7x", "tpu").scoped_vmem == CHIPS["TPU v6 lite"].scoped_vmem
    assert chip_or_default("NVIDIA H100 80GB HBM3", "gpu").compute_capability == "9.0"


def test_jax_ragged_paged_attention_chooses_its_blocks_for_the_chip():
    """Left to choose its own block sizes, JAX's ragged paged attention reads the TPU generation
    from jax.devices()[0].device_kind while tracing: the host CPU makes it fail, the chip's
    identity makes it trace (to the blocks of its v6e table)."""
    from jax.experimental.pallas.ops.tpu.ragged_paged_attention import ragged_paged_attention

    task = get_task("7p_ragged_paged_attention")
    specs = [jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in task.input_specs("small")]

    def kernel(*args):
        return ragged_paged_attention(*args, sm_scale=1 / math.sqrt(specs[0].shape[-1]))

    with pytest.raises(NotImplementedError, match="TPU version must be 4 or higher"):
        jax.make_jaxpr(kernel)(*specs)
    with as_chip("tpu", "TPU v6 lite"):
        traced = jax.make_jaxpr(kernel)(*specs)
    assert "pallas_call" in str(traced)


# -- the chip a kernel is judged for (--chip) ---------------------------------------------------

def test_a_pallasbench_kernel_is_judged_for_the_a100_the_suite_is_defined_for(
        evaluator, seven_stage_matmul):
    """l1_matmul's seed with num_stages=7: its dot operands, staged 7 deep, need an estimated
    224 KiB of shared memory per block: over an A100's 163 KiB (the PallasBench default), within
    an H200's 227 KiB."""
    a100 = evaluator.evaluate(seven_stage_matmul, "l1_matmul", trials=1)
    assert a100.chip == "NVIDIA A100"
    assert (a100.status, a100.stage) == ("compile_error", "lower"), a100.message
    assert "224 KiB" in a100.message and "NVIDIA A100's 163 KiB" in a100.message
    assert "judged for NVIDIA A100 (sm_80)" in a100.lowering_fidelity
    h200 = evaluator.evaluate(seven_stage_matmul, "l1_matmul", trials=1, chip="H200")
    assert (h200.status, h200.chip) == ("correct", "NVIDIA H200"), h200.message
    assert "judged for NVIDIA H200 (sm_90)" in h200.lowering_fidelity


def test_a_chip_that_is_not_one_for_the_target_is_refused(evaluator, seven_stage_matmul):
    seed = Path(__file__).parents[1] / "src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_tpu.py"
    with pytest.raises(ValueError, match="unknown TPU chip 'A100'; choose one of: TPU v4"):
        evaluator.evaluate(seed, "12p_rmsnorm", trials=1, chip="A100")
    with pytest.raises(ValueError, match="unknown GPU chip 'B200'"):
        evaluator.evaluate(seven_stage_matmul, "l1_matmul", trials=1, chip="B200")


def test_defaults_and_device_mode(monkeypatch):
    from jaxbench.evaluator.parent import case as parent

    assert parent.judged_chip("pallasbench", "gpu", "interpret", None) == "NVIDIA A100"
    assert parent.judged_chip("jaxbench", "gpu", "interpret", None) == "NVIDIA H200"
    assert parent.judged_chip("pallasbench", "tpu", "interpret", None) == "TPU v6 lite"
    assert parent.judged_chip("jaxbench", "tpu", "interpret", "v5e") == "TPU v5 lite"
    monkeypatch.setattr(parent, "device_kind", lambda: "NVIDIA H200")
    assert parent.judged_chip("pallasbench", "gpu", "device", None) == "NVIDIA H200"
    assert parent.judged_chip("pallasbench", "gpu", "device", "h200") == "NVIDIA H200"
    with pytest.raises(ValueError, match="--chip A100 but the attached GPU is NVIDIA H200"):
        parent.judged_chip("pallasbench", "gpu", "device", "A100")
    monkeypatch.setattr(parent, "device_kind", lambda: "NVIDIA A100-SXM4-80GB")
    assert parent.judged_chip("pallasbench", "gpu", "device", "A100") == "NVIDIA A100-SXM4-80GB"


def test_a_mosaic_gpu_kernel_judged_for_an_a100_is_a_compile_error(evaluator):
    """Pallas' Mosaic GPU backend needs Hopper: the 8p seed written for it, judged for an A100,
    fails at lower and says how to ask for Triton (judged for its suite's H200 it gets as far
    as the interpreter, see tests/test_seeds.py)."""
    seed = Path(__file__).parents[1] / "src/jaxbench/tasks/jaxbench/8p_gemm/seed_mosaic_gpu.py"
    result = evaluator.evaluate(seed, "8p_gemm", target="gpu", trials=1, chip="A100")
    assert (result.status, result.stage) == ("compile_error", "lower"), result.message
    assert result.message.startswith(
        "a Mosaic GPU kernel, judged for NVIDIA A100 (sm_80, no tma or wgmma)")
    assert "jax.experimental.pallas.triton.CompilerParams" in result.message
    assert result.kernel_backend == "mosaic_gpu"


def test_every_gpu_chip_has_its_limits_features_and_peaks():
    """The table a GPU result names has what the rules and the roofline read for every chip."""
    from jaxbench.backends.chips import MOSAIC_GPU_FEATURES, capability
    from jaxbench.backends.peaks import peak_for

    gpus = [c for c in CHIPS.values() if c.platform == "gpu"]
    assert {c.device_kind for c in gpus} >= {"NVIDIA A100", "NVIDIA H100", "NVIDIA H200"}
    for entry in gpus:
        assert entry.core_count and entry.shared_bytes and entry.registers == 65536, entry
        assert peak_for(entry.device_kind) is not None, entry.device_kind
        hopper = capability(entry) >= 90
        assert (MOSAIC_GPU_FEATURES <= entry.features) == hopper, entry.device_kind
        assert "cp.async" in entry.features
