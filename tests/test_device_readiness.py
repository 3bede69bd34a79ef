"""What the first GPU run depends on, checked without one: both GPU backends' detection (from
the kernel's compiler params, and from the exported module the judge reads), the race rule
for Mosaic GPU's sequential grid axes, and the shipped Mosaic GPU seeds' registration."""

import jax
import pytest

from jaxbench import compat
from jaxbench.backends import kernel_backend_of_calls
from jaxbench.evaluator.static import declared_target
from jaxbench.tasks import get_task

MOSAIC_GPU_SEEDS = ("8p_gemm", "12p_rmsnorm", "1p_flash_attention")


def _kernel_eqns(path, task_id, size="small"):
    from jaxbench.evaluator.sandbox.exporting import scan

    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # trusted shipped kernels
    task = get_task(task_id)
    closed = jax.make_jaxpr(namespace["kernel"])(*task.input_specs(size))
    return closed, scan(closed).kernel_eqns


@pytest.mark.parametrize("task_id", ["8p_gemm", "12p_rmsnorm"])
def test_backend_detected_from_compiler_params(task_id):
    files = get_task(task_id).kernel_files()
    expected = {("seed", "gpu"): "triton", ("seed_mosaic", "gpu"): "mosaic_gpu",
                ("seed", "tpu"): "mosaic_tpu"}
    for key, backend in expected.items():
        _, eqns = _kernel_eqns(files[key], task_id)
        assert eqns and {compat.kernel_backend(e, key[1]) for e in eqns} == {backend}, key


def test_backend_of_params_older_forms_and_defaults():
    assert compat.backend_of_params({"triton": {"num_warps": 4}}) == "triton"
    assert compat.backend_of_params({"mosaic_gpu": {}}) == "mosaic_gpu"
    assert compat.backend_of_params({"mosaic": {}}) == "mosaic_tpu"
    assert compat.backend_of_params(None) is None
    # JAX 0.10+ lowers a GPU pallas_call without compiler params with Mosaic GPU by default.
    assert compat.default_gpu_backend() in ("mosaic_gpu", "triton")


def test_backend_from_the_exported_module():
    assert kernel_backend_of_calls({"__gpu$xla.gpu.triton": 2}) == "triton"
    assert kernel_backend_of_calls({"mosaic_gpu_v2": 1, "Sharding": 3}) == "mosaic_gpu"
    assert kernel_backend_of_calls({"tpu_custom_call": 1}) == "mosaic_tpu"
    assert kernel_backend_of_calls({"mosaic_gpu": 1, "__gpu$xla.gpu.triton": 1}) == \
        "mosaic_gpu+triton"
    assert kernel_backend_of_calls({"Sharding": 1}) is None


def test_mosaic_gpu_seeds_are_shipped_seeds():
    from jaxbench.runner import shipped_jobs

    for task_id in MOSAIC_GPU_SEEDS:
        task = get_task(task_id)
        path = task.kernel_files().get(("seed_mosaic", "gpu"))
        assert path is not None and path.name == "seed_mosaic_gpu.py", task_id
        assert declared_target(path.read_text()) == "gpu"
        jobs = {(j.kind, j.target) for j in shipped_jobs([task], "seed", ["gpu"])}
        assert jobs == {("seed", "gpu"), ("seed_mosaic", "gpu")}, task_id


def test_race_rule_exempts_mosaic_gpu_sequential_axes_only():
    """The Mosaic GPU matmul accumulates along a "sequential" K axis: not a race. The same
    kernel with that axis declared "parallel" writes one output block from several programs
    at once, which the rule must still catch."""
    from jaxbench.evaluator.sandbox import exporting, gpu_rules

    path = get_task("8p_gemm").kernel_files()[("seed_mosaic", "gpu")]
    closed, (eqn,) = _kernel_eqns(path, "8p_gemm")
    assert compat.sequential_grid_axes(eqn) == frozenset({2})
    assert gpu_rules.parallel_write_conflict(closed) == ""

    racy = path.read_text().replace('"parallel", "parallel", "sequential"',
                                    '"parallel", "parallel", "parallel"')
    namespace: dict = {}
    exec(compile(racy, "racy.py", "exec"), namespace)
    task = get_task("8p_gemm")
    closed = jax.make_jaxpr(namespace["kernel"])(*task.input_specs("small"))
    assert compat.sequential_grid_axes(exporting.scan(closed).kernel_eqns[0]) == frozenset()
    assert "does not depend on grid axis 2" in gpu_rules.parallel_write_conflict(closed)
