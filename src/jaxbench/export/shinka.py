"""Tasks as ShinkaEvolve task folders: ``jaxbench export-tasks --format shinka OUT/``.

ShinkaEvolve (Sakana AI's evolutionary program optimizer, checked with shinka-evolve 0.0.7)
evolves one program per task. Its contract: a folder with ``initial.py`` (the first program;
only the lines between ``# EVOLVE-BLOCK-START`` and ``# EVOLVE-BLOCK-END`` may change),
``evaluate.py`` (run as ``PYTHON evaluate.py --program_path P --results_dir D``; writes
``D/correct.json`` = ``{"correct": bool, "error": str | null}`` and ``D/metrics.json`` with
``combined_score``, ``public``, ``private``, ``text_feedback``, ``extra_data``) and a config,
here ``shinka.yaml`` (``shinka_run --task-dir FOLDER --config-fname shinka.yaml ...``).

Here ``initial.py`` is the task's shipped seed for the target: the seed's code inside the
block, its ``kernel`` renamed ``pallas_kernel``, and after the block the fixed entry point
(``TARGET`` and ``kernel``, which calls ``pallas_kernel``). ``evaluate.py`` hands the program
file to jaxbench's evaluator, which never imports it into the evaluating process (the
candidate runs in the evaluator's sandboxed, untrusted tracer; the verdict comes from the
trusted judge). Scores (higher is better):

- timed (device mode): ``combined_score`` = speedup over the XLA reference (t_ref / t_kernel);
- interpret mode (no timing on a CPU): 1.0 for a correct kernel;
- anything not correct: 0.0 and ``correct: false``; a NaN or infinite score is not correct.

What makes the folders work wherever ShinkaEvolve runs:

- ShinkaEvolve runs ``evaluate.py`` as a subprocess with ``job_config.python_executable``
  (else its own interpreter). ``shinka.yaml`` names the interpreter that ran the export
  (``sys.executable``), or the one given as ``python=``; it must import jaxbench.
- ``evaluate.py`` always writes both files: when jaxbench cannot be imported, or the
  evaluation crashes, ``correct`` is false and the error says so (in ``correct.json``'s
  ``error``, ``text_feedback`` and on stderr, which ShinkaEvolve keeps as the job's log);
  ShinkaEvolve itself ignores the exit status and would otherwise record a silent 0.
- ``use_text_feedback`` is on, so jaxbench's verdict and message reach the model's prompts.
- ShinkaEvolve's own ``run_shinka_eval`` helper cannot evaluate these programs: it imports
  the program into the evaluating process and calls a function with keyword arguments (a
  seed), while ``kernel(*inputs)`` takes the task's arrays, which jaxbench generates, and a
  Pallas kernel needs the evaluator's interpret mode on a CPU (a candidate never chooses
  it); importing the candidate would also bypass the sandbox. By design, not an omission.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

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
            "# Fixed entry point (outside the evolve block). jaxbench's evaluator calls\n"
            "# kernel(*inputs) with the task's arrays, inside its sandboxed tracer (interpret mode\n"
            "# on a CPU); ShinkaEvolve's run_shinka_eval cannot call it directly (see evaluate.py).\n"
            f'TARGET = "{target}"\n\n\n'
            "def kernel(*inputs):\n"
            f"    return {ENTRY}(*inputs)\n")


_EVALUATE_DOC = '''"""ShinkaEvolve evaluator for jaxbench task {task_id!r} (target {target}, size {size}, mode
{mode}), written by `jaxbench export-tasks --format shinka`.

Usage: PYTHON evaluate.py --program_path PROGRAM.py --results_dir DIR, with a PYTHON that
imports jaxbench (ShinkaEvolve uses job_config.python_executable of shinka.yaml).
Writes DIR/correct.json and DIR/metrics.json, always: when jaxbench cannot be imported or
the evaluation crashes, the program is not correct and the error says why (also on stderr).
Exit status: 0 judged (whatever the verdict), 1 the evaluation crashed, 2 no jaxbench.

The program is judged by jaxbench's evaluator, which runs it in a sandboxed process and never
imports it here. combined_score: the speedup over the XLA reference when timed (device
mode); 1.0 for a correct kernel in interpret mode (no timing on a CPU); 0.0 otherwise.

