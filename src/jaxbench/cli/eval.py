"""``jaxbench eval FILE --task ID``: one kernel, one verdict."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from jaxbench.cli.common import (
    MODE,
    SIZE,
    TARGET,
    USAGE_ERRORS,
    check_cost,
    load_task_files,
    task_file_option,
    timing_option,
    usage_error_from,
)
from jaxbench.cli.terminal import StopSignals, usage_error
from jaxbench.cli.terminal import console as make_console

if TYPE_CHECKING:
    from jaxbench.contract import EvaluationResult


@click.command("eval")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--task", "task_id", default=None,
              help="Task ID (see `jaxbench tasks`); with --task-file, the file's task.")
@task_file_option
@click.option("--target", type=TARGET, default=None, help="Defaults to the file's TARGET, else tpu.")
@click.option("--mode", type=MODE, default="auto", show_default=True)
@click.option("--size", type=SIZE, default="small", show_default=True)
@click.option("--trials", type=click.IntRange(1, 100), default=3, show_default=True)
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Wall-clock seconds per phase (default: from the task's measured seed time).")
@click.option("--chip", default=None,
              help="The chip to judge for: its limits, its identity while traced, Triton's "
                   "target (e.g. A100, H100, H200, v5e, v6e). Default: the suite's (PallasBench "
                   "GPU: A100; else H200 / v6e); in device mode the attached one.")
@click.option("--no-tpu-interpret", is_flag=True, help="Skip the TPU-interpreter run.")
@click.option("--save-ir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for the jaxpr, StableHLO, kernel IR and XLA analyses.")
@click.option("--json", "as_json", is_flag=True, help="Print exactly one result object.")
@timing_option
@click.option("--no-cache", is_flag=True,
              help="Do not use the judge's compile cache of the task's programs (reference, "
                   "truth, inputs; `jaxbench doctor` names its directory): compile them afresh.")
@click.option("--force", is_flag=True,
              help="Evaluate even when the interpret-mode cost estimate says it cannot finish.")
@click.option("--debug", is_flag=True,
              help="Allow jax.debug.print and show the kernel's output; runs the kernel on the "
                   "untrusted side in interpret mode, once. The verdict does not count (exit 1).")
def eval_cmd(file: Path, task_id: str | None, task_files: tuple[Path, ...], target: str | None,
             mode: str, size: str, trials: int, timeout_s: float | None, chip: str | None,
             no_tpu_interpret: bool, save_ir: Path | None, as_json: bool, no_cache: bool,
             force: bool, debug: bool, timing: dict[str, float]) -> None:
    """Evaluate one kernel FILE on a task. Exit 0 if correct, 1 otherwise, 2 on usage errors.
    With --debug, always 1: a debug run's verdict does not count."""
    if not file.is_file():  # the usage errors that need no JAX come first
        usage_error(f"kernel file {str(file)!r} does not exist")
    if task_id is None and not task_files:
        usage_error("give the task: --task ID (see `jaxbench tasks`) or --task-file FILE")
    if task_files and debug:
        usage_error("--debug runs the kernel on its inputs in the sandboxed tracer, where a task "
                    "file (your own code) is never loaded; evaluate it without --debug")
    if save_ir is not None and save_ir.is_dir() and any(save_ir.iterdir()):
        usage_error(f"--save-ir {save_ir} already holds files; give a new or empty directory "
                    "(nothing was overwritten)")
    from jaxbench.evaluator import early_tracers

    # The tracers' fork server starts first, before JAX is imported here: its imports and
    # preload of what kernels may import (4-5 s on a TPU host under gVisor) run beside this
    # command's, the task's loading and the chip's probe below, not after them.
    tracers = early_tracers()
    try:
        from jaxbench.evaluator import Evaluator, Settings

        settings = Settings.of(target=target, mode=mode, size=size, trials=trials,
                               timeout_s=timeout_s, tpu_interpret=not no_tpu_interpret,
                               save_ir=save_ir, debug=debug, chip=chip, xla_cache=not no_cache,
                               timing=timing)
        evaluator = Evaluator(spares=0, tracers=tracers)
    except BaseException:
        tracers.close()
        raise
    try:
        case = _resolve(file, task_id, task_files, settings, force)
    except BaseException:  # a usage error (exit 2) or Ctrl-C: the fork server goes too
        evaluator.close()
        raise
    # Ctrl-C or SIGTERM (a CI kill, `timeout`): the tracer and runner die with their process
    # groups at once, and nothing of them outlives this process.
    with StopSignals(on_stop=evaluator.abort, grace_s=10,
                     message="jaxbench: stopping: the evaluation's processes are killed; "
                             "no verdict") as stop:
        try:
            result = evaluator.evaluate_case(file, case)  # the case resolved above, carried
        except RuntimeError as exc:  # e.g. --mode device without the hardware
            if stop.is_set():
                stop.exit()
            usage_error(str(exc))
        except USAGE_ERRORS as exc:
            usage_error_from(exc)
        finally:
            if not stop.is_set():
                evaluator.close()
        if stop.is_set():
            stop.exit()
    if as_json:
        click.echo(json.dumps(result.to_event(), default=str))
    else:
        _print_result(result)
    from jaxbench.evaluator import Status

    sys.exit(0 if result.status == Status.CORRECT and not result.debug else 1)


