"""Hand-made run directories for the report, compare and export tests.

``device_run`` uses the H200 seed timings of README's Measurements (results/h200) as its
t_ref / t_kernel figures, spread over two methods' samples; ``interpret_run`` has the
failures an interpret-mode run has (no timings). Evaluation events are written as runs write
them: an :class:`~jaxbench.contract.EvaluationResult` and its ``to_event``, with the run's and
the method's keys (job, kind, method, step, sample, ...) beside the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jaxbench.contract import EvaluationResult
from jaxbench.contract.result import FIELDS
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
    """An evaluation event: the result's fields (``extra``'s keys that are fields of
    :class:`EvaluationResult` among them) and, beside them, the run's and the method's keys
    (``method``, ``sample``, ``step``, ``origin`` for a method's sample; ``extra``'s other keys:
    ``job``, ``kind``, ``source_file``, ``parent``, ...)."""
    fields: dict[str, Any] = {
        "size": "full", "message": message, "max_abs_err": 0.004 if status == "correct" else None,
        "rel_err": 0.001 if status == "correct" else None, "compile_s": 1.5,
        "source_sha256": f"{task}-{method}-{sample}", "versions": VERSIONS, "trials": 3, "wall_s": 9.0,
        "judged_on": "trusted_export",
        "stage": stage or ({"correct": "recheck" if mode == "device" else "correct",
                            "incorrect": "correct", "runtime_error": "correct"}.get(status, "lower")),
    }
    keys: dict[str, Any] = {}
    if method is not None:
        keys.update(method=method, sample=sample, step=f"s{sample}", origin="")
    if times is not None:
        t_ref, t_kernel = times
        fields.update(t_ref_ms=t_ref, t_kernel_ms=t_kernel, speedup=t_ref / t_kernel,
                      timing_method="wall_clock_interleaved", **H200)
    if mode == "interpret":
        fields.update(device_kind="cpu", backend="cpu")
    for key, value in extra.items():
        (fields if key in FIELDS else keys)[key] = value
    result = EvaluationResult(task=task, target=target, mode=mode, status=status, **fields)
    return result.to_event(**keys)


def device_run(path: Path, *, finish: bool = True, scale: float = 1.0) -> Path:
    """An optimize run on an H200: best_of_n and evolve, four samples per task; ``scale``
    multiplies every kernel time (a slower second run for comparisons)."""
    run = RunDir.open(path, {"command": "optimize", "method": "best_of_n+evolve",
                             "model": "scripted:answers", "budget": 4, "target": "gpu",
                             "mode": "device", "size": "full"})
    for task, (t_ref, t_kernel) in H200_SEEDS.items():
        t_kernel *= scale
        run.append(evaluation(task, "compile_error", method="best_of_n", sample=0,
                              message="ValueError: block shape (96, 128) is not a multiple of (8, 128)",
                              rule="block_shape"))
        run.append(evaluation(task, "correct", method="best_of_n", sample=1,
                              times=(t_ref, t_kernel * 1.3)))
        run.append(evaluation(task, "incorrect", method="best_of_n", sample=2,
                              message="max abs err 0.31 > atol 0.01 + rtol 0.01 * |truth| at 5 elements",
                              rule="mismatch"))
        run.append(evaluation(task, "correct", method="best_of_n", sample=3, times=(t_ref, t_kernel)))
        run.append(evaluation(task, "correct", method="evolve", origin="seed", step="seed/seed_gpu",
                              times=(t_ref, t_kernel)))
        run.append(evaluation(task, "correct", method="evolve", sample=0, times=(t_ref, t_kernel * 0.9)))
        for sample in (1, 2, 3):
            run.append(evaluation(task, "runtime_error", method="evolve", sample=sample,
                                  message="XlaRuntimeError: RESOURCE_EXHAUSTED: out of shared memory",
                                  rule="runtime"))
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
                              tol_fraction=0.25 if status == "correct" else None,
                              job=f"{task}|seed|tpu|0"))
    run.finish(wall_s=1.0)
    return run.path


# Verdicts of the shapes the evaluator writes (status, stage, message, rule), its messages copied
# from its code (evaluator/parent/evaluator.py, compare.py, judge/rules.py, sandbox/tracer.py,
# memory_rules.py, gpu/triton_rules.py, gpu/race.py, static.py) with made-up figures.
CORRECT = ("correct", "correct", "", None)
TPU_FAILURES = [
    ("incorrect", "correct", "output: 3072 of 65536 elements (4.7%) exceed atol 0.01 + rtol 0.01·|truth|, "
     "within [0:8, 0:512], first at (0, 3); worst at (5, 17): got 0.91823, truth 0.40211", "mismatch"),
    ("compile_error", "lower", "memory budget at size 'small', pallas_call #0: needs 48.0 MiB of VMEM on "
     "TPU v6 lite, over the scoped default 32 MiB (limit 32 MiB, physical 128 MiB): input 0 block "
     "(2048, 2048) x2 = 16.0 MiB, input 1 block (2048, 2048) x2 = 16.0 MiB, output 0 block (2048, "
     "2048) x2 = 16.0 MiB. Use smaller blocks (or raise vmem_limit_bytes in pltpu.CompilerParams, up "
     "to the physical size)", "vmem_budget"),
    ("compile_error", "lower", "lowering for tpu: ValueError: The Pallas TPU lowering currently requires "
     "that the last two dimensions of your block shape are divisible by 8 and 128 respectively, or be "
     "equal to the respective dimensions of the overall array. Block spec for args[0] in pallas_call "
     "kernel.py:41 has block shape (96, 100), array shape (512, 512), and index_map { lambda ; a:i32[]. "
     "let  in (a, 0) }, in memory space None. (at kernel.py:41)", "block_shape"),
    ("incorrect", "correct", "output has 4096 NaN/Inf of 65536 elements (6.2%), at [56:64, 0:512] "
     "(every element there): e.g. never written, or read out of bounds", "nan_inf"),
    ("rejected", "lower", "work outside pallas_call: 62% of the task's FLOPs run in XLA (dot_general "
     "3.4e+09 FLOPs); at most 10% may (glue like reshapes, casts and padding is free)", "outside_flops"),
    ("timeout", "correct", "no verdict within 120 s (wall clock) running the exported module; runner "
     "killed", "time_limit"),
]
GPU_FAILURES = [
    ("incorrect", "lower", "GPU race rule: pallas_call #0: output 0's block does not depend on grid axis "
     "1 (grid (8, 4)): its 4 programs along that axis write the same block; on a GPU grid programs run "
     "in parallel, so they race. Give every program its own output block (loop over the reduction "
     "inside the kernel)", "gpu_race"),
    ("compile_error", "lower", "Triton's rules at size 'small', pallas_call #0: Triton rule power_of_two: "
     "tensor get -> f32[48,128] has 6,144 elements, not a power of two at kernel.py:22: x = x_ref[...]. "
     "Use power-of-two tiles; mask or pad the edges", "triton_rule"),
    ("compile_error", "lower", "Triton's rules at size 'small', pallas_call #0: Triton rule shared_memory: "
     "the operands of a dot need an estimated 288 KiB of shared memory (96 KiB x 3 pipeline stages), "
     "over NVIDIA H200's 227 KiB at kernel.py:30. Use smaller tiles (along K in particular) or fewer "
     "stages", "smem_budget"),
    ("unverified", "correct", "the kernel has no exportable interpret-mode lowering, so the trusted side "
     "cannot run it on this CPU and nothing vouches for its outputs (it passed every check up to "
     "lowering; evaluate it on the chip with --mode device): NotImplementedError: Unimplemented "
     "primitive in Pallas GPU interpret mode: wgmma", "no_interpret_export"),
    ("runtime_error", "correct", "XlaRuntimeError: INTERNAL: Generated function failed: CpuCallback error: "
     "IndexError: index 64 is out of bounds for axis 0 with size 64", "runtime"),
]
SUITE_CONFIG = {"command": "run", "kernels": "seed", "suite": "jaxbench", "tasks": None, "target": "all",
                "mode": "interpret", "size": "small", "trials": 3}


def _suite_verdict(i: int, target: str) -> tuple[str, str, str, str | None]:
    """Job i's verdict: about 3 in 5 correct, the rest cycling through the target's failures."""
    if i % 5 in (0, 2, 3):
        return CORRECT
    failures = TPU_FAILURES if target == "tpu" else GPU_FAILURES
    return failures[(i // 5 * 2 + i % 5) % len(failures)]


def suite_run(path: Path, *, done: int | None = None, lost: int = 0) -> Path:
    """`jaxbench run --suite jaxbench --kernels seed --target all --mode interpret` as the CLI
    writes it: the 100 real jobs (50 tasks x 2 targets, their real job keys and seed files), with
    a mix of verdicts. ``done`` evaluations only (an interrupted run: no run_end), the next
    ``lost`` jobs logged as evaluation_lost."""
    import hashlib

    from jaxbench.runs import shipped_jobs
    from jaxbench.tasks import list_tasks

    jobs = shipped_jobs(list_tasks("jaxbench"), "seed", ("tpu", "gpu"))
    run = RunDir.open(path, SUITE_CONFIG, plan=[job.key for job in jobs])
    total = len(jobs) if done is None else done
    counts: dict[str, int] = {}
    for i, job in enumerate(jobs[:total]):
        status, stage, message, rule = _suite_verdict(i, job.target)
        source = job.path.read_text()
        compiled = stage in ("correct", "time", "recheck")
        run.append(evaluation(
            job.task, status, mode="interpret", target=job.target, stage=stage, message=message, rule=rule,
            compile_s=round(0.3 + (i * 37 % 23) / 4, 2) if compiled else None,
            max_abs_err=0.0004 * (1 + i % 7) if status == "correct" else None,
            tol_fraction=round(0.02 * (1 + i % 9), 3) if status == "correct" else None,
            source_sha256=hashlib.sha256(source.encode()).hexdigest(), job=job.key, kind=job.kind,
            kernel_file=str(job.path), source_file=run.keep_source(source)))
        counts[status] = counts.get(status, 0) + 1
    for job in jobs[total:total + lost]:
        run.append({"type": "evaluation_lost", "job": job.key,
                    "message": "the Ray task's node died on every retry (3 attempts)"})
    if done is None:
        run.finish(wall_s=812.4, counts=counts, evaluations=len(jobs))
    return run.path


AGENT_TASKS = ("1p_flash_attention", "2p_gqa_attention", "8p_gemm", "9p_swiglu_mlp", "12p_rmsnorm",
               "13p_cross_entropy", "19k_matmul_subtract_multiply_relu", "27k_matmul_mish_mish",
               "41k_gemm_add_relu", "50k_matmul_gelu_softmax")
AGENT_FAILURES = [
    ("compile_error", "static", "SyntaxError at line 14: invalid syntax", "syntax_error"),
    ("rejected", "static", "policy violation: line 3: import of 'os' is not allowed", "static_policy"),
    ("compile_error", "trace", "TypeError: dot_general requires contracting dimensions to have the same "
     "shape, got (256,) and (128,). (at kernel.py:37)", "trace_error"),
    ("no_pallas", "trace", "no pallas_call in the traced kernel: the hot path must be Pallas", "no_kernel"),
    *TPU_FAILURES,
    ("runtime_error", "correct", "untrusted interpreter: XlaRuntimeError: INTERNAL: Generated function "
     "failed: CpuCallback error: IndexError: index 64 is out of bounds for axis 0 with size 64", "runtime"),
]


def agent_run(path: Path, *, budget: int = 8, stop_after: int | None = None) -> Path:
    """`jaxbench optimize --method best_of_n --target tpu --mode interpret --budget 8` over ten
    tasks, as the CLI writes it: priced LLM calls, samples whose verdicts start with syntax and
    policy errors and turn correct for most tasks, task_done events. ``stop_after`` tasks only
    (an interrupted run: no run_end)."""
    import random

    rng = random.Random(7)
    config = {"command": "optimize", "method": "best_of_n", "options": {}, "seeded": False,
              "model": "openai:example-model", "tasks": list(AGENT_TASKS), "budget": budget, "docs": True,
              "target": "tpu", "size": "small", "mode": "interpret", "trials": 3}
    run = RunDir.open(path, config)
    for t, task in enumerate(AGENT_TASKS[:stop_after]):
        first_correct = [1, 3, 2, None, 0, 5, 1, None, 2, 6][t]
        for sample in range(budget):
            run.append({"type": "llm_call", "task": task, "method": "best_of_n", "step": f"s{sample}",
                        "kind": "kernel", "sample": sample, "model": "openai:example-model",
                        "input_tokens": 6000 + rng.randrange(3000),
                        "output_tokens": 2500 + rng.randrange(4000),
                        "cost": round(0.03 + rng.random() * 0.04, 4),
                        "latency_s": 20.0 + (t * 7 + sample * 5) % 13 * 2.5})
            ok = first_correct is not None and sample >= first_correct and rng.random() < 0.7
            status, stage, message, rule = (CORRECT if ok else
                                            AGENT_FAILURES[rng.randrange(len(AGENT_FAILURES))])
            compiled = stage in ("correct", "time", "recheck")
            run.append(evaluation(task, status, method="best_of_n", sample=sample, mode="interpret",
                                  target="tpu", stage=stage, message=message, rule=rule,
                                  compile_s=round(0.4 + rng.random() * 6, 2) if compiled else None,
                                  tol_fraction=round(0.02 + sample / 10, 3) if ok else None))
        run.append({"type": "task_done", "task": task, "method": "best_of_n", "samples": budget,
                    "seeded": False})
    if stop_after is None:
        run.finish()
    return run.path


# The LLM calls of usage_run: (method, kind, step, fields). autocomp's kernel calls: latencies
# 2, 4, 10 and 6 s (the last answered from the local cache), one failed (no latency, tokens or
# price), one unpriced, two reporting prompt-cache hits (400 and 0 of 1000 input tokens), one
# not reporting them (None) and one without the field; its two plan calls report 250 of 500 each.
USAGE_CALLS = [
    ("autocomp", "kernel", "s0", {"latency_s": 2.0, "input_tokens": 1000, "output_tokens": 200,
                                  "cost": 0.01, "cached_input_tokens": 400}),
    ("autocomp", "kernel", "s1", {"latency_s": 4.0, "input_tokens": 1000, "output_tokens": 300,
                                  "cost": 0.02, "cached_input_tokens": 0}),
    ("autocomp", "kernel", "s2", {"latency_s": 10.0, "input_tokens": 2000, "output_tokens": 500,
                                  "cost": None}),
    ("autocomp", "kernel", "s3", {"cost": None, "error": "openai: BadRequestError: context too long",
                                  "finish_reason": "error", "status_code": 400, "response": ""}),
    ("autocomp", "kernel", "s4", {"latency_s": 6.0, "input_tokens": 1000, "output_tokens": 100,
                                  "cost": 0.03, "cached": True, "cached_input_tokens": None}),
    ("autocomp", "plan", "plan0", {"latency_s": 1.0, "input_tokens": 500, "output_tokens": 50,
                                   "cost": 0.005, "cached_input_tokens": 250}),
    ("autocomp", "plan", "plan1", {"latency_s": 3.0, "input_tokens": 500, "output_tokens": 50,
                                   "cost": 0.005, "cached_input_tokens": 250}),
    ("best_of_n", "kernel", "s0", {"latency_s": 1.5, "input_tokens": 800, "output_tokens": 400,
                                   "cost": 0.1}),
    ("best_of_n", "kernel", "s1", {"latency_s": 2.5, "input_tokens": 900, "output_tokens": 600,
                                   "cost": 0.2}),
]


def usage_run(path: Path) -> Path:
    """An optimize run of autocomp and best_of_n on one task in interpret mode, for the table of
    LLM calls and evaluation time: the calls of :data:`USAGE_CALLS`; autocomp's evaluations took
    3, 5 and 10 s, one reused the verdict of s0 (its copied ``wall_s`` is no time spent) and one
    answer had no kernel (synthetic, never run); best_of_n's took 4 and 6 s."""
    model = "openai:example-model"
    run = RunDir.open(path, {"command": "optimize", "method": "autocomp+best_of_n", "model": model,
                             "tasks": ["8p_gemm"], "budget": 5, "target": "tpu", "mode": "interpret",
                             "size": "small"})
    for method, kind, step, fields in USAGE_CALLS:
        run.append({"type": "llm_call", "task": "8p_gemm", "method": method, "step": step, "kind": kind,
                    "model": model, "finish_reason": "stop", "cached": False, **fields})
    tpu = {"mode": "interpret", "target": "tpu"}
    run.append(evaluation("8p_gemm", "correct", method="autocomp", sample=0, wall_s=3.0, **tpu))
    run.append(evaluation("8p_gemm", "incorrect", method="autocomp", sample=1, wall_s=5.0, **tpu))
    run.append(evaluation("8p_gemm", "correct", method="autocomp", sample=2, wall_s=3.0, reused_from="s0",
                          **tpu))
    run.append(evaluation("8p_gemm", "compile_error", method="autocomp", sample=3, stage="static",
                          message="the answer holds no code block", synthetic=True, wall_s=None, **tpu))
    run.append(evaluation("8p_gemm", "runtime_error", method="autocomp", sample=4, wall_s=10.0, **tpu))
    run.append(evaluation("8p_gemm", "correct", method="best_of_n", sample=0, wall_s=4.0, **tpu))
    run.append(evaluation("8p_gemm", "incorrect", method="best_of_n", sample=1, wall_s=6.0, **tpu))
    run.finish()
    return run.path


