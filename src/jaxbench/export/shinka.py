"""Tasks as ShinkaEvolve task folders: ``jaxbench export-tasks --format shinka OUT/``.

ShinkaEvolve (Sakana AI's evolutionary program optimizer) evolves one program per task. Its
contract: a folder with ``initial.py`` (the first program; only the lines between
``# EVOLVE-BLOCK-START`` and ``# EVOLVE-BLOCK-END`` may change), ``evaluate.py`` (run as
``python evaluate.py --program_path P --results_dir D``; writes ``D/correct.json`` =
``{"correct": bool, "error": str | null}`` and ``D/metrics.json`` with ``combined_score``,
``public``, ``private``, ``text_feedback``, ``extra_data``) and a ``shinka.yaml``.

Here ``initial.py`` is the task's shipped seed for the target: the seed's code inside the
block, its ``kernel`` renamed ``pallas_kernel``, and after the block the fixed entry point
(``TARGET`` and ``kernel``, which calls ``pallas_kernel``). ``evaluate.py`` hands the program
file to jaxbench's evaluator, which never imports it into the evaluating process (the
candidate runs in the evaluator's sandboxed, untrusted tracer; the verdict comes from the
trusted judge). Scores (higher is better):

- timed (device mode): ``combined_score`` = speedup over the XLA reference (t_ref / t_kernel);
- interpret mode (no timing on a CPU): 1.0 for a correct kernel;
- anything not correct: 0.0 and ``correct: false``; a NaN or infinite score is not correct.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from jaxbench.tasks import Task

START, END = "# EVOLVE-BLOCK-START", "# EVOLVE-BLOCK-END"
ENTRY = "pallas_kernel"


class ExportError(ValueError):
    """A task that cannot be exported (no seed for the target, an unusual seed)."""


def initial_program(seed_source: str, target: str) -> str:
    """The seed as a ShinkaEvolve program: its code inside the block, the entry point after."""
    if re.search(rf"\b{ENTRY}\b", seed_source):
        raise ExportError(f"the seed already uses the name {ENTRY!r}")
    body, count = re.subn(r"^def kernel\(", f"def {ENTRY}(", seed_source, flags=re.M)
    if count != 1:
        raise ExportError("the seed must define exactly one top-level `def kernel(`")
    body = re.sub(r'^TARGET\s*=\s*["\'](tpu|gpu)["\']\s*$\n?', "", body, flags=re.M)
    return (f"{START}\n{body.rstrip()}\n{END}\n\n\n"
            "# Fixed entry point (outside the evolve block): the evaluator calls kernel(*inputs).\n"
            f'TARGET = "{target}"\n\n\n'
            "def kernel(*inputs):\n"
            f"    return {ENTRY}(*inputs)\n")


_EVALUATE = '''"""ShinkaEvolve evaluator for jaxbench task {task_id!r} (target {target}, size {size}, mode
{mode}), written by `jaxbench export-tasks --format shinka`.