def _resolve(file: Path, task_id: str | None, task_files: tuple[Path, ...], settings: Any,
             force: bool) -> Any:
    """The case ``jaxbench eval`` evaluates (the evaluator's one resolver), or a usage error."""
    from jaxbench.evaluator import resolve_case
    from jaxbench.tasks import get_task

    own = [entry[0] for entry in load_task_files(task_files)]
    if task_id is None:
        if len(own) > 1:
            usage_error(f"the task files define {', '.join(own)}: choose one with --task")
        task_id = own[0]
    try:
        task = get_task(task_id)
    except USAGE_ERRORS as exc:
        usage_error_from(exc)
    try:  # the evaluator's one resolver: what it will evaluate with, or why not
        case = resolve_case(task, settings, file.read_text(errors="replace"), front_door=True)
    except RuntimeError as exc:  # e.g. --mode device without the hardware
        usage_error(str(exc))
    except USAGE_ERRORS as exc:
        usage_error_from(exc)
    if not force:
        check_cost([task_id], settings.size, case.mode, [case.target], settings.trials,
                   settings.timeout_s)
    return case


def _print_result(r: EvaluationResult) -> None:
    from jaxbench.evaluator import Status

    console = make_console()
    color = "green" if r.status == Status.CORRECT else "red"
    if r.debug:
        console.print("[bold yellow]DEBUG RUN: this verdict does not count[/] (jax.debug.print "
                      "allowed; the kernel ran on the untrusted side, not in the trusted judge)")
    console.print(f"[bold]{r.task}[/] ({r.target}, {r.chip}, {r.mode}, {r.size}): "
                  f"[{color}]{r.status}[/] at stage {r.stage}")
    if r.message:
        console.print(f"  {r.message}", markup=False)
    if r.candidate_frames:
        console.print("  in the kernel file (innermost last):")
        for frame in r.candidate_frames:
            console.print(f"    {frame}", markup=False, highlight=False)
    if r.output:
        size = "8 KB" if r.debug else "2 KB"
        console.print(f"  kernel output (stdout/stderr on the untrusted side, last {size}):")
        for line in r.output.splitlines():
            console.print(f"    | {line}", markup=False, highlight=False)
    if r.max_abs_err is not None:
        line = f"  max abs err {r.max_abs_err:.3g}, rel err {r.rel_err:.3g}"
        tol = r.tolerance
        if tol:
            line += f"; tolerance atol {tol['atol']:g} + rtol {tol['rtol']:g}·|truth|"
            if r.tol_fraction is not None:
                line += f", worst element at {r.tol_fraction:.2g}× its tolerance (≤ 1 passes)"
        console.print(line, markup=False)
    elif r.tolerance:  # compared, and no error figure: an output is not finite
        console.print("  max abs err: none (the output is not finite)")
    if r.speedup is not None:
        console.print(f"  t_ref {r.t_ref_ms:.3f} ms, t_kernel {r.t_kernel_ms:.3f} ms, "
                      f"speedup {r.speedup:.2f}x")
    elif r.status == Status.CORRECT:
        console.print("  time: skipped: no accelerator (interpret mode checks correctness only)")
    for warning in r.warnings:
        console.print(f"  warning: {warning}", markup=False)
    if r.judged_on:
        for line in _judged_on_lines(r.judged_on, r.isolation, console.width):
            console.print(line, markup=False, soft_wrap=True)  # never broken inside a phrase


def _judged_on_lines(judged_on: str, isolation: str, width: int) -> list[str]:
    """The verdict's last line: what it was judged on and the untrusted side's isolation, on
    one line where it fits, else one line each, so that "isolated by:" is never parted from
    its value (a value wider than the screen is left to the terminal to fold)."""
    isolated = f"untrusted side isolated by: {isolation}"
    line = f"  judged on: {judged_on}; {isolated}"
    return [line] if len(line) <= width else [f"  judged on: {judged_on}", f"  {isolated}"]