def evolve_run(path: Path, tasks: tuple[str, ...] = ("8p_gemm", "12p_rmsnorm"), budget: int = 8) -> Path:
    """`jaxbench optimize --method evolve` as the driver writes it, with the scripted model of
    ``agent_fakes`` (distinct kernels, some wrong, some not kernels at all) and its instant
    evaluator: seeds, islands, parents, diff edits that do not apply and are asked again,
    prompts and answers."""
    from agent_fakes import FakeEvaluator, kernels, script

    from jaxbench.agents import get_method, optimize
    from jaxbench.llm import get_model

    answers = []
    for i, kernel in enumerate(kernels("tpu", 3 * budget * len(tasks))):
        answers.append(kernel if i % 5 != 3 else "I would rather not write a kernel today.")
    config = {"command": "optimize", "method": "evolve", "options": {"islands": 2}, "seeded": True,
              "model": "scripted:answers", "tasks": list(tasks), "budget": budget, "target": "tpu",
              "size": "small", "mode": "interpret", "trials": 1}
    run = RunDir.open(path, config)
    model = get_model(script(path.parent / f"{path.name}-answers", *answers))
    optimize(list(tasks), get_method("evolve", islands=2, children=2), model, run, budget=budget,
             target="tpu", mode="interpret", trials=1, workers=1, evaluator=FakeEvaluator())
    run.finish()
    return run.path


