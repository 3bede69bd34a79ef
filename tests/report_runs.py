"""Hand-made run directories for the report, compare and export tests.

``device_run`` uses the H200 seed timings of README's Measurements (results/h200) as its
t_ref / t_kernel figures, spread over two methods' samples; ``interpret_run`` has the
failures an interpret-mode run has (no timings).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jaxbench.runs import RunDir

H200 = {"device_kind": "NVIDIA H200", "peak_flops": 989e12, "peak_bytes_per_s": 4.8e12}
# task -> (t_ref_ms, t_kernel_ms) measured for the GPU seeds on an H200 (results/h200).
H200_SEEDS = {"1p_flash_attention": (22.725, 3.898), "8p_gemm": (6.541, 7.557),
              "12p_rmsnorm": (0.610, 0.758), "13p_cross_entropy": (14.399, 34.453),
              "50k_matmul_gelu_softmax": (1.378, 1.379)}
VERSIONS = {"python": "3.12.3", "jax": "0.11.2", "jaxlib": "0.11.2", "jaxbench": "0.1.0",
            "host": "elsewhere"}


def evaluation(task: str, status: str, *, method: str | None = None, sample: int | None = None,
               times: tuple[float, float] | None = None, mode: str = "device", target: str = "gpu",
               stage: str | None = None, message: str = "", **extra: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "evaluation", "task": task, "target": target, "mode": mode, "size": "full",
        "status": status, "message": message, "max_abs_err": 0.004 if status == "correct" else None,
        "rel_err": 0.001 if status == "correct" else None, "t_ref_ms": None, "t_kernel_ms": None,
        "speedup": None, "compile_s": 1.5, "source_sha256": f"{task}-{method}-{sample}",
        "versions": VERSIONS, "trials": 3, "wall_s": 9.0, "judged_on": "trusted_export",
        "stage": stage or ({"correct": "recheck" if mode == "device" else "correct",
                            "incorrect": "correct", "runtime_error": "correct"}.get(status, "lower")),
    }
    if method is not None:
        event.update(method=method, sample=sample, step=f"s{sample}", origin="")
    if times is not None:
        t_ref, t_kernel = times
        event.update(t_ref_ms=t_ref, t_kernel_ms=t_kernel, speedup=t_ref / t_kernel,
                     timing_method="wall_clock_interleaved", **H200)
    if mode == "interpret":
        event.update(device_kind="cpu", backend="cpu")
    event.update(extra)
    return event


def device_run(path: Path, *, finish: bool = True, scale: float = 1.0) -> Path:
    """An optimize run on an H200: best_of_n and evolve, four samples per task; ``scale``
    multiplies every kernel time (a slower second run for comparisons)."""
    run = RunDir.open(path, {"command": "optimize", "method": "best_of_n+evolve",
                             "model": "scripted:answers", "budget": 4, "target": "gpu",
                             "mode": "device", "size": "full"})
    for task, (t_ref, t_kernel) in H200_SEEDS.items():
        t_kernel *= scale
        run.append(evaluation(task, "compile_error", method="best_of_n", sample=0,
                              message="ValueError: block shape (96, 128) is not a multiple of (8, 128)"))
        run.append(evaluation(task, "correct", method="best_of_n", sample=1,
                              times=(t_ref, t_kernel * 1.3)))
        run.append(evaluation(task, "incorrect", method="best_of_n", sample=2,
                              message="max abs err 0.31 > atol 0.01 + rtol 0.01 * |truth| at 5 elements"))
        run.append(evaluation(task, "correct", method="best_of_n", sample=3, times=(t_ref, t_kernel)))
        run.append(evaluation(task, "correct", method="evolve", origin="seed", step="seed/seed_gpu",
                              times=(t_ref, t_kernel)))
        run.append(evaluation(task, "correct", method="evolve", sample=0, times=(t_ref, t_kernel * 0.9)))
        for sample in (1, 2, 3):
            run.append(evaluation(task, "runtime_error", method="evolve", sample=sample,
                                  message="XlaRuntimeError: RESOURCE_EXHAUSTED: out of shared memory"))
    if finish:
        run.finish(wall_s=1.0)
    return run.path


def interpret_run(path: Path, statuses: dict[str, str] | None = None) -> Path:
    """A `jaxbench run` of seeds in interpret mode: no timings, some failures."""
    statuses = statuses or {"12p_rmsnorm": "correct", "8p_gemm": "incorrect",
                            "2p_gqa_attention": "compile_error", "10p_sparse_moe": "timeout",
                            "19k_matmul_subtract_multiply_relu": "correct"}
    run = RunDir.open(path, {"command": "run", "kernels": "seed", "suite": "jaxbench",
                             "target": "tpu", "mode": "interpret", "size": "small"})
    for task, status in statuses.items():
        run.append(evaluation(task, status, mode="interpret", target="tpu", kind="seed",
                              message="" if status == "correct" else f"{status}: details of {task}",
                              compile_s=None if status in ("compile_error", "timeout") else 0.4,
                              job=f"{task}|seed|tpu|0"))
    run.finish(wall_s=1.0)
    return run.path