ShinkaEvolve's run_shinka_eval helper cannot evaluate this program: it imports the program
into the evaluating process and calls a function with keyword arguments, while the entry
point kernel(*inputs) takes the task's arrays (jaxbench generates them) and a Pallas kernel
needs the evaluator's interpret mode on a CPU; importing it would also bypass the sandbox.
"""

TASK_ID = {task_id!r}
TARGET = {target!r}
SIZE = {size!r}
MODE = {mode!r}
'''

_EVALUATE_BODY = '''
import argparse
import json
import math
import sys
import traceback
from pathlib import Path

PUBLIC = ("status", "stage", "speedup", "t_ref_ms", "t_kernel_ms", "max_abs_err", "rel_err", "mode",
          "size", "target")
PRIVATE = ("judged_on", "isolation", "timing_method", "source_sha256", "warnings")


def score(status, speedup):
    """(correct, combined_score) from a verdict's status and speedup."""
    if status != "correct":
        return False, 0.0
    value = 1.0 if speedup is None else float(speedup)
    if not math.isfinite(value):
        return False, 0.0
    return True, value


def write(out, correct, combined, feedback, public, private):
    out.mkdir(parents=True, exist_ok=True)
    (out / "correct.json").write_text(json.dumps({"correct": correct,
                                                  "error": None if correct else feedback}))
    (out / "metrics.json").write_text(json.dumps({
        "combined_score": combined, "public": public, "private": private,
        "text_feedback": feedback, "extra_data": {}}, default=str))


def not_judged(out, status, error):
    """No verdict (jaxbench missing, a crash): not correct, score 0, the reason everywhere
    ShinkaEvolve shows it (correct.json, text_feedback, the job's stderr log)."""
    print(f"evaluate.py ({TASK_ID}): {error}", file=sys.stderr, flush=True)
    public = dict.fromkeys(PUBLIC)
    public.update(status=status, mode=MODE, size=SIZE, target=TARGET)
    write(out, False, 0.0, error, public, {"python": sys.executable})


def judged(out, result):
    """The evaluator's verdict, a jaxbench EvaluationResult, read by its fields."""
    correct, combined = score(result.status, result.speedup)
    feedback = f"status {result.status} at stage {result.stage}"
    if result.message:
        feedback += f": {result.message}"
    if result.speedup is not None:
        feedback += f"; speedup {float(result.speedup):.3f}x over XLA"
    write(out, correct, combined, feedback, {k: getattr(result, k) for k in PUBLIC},
          {k: getattr(result, k) for k in PRIVATE})


def harness_error(out, message):
    """No verdict because the harness failed (a missing file, no device), not the program:
    not correct, score 0, status harness_error at stage setup."""
    public = dict.fromkeys(PUBLIC)
    public.update(status="harness_error", stage="setup")
    write(out, False, 0.0, f"status harness_error at stage setup: {message}", public,
          dict.fromkeys(PRIVATE))


def main(program_path, results_dir):
    out = Path(results_dir)
    try:
        from jaxbench.evaluator import evaluate
    except BaseException as exc:  # ImportError, or anything jaxbench's import raises
        if isinstance(exc, KeyboardInterrupt):
            raise
        not_judged(out, "no_jaxbench", (
            f"jaxbench cannot be imported by {sys.executable} ({type(exc).__name__}: {exc}); "
            "nothing was evaluated. ShinkaEvolve runs evaluate.py with job_config.python_executable "
            "(shinka.yaml): name an interpreter that has jaxbench installed"))
        return 2
    try:
        try:
            result = evaluate(Path(program_path), TASK_ID, target=TARGET, mode=MODE, size=SIZE)
        except Exception as exc:  # a harness problem (missing file, no device): not the program's
            harness_error(out, f"{type(exc).__name__}: {exc}")
            return 1
        judged(out, result)
        return 0
    except BaseException as exc:
        tail = "".join(traceback.format_exception(exc)[-3:]).strip()
        not_judged(out, "crashed", f"the evaluation crashed: {type(exc).__name__}: {exc} ({tail})")
        if isinstance(exc, KeyboardInterrupt):
            raise
        return 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program_path", required=True)
    parser.add_argument("--results_dir", required=True)
    args = parser.parse_args()
    sys.exit(main(args.program_path, args.results_dir))