Usage: python evaluate.py --program_path PROGRAM.py --results_dir DIR
Writes DIR/correct.json and DIR/metrics.json. The program is judged by jaxbench's evaluator,
which runs it in a sandboxed process and never imports it here. combined_score: the speedup
over the XLA reference when timed (device mode); 1.0 for a correct kernel in interpret mode
(no timing on a CPU); 0.0 otherwise.
"""

import argparse
import json
import math
from pathlib import Path

TASK_ID = {task_id!r}
TARGET = {target!r}
SIZE = {size!r}
MODE = {mode!r}


def score(result):
    """(correct, combined_score) from a jaxbench result."""
    if result["status"] != "correct":
        return False, 0.0
    value = result.get("speedup")
    value = 1.0 if value is None else float(value)
    if not math.isfinite(value):
        return False, 0.0
    return True, value


def main(program_path, results_dir):
    from jaxbench.evaluator import evaluate

    out = Path(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    try:
        result = evaluate(Path(program_path), TASK_ID, target=TARGET, mode=MODE, size=SIZE)
    except Exception as exc:  # a harness problem (missing file, no device): not the program's
        result = {{"status": "harness_error", "stage": "setup",
                  "message": f"{{type(exc).__name__}}: {{exc}}"}}
    correct, combined = score(result)
    message = result.get("message") or None
    feedback = f"status {{result['status']}} at stage {{result.get('stage')}}"
    if message:
        feedback += f": {{message}}"
    if result.get("speedup") is not None:
        feedback += f"; speedup {{result['speedup']:.3f}}x over XLA"
    public = {{k: result.get(k) for k in ("status", "stage", "speedup", "t_ref_ms", "t_kernel_ms",
                                         "max_abs_err", "rel_err", "mode", "size", "target")}}
    private = {{k: result.get(k) for k in ("judged_on", "isolation", "timing_method",
                                          "source_sha256", "warnings")}}
    (out / "correct.json").write_text(json.dumps({{"correct": correct,
                                                   "error": None if correct else feedback}}))
    (out / "metrics.json").write_text(json.dumps({{
        "combined_score": combined, "public": public, "private": private,
        "text_feedback": feedback, "extra_data": {{}}}}, default=str))
    return correct


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program_path", required=True)
    parser.add_argument("--results_dir", required=True)
    args = parser.parse_args()
    main(args.program_path, args.results_dir)
'''

_CONFIG = """# ShinkaEvolve configuration for jaxbench task {task_id} ({target}); written by
# `jaxbench export-tasks --format shinka`. Models and budgets are placeholders to adjust.
evo_config:
  task_sys_msg: |
{message}
  language: "python"
  init_program_path: "initial.py"
  job_type: "local"
  num_generations: 50
  patch_types: ["diff", "full"]
  patch_type_probs: [0.6, 0.4]
  llm_models: ["gpt-4.1"]
db_config:
  num_islands: 2
  archive_size: 40
  num_archive_inspirations: 4
  num_top_k_inspirations: 2
  migration_interval: 10
"""


def _system_message(task: Task, target: str, size: str) -> str:
    backend = ("the Pallas Triton backend on an NVIDIA GPU (compiler_params="
               "plgpu.CompilerParams(...); every tensor a power-of-two number of elements, at "
               "most 2^20)") if target == "gpu" else "Pallas on a TPU (Mosaic)"
    lines = [f"You optimize a JAX Pallas kernel for {backend}.",
             f"Task {task.id}: {task.description.splitlines()[0] if task.description else ''}",
             "Inputs (in call order, full size):", *task.prompt_signature("full").splitlines(),
             f"The program is checked at size {size!r} against a float32 reference "
             f"(atol {task.atol:g}, rtol {task.rtol:g}); the hot path must be in Pallas kernels.",
             "Keep `pallas_kernel(*inputs)` returning the reference's output (shape and dtype)."]
    return "\n".join("    " + line for line in lines)


def export_task(task: Task, target: str, out_dir: Path, *, size: str = "small",
                mode: str = "auto") -> Path:
    """Writes ``out_dir/<task id>/`` (initial.py, evaluate.py, shinka.yaml); returns it."""
    seed = task.kernel_files().get(("seed", target))
    if seed is None:
        raise ExportError(f"task {task.id} ships no {target} seed")
    folder = out_dir / task.id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "initial.py").write_text(initial_program(seed.read_text(), target))
    (folder / "evaluate.py").write_text(_EVALUATE.format(task_id=task.id, target=target,
                                                         size=size, mode=mode))
    (folder / "shinka.yaml").write_text(_CONFIG.format(task_id=task.id, target=target,
                                                       message=_system_message(task, target, size)))
    return folder


def export_tasks(tasks: list[Task], target: str, out_dir: Path, **options: Any) -> list[Path]:
    written = [export_task(t, target, out_dir, **options) for t in tasks
               if ("seed", target) in t.kernel_files()]
    (out_dir / "tasks.json").write_text(json.dumps(
        {"format": "shinka", "target": target, **options,
         "tasks": [p.name for p in written]}, indent=1))
    return written


__all__ = ["END", "ENTRY", "START", "ExportError", "export_task", "export_tasks", "initial_program"]
