"""Trace as the chip: what a kernel can ask about its hardware while it is traced answers as the
target chip would (the chip table, jaxbench/backends/chips.py), and only while it is traced."""

import math
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax.experimental.pallas import tpu as pltpu

from jaxbench.backends.chips import CHIPS, chip, chip_or_default
from jaxbench.evaluator.sandbox.chip import as_chip
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
        # What JAX's Mosaic GPU matmuls read for their grid: the abstract device's SMs.
        assert jax.sharding.get_abstract_mesh().abstract_device.num_cores == sms
        with pytest.raises(AttributeError, match="only the chip's identity"):
            device.memory_stats()  # not attached: no memory, no client
        with pytest.raises(AttributeError, match="read-only"):
            device.device_kind = "NVIDIA B200"
    assert jax.devices()[0].platform == "cpu"


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
    assert a100["chip"] == "NVIDIA A100"
    assert (a100["status"], a100["stage"]) == ("compile_error", "lower"), a100["message"]
    assert "224 KiB" in a100["message"] and "NVIDIA A100's 163 KiB" in a100["message"]
    assert "judged for NVIDIA A100 (sm_80)" in a100["lowering_fidelity"]
    h200 = evaluator.evaluate(seven_stage_matmul, "l1_matmul", trials=1, chip="H200")
    assert (h200["status"], h200["chip"]) == ("correct", "NVIDIA H200"), h200["message"]
    assert "judged for NVIDIA H200 (sm_90)" in h200["lowering_fidelity"]


def test_a_chip_that_is_not_one_for_the_target_is_refused(evaluator, seven_stage_matmul):
    seed = Path(__file__).parents[1] / "src/jaxbench/tasks/jaxbench/p12_rmsnorm/seed_tpu.py"
    with pytest.raises(ValueError, match="unknown TPU chip 'A100'; choose one of: TPU v4"):
        evaluator.evaluate(seed, "12p_rmsnorm", trials=1, chip="A100")
    with pytest.raises(ValueError, match="unknown GPU chip 'B200'"):
        evaluator.evaluate(seven_stage_matmul, "l1_matmul", trials=1, chip="B200")


def test_defaults_and_device_mode(monkeypatch):
    from jaxbench.evaluator import parent

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
    seed = Path(__file__).parents[1] / "src/jaxbench/tasks/jaxbench/p08_gemm/seed_mosaic_gpu.py"
    result = evaluator.evaluate(seed, "8p_gemm", target="gpu", trials=1, chip="A100")
    assert (result["status"], result["stage"]) == ("compile_error", "lower"), result["message"]
    assert result["message"].startswith(
        "a Mosaic GPU kernel, judged for NVIDIA A100 (sm_80, no tma or wgmma)")
    assert "jax.experimental.pallas.triton.CompilerParams" in result["message"]
    assert result["kernel_backend"] == "mosaic_gpu"


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