'''

_CONFIG = """# ShinkaEvolve configuration for jaxbench task {task_id} ({target}); written by
# `jaxbench export-tasks --format shinka`. Run from the folder above this one:
#   shinka_run --task-dir {task_id} --config-fname shinka.yaml --results_dir RESULTS --num_generations 50
# Models and budgets are placeholders to adjust. ShinkaEvolve checks at start that every model
# named here can be reached (API keys in the environment or a .env file).
evo_config:
  task_sys_msg: |
{message}
  language: "python"
  init_program_path: "initial.py"
  job_type: "local"
  num_generations: 50
  patch_types: ["diff", "full"]
  patch_type_probs: [0.6, 0.4]
  # jaxbench's verdict and message (status, stage, the evaluator's error) go into the prompts.
  use_text_feedback: true
  # Needs OPENAI_API_KEY. Offline: a local OpenAI-compatible server,
  #   llm_models: ["local/<model>@http://localhost:8000/v1"]
  llm_models: ["gpt-4.1"]
  # Code embeddings (similarity and novelty of proposals): ShinkaEvolve's default, which
  # needs OPENAI_API_KEY. Offline: null (no embeddings; nothing else changes), or a local
  # server, "local/<model>@http://localhost:8080/v1".
  embedding_model: "text-embedding-3-small"
db_config:
  num_islands: 2
  archive_size: 40
  num_archive_inspirations: 4
  num_top_k_inspirations: 2
  migration_interval: 10
job_config:
  # The interpreter that runs evaluate.py; it must import jaxbench (and JAX). Here:
  # {python_origin}. Change it where ShinkaEvolve runs
  # elsewhere; conda_env or activate_script, when set, take precedence over it.
  python_executable: {python}
  # A wall-clock limit per evaluation, hh:mm:ss (jaxbench also limits each phase itself).
  # time: "00:20:00"
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
             "Keep `pallas_kernel(*inputs)` returning the reference's output (shape and dtype).",
             "Each program's verdict comes from jaxbench's evaluator (status, stage, message);",
             "the evaluator chooses interpret mode on a CPU itself: never pass interpret=."]
    return "\n".join("    " + line for line in lines)


def _python(python: str | None) -> tuple[str, str]:
    """(interpreter, where it came from) for ``job_config.python_executable``."""
    if python is None:
        if not sys.executable:
            raise ExportError("this Python does not know its own interpreter (sys.executable "
                              "is empty); name one with --python (python= in the API)")
        return sys.executable, "the interpreter that ran `jaxbench export-tasks`"
    if not str(python).strip():
        raise ExportError("--python (python=) must name an interpreter (a path or a command on PATH)")
    return str(python), "the interpreter named to `jaxbench export-tasks`"


def export_task(task: Task, target: str, out_dir: Path, *, size: str = "small",
                mode: str = "auto", python: str | None = None) -> Path:
    """Writes ``out_dir/<task id>/`` (initial.py, evaluate.py, shinka.yaml); returns it.
    ``python``: the interpreter ShinkaEvolve runs evaluate.py with (default: this one)."""
    seed = task.kernel_files().get(("seed", target))
    if seed is None:
        raise ExportError(f"task {task.id} ships no {target} seed")
    interpreter, origin = _python(python)
    folder = Path(out_dir) / task.id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "initial.py").write_text(initial_program(seed.read_text(), target))
    (folder / "evaluate.py").write_text(
        _EVALUATE_DOC.format(task_id=task.id, target=target, size=size, mode=mode) + _EVALUATE_BODY)
    (folder / "shinka.yaml").write_text(_CONFIG.format(
        task_id=task.id, target=target, message=_system_message(task, target, size),
        python=json.dumps(interpreter), python_origin=origin))  # a JSON string is a YAML string
    return folder


def export_tasks(tasks: list[Task], target: str, out_dir: Path, *, size: str = "small",
                 mode: str = "auto", python: str | None = None) -> list[Path]:
    out_dir = Path(out_dir)
    interpreter, _ = _python(python)
    written = [export_task(t, target, out_dir, size=size, mode=mode, python=python)
               for t in tasks if ("seed", target) in t.kernel_files()]
    (out_dir / "tasks.json").write_text(json.dumps(
        {"format": "shinka", "target": target, "size": size, "mode": mode, "python": interpreter,
         "tasks": [p.name for p in written]}, indent=1))
    return written


__all__ = ["END", "ENTRY", "START", "ExportError", "export_task", "export_tasks", "initial_program"]