PROMPT_HEAD = ("You are writing a Pallas TPU kernel for the task below. Reference:\n\n"
               "def reference(x, w):\n    return jax.nn.gelu(x @ w)\n\n" + "Shapes and rules. " * 120)


def big_agent_run(path: Path, tasks: int = 50, samples: int = 144, chains: int = 4) -> Path:
    """A synthetic `jaxbench optimize --method iterative` run at the paper's per-method scale:
    ``tasks`` x ``samples`` samples (7,200 by default), each with a model call (a 2 KB shared
    prompt head, its own feedback, an answer holding its kernel), a kept source and a verdict,
    in ``chains`` refinement chains per task (each sample's parent is the chain's previous one).
    The events are written in one go (not fsynced one by one: this is a fixture)."""
    import hashlib
    import json
    import time

    from jaxbench.tasks import list_tasks

    task_ids = [t.id for t in list_tasks("jaxbench")][:tasks]
    config = {"command": "optimize", "method": "iterative", "options": {"chains": chains}, "seeded": False,
              "model": "openai:example-model", "tasks": task_ids, "budget": samples, "target": "tpu",
              "size": "small", "mode": "interpret", "trials": 1}
    run = RunDir.open(path, config)
    (path / "sources").mkdir(exist_ok=True)
    lines = [json.dumps({"type": "run_start", "time": time.time()})]
    failures = AGENT_FAILURES
    for t, task in enumerate(task_ids):
        for sample in range(samples):
            chain, turn = sample % chains, sample // chains
            step = f"c{chain}/t{turn}"
            parent = f"c{chain}/t{turn - 1}" if turn else None
            source = (f"import jax\nfrom jax.experimental import pallas as pl\n\nTARGET = 'tpu'\nBLOCK = "
                      f"{128 * (1 + sample % 4)}\n\n\ndef _body(x_ref, o_ref):\n"
                      f"    o_ref[...] = x_ref[...] * {turn}  # {task} chain {chain}\n\n\n"
                      f"def kernel(x):\n    return pl.pallas_call(_body, "
                      f"out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)\n")
            sha = hashlib.sha256(source.encode()).hexdigest()
            (path / "sources" / f"{sha}.py").write_text(source)
            ok = (t * 7 + sample * 3) % 5 < 2
            status, stage, message, rule = CORRECT if ok else failures[(t + sample) % len(failures)]
            prompt = PROMPT_HEAD + f"\nTask {task}. Turn {turn} of chain {chain}: your previous kernel " \
                                   f"{parent or '(none)'} was judged: {message or 'correct'}\n"
            lines.append(json.dumps({
                "type": "llm_call", "time": time.time(), "task": task, "method": "iterative", "step": step,
                "kind": "kernel", "sample": sample, "sample_id": f"{task}/iterative/{step}",
                "model": "openai:example-model", "docs": [], "prompt": prompt,
                "response": f"Here is the kernel for turn {turn}.\n```python\n{source}```\n",
                "finish_reason": "stop", "input_tokens": 2000, "output_tokens": 400, "cost": 0.01,
                "latency_s": 20.0}))
            lines.append(json.dumps(evaluation(
                task, status, method="iterative", sample=sample, mode="interpret", target="tpu",
                stage=stage, message=message, rule=rule, step=step, parent=parent,
                origin="refine" if parent else "sample",
                compile_s=0.5 if stage in ("correct", "time", "recheck") else None,
                tol_fraction=round(0.05 + (sample % 17) / 20, 3) if ok else None,
                source_sha256=sha, candidate_sha256=sha, source_file=f"sources/{sha}.py")))
        lines.append(json.dumps({"type": "task_done", "time": time.time(), "task": task,
                                 "method": "iterative", "samples": samples, "seeded": False}))
    with open(path / "events.jsonl", "a") as f:
        f.write("\n".join(lines) + "\n")
    run.finish()
    return run.path
