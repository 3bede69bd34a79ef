"""Mosaic GPU kernels written with ``plgpu.kernel`` (Pallas' ``mpmd_map``), the API JAX 0.11 and
0.12 lower: counted as kernels, lowered for CUDA at every size, never `correct` on a CPU host
(JAX's generic interpreter cannot run them, so nothing trusted vouches for their outputs), and
checked by JAX's Mosaic GPU interpreter on the untrusted side where JAX has one (0.11+), which
can only find them wrong.

Run by CI under JAX 0.10 and, where a Python 3.12 is found, under JAX 0.12 as well (with the
plgpu.kernel seeds of tests/test_seeds.py): ``pytest -k "mosaic_gpu or seed_mosaic"``.
"""

import pytest

from jaxbench import compat

EMPTY_KERNEL = '''
import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

TARGET = "gpu"


def _body(a_ref, b_ref, o_ref):
    # writes nothing (whatever the output buffer held is the result), but reads its block's
    # index, which JAX's generic interpreter cannot bind
    @pl.when(jax.lax.axis_index("blocks") > 2)
    def _():
        pass


def kernel(a, b):
    out = jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype)
    return plgpu.kernel(_body, out_type=out, grid=(2,), grid_names=("blocks",))(a, b)
'''


def test_an_empty_mosaic_gpu_kernel_is_never_correct(evaluator):
    result = evaluator.evaluate(EMPTY_KERNEL, "8p_gemm", trials=1)
    assert result.kernel_backend == "mosaic_gpu"
    assert "cross-lowered to Mosaic GPU for CUDA" in result.lowering_fidelity
    assert "Triton's rules, the grid race rule" in result.lowering_fidelity
    report = result.stages["correct"]["gpu_interpreter"]
    if compat.gpu_interpreter() is None:  # JAX 0.10: nothing can run it here
        assert (result.status, result.stage) == ("unverified", "correct")
        assert report.startswith("unavailable: JAX 0.10")
        assert "no exportable interpret-mode lowering" in result.message
    else:  # the untrusted Mosaic GPU interpreter ran it, and found it wrong
        assert report == "ran"
        assert (result.status, result.stage) == ("incorrect", "correct"), result.message
        assert result.message.endswith("(gpu_interpreter)")


def test_without_block_indices_the_trusted_side_runs_it(evaluator):
    """A plgpu.kernel body that reads no mesh axis has a callback-free interpret export: the
    trusted side runs it like any other kernel (and finds this one's output never written)."""
    source = EMPTY_KERNEL.replace("jax.lax.axis_index(\"blocks\") > 2", "False")
    result = evaluator.evaluate(source, "8p_gemm", trials=1)
    assert (result.status, result.stage) == ("incorrect", "correct"), result.message
    assert result.judged_on == "trusted_export"
    assert "never written" in result.message
    assert "gpu_interpreter" not in result.stages.get("correct", {})


def test_a_mosaic_gpu_kernel_judged_for_an_a100_names_the_chip(evaluator):
    result = evaluator.evaluate(EMPTY_KERNEL, "8p_gemm", trials=1, chip="A100")
    assert (result.status, result.stage) == ("compile_error", "lower"), result.message
    assert "needs a Hopper (sm_90) or newer GPU" in result.message


@pytest.mark.parametrize("task_id", ["12p_rmsnorm", "8p_gemm", "1p_flash_attention"])
def test_seed_mosaic_is_a_plgpu_kernel_on_every_jax(task_id):
    """The shipped Mosaic GPU seeds trace to ``mpmd_map`` (plgpu.kernel), a kernel primitive
    for the evaluator, with the Mosaic GPU backend."""
    import jax

    from jaxbench.evaluator.judge.exporting import scan
    from jaxbench.tasks import get_task

    task = get_task(task_id)
    path = task.kernel_files()[("seed_mosaic", "gpu")]
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # a shipped seed
    with compat.abstract_device("gpu", "NVIDIA H200", 132):
        closed = jax.make_jaxpr(namespace["kernel"])(*task.input_specs("small"))
    eqns = scan(closed).kernel_eqns
    assert eqns and {e.primitive.name for e in eqns} == {"mpmd_map"}
    assert {compat.kernel_backend(e, "gpu") for e in eqns} == {"mosaic_gpu"}
