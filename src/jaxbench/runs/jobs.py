"""Evaluating jobs (shipped kernels, a directory of kernels) into a run directory (``jaxbench run``),
its plan (the jobs' keys) recorded in the run's manifest.

Jobs are independent; a local thread pool drives one worker process per job
(each evaluation is still a fresh, sandboxed process). Finished jobs are
events in the run directory, so a killed run resumes where it stopped.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from jaxbench.contract import Settings, Stage, Status, source_sha256
from jaxbench.contract.result import EVENT_TYPE, EvaluationResult
from jaxbench.executors import (
    EvaluationLost,
    EvaluatorLike,
    cluster_slots,
    evaluate_with,
    make_evaluator,
)
from jaxbench.runs.directory import RunDir
from jaxbench.tasks import Task, get_task, list_tasks


@dataclass(frozen=True)
class Job:
    task: str
    kind: str  # seed, expert, or "file" for a user directory
    target: str
    path: Path
    target_assumed: bool = False  # the file declares no TARGET (not part of the key)

    @cached_property  # read the kernel file once, not on every lookup
    def key(self) -> str:
        return f"{self.task}|{self.kind}|{self.target}|{source_sha256(self.path.read_text())[:16]}"


# Experts that wrap an optional library: shipped, but only run where the extra is installed.
OPTIONAL_LIBRARY_EXPERTS = {"expert_tokamax": "tokamax"}


# Shipped kernels that JAX's interpreters cannot run on a CPU host: reported as documented
# limitations, not failures (tests/test_seeds.py asserts each one's exact failure, so the day a
# JAX release runs them, the entry must go). In interpret mode their failure is expected and
# not counted as a failure of the run (docs/suites.md, "Experts").
_WGMMA = ("JAX 0.10 cannot interpret Mosaic GPU's wgmma on a CPU host (no generic-interpreter "
          "rule; the Mosaic GPU interpreter takes only whole-array blocks); it is verified up to "
          "lowering (docs/gpu-and-ray.md)")
_PLGPU_KERNEL = ("a plgpu.kernel kernel has no callback-free interpret lowering, so nothing "
                 "trusted can run it on a CPU host (from JAX 0.11 JAX's Mosaic GPU interpreter "
                 "runs it in the trusted runner and can only find it wrong); it is verified up to lowering "
                 "(docs/suites.md, GPU seeds)")
KNOWN_INTERPRET_FAILURES = {
    ("7p_ragged_paged_attention", "expert", "tpu"):
        "JAX 0.10's interpreters cannot run this library kernel on a CPU host (its TypedInt "
        "refs, ReshapeTransform); it is verified up to lowering (docs/suites.md, Experts)",
    ("8p_gemm", "seed_mosaic_legacy", "gpu"): _WGMMA,
    ("1p_flash_attention", "seed_mosaic_legacy", "gpu"): _WGMMA,
    ("12p_rmsnorm", "seed_mosaic", "gpu"): _PLGPU_KERNEL,
    ("8p_gemm", "seed_mosaic", "gpu"): _PLGPU_KERNEL,
    ("1p_flash_attention", "seed_mosaic", "gpu"): _PLGPU_KERNEL,
}


def known_limitation(job: Job, result: EvaluationResult) -> str | None:
    """The documented reason a shipped kernel fails here, or None."""
    reason = KNOWN_INTERPRET_FAILURES.get((job.task, job.kind, job.target))
    if reason and result.mode == "interpret" and result.status in (
            Status.RUNTIME_ERROR, Status.CRASHED, Status.UNVERIFIED) \
            and result.stage == Stage.CORRECT:
        return reason
    return None


def kernel_unavailable(kind: str) -> bool:
    """Whether shipped kernels of this kind cannot run with what is installed: a library
    expert without its extra, or a legacy Mosaic GPU seed (written with ``pl.pallas_call``) on
    a JAX whose pallas_call no longer lowers Mosaic GPU params (0.11 and later)."""
    if kind == "seed_mosaic_legacy":
        from jaxbench import compat

        return not compat.mosaic_gpu_pallas_call()
    module = OPTIONAL_LIBRARY_EXPERTS.get(kind)
    return module is not None and importlib.util.find_spec(module) is None


def shipped_jobs(tasks: Iterable[Task], kind: str, targets: Iterable[str]) -> list[Job]:
    """Kernels shipped beside the tasks: ``seed`` (the ``seed_<target>.py`` files),
    ``seed_mosaic`` (Mosaic GPU seeds, ``plgpu.kernel``, which nothing trusted can run on a
    CPU), ``seed_mosaic_legacy`` (the same through ``pl.pallas_call``, JAX 0.10 only), or
    ``expert`` (every ``expert*`` file; library experts need their extra)."""
    jobs = []
    for task in tasks:
        for (file_kind, target), path in sorted(task.kernel_files().items()):
            wanted = file_kind == kind or (kind == "expert" and file_kind.startswith("expert_"))
            if target in targets and wanted and not kernel_unavailable(file_kind):
                jobs.append(Job(task.id, file_kind, target, path))
    return jobs


# The kinds of kernels shipped beside the tasks (:func:`shipped_jobs`); any other --kernels
# names a directory of kernel files.
SHIPPED_KINDS = ("seed", "seed_mosaic", "seed_mosaic_legacy", "expert")


def plan_jobs(kernels: str, tasks: list[Task] | None, targets: Iterable[str],
              skipped: list[str] | None = None) -> list[Job]:
    """The jobs of a `jaxbench run`: the shipped kernels of kind ``kernels`` for ``tasks``
    (None: every task), or the files of the directory ``kernels`` (:func:`directory_jobs`)."""
    if kernels in SHIPPED_KINDS:
        return shipped_jobs(tasks if tasks is not None else list_tasks(), kernels, targets)
    return directory_jobs(Path(kernels), tasks, targets, skipped)


def directory_jobs(directory: Path, tasks: Iterable[Task] | None, targets: Iterable[str],
                   skipped: list[str] | None = None) -> list[Job]:
    """``<task_id>.py`` files of a directory. Files that cannot be run (no such task, a TARGET
    that names no platform), files for other targets and entries that are not regular files
    (a symlink is never followed: it could lead out of the directory) are left out; when
    ``skipped`` is given, one line per file left out is appended to it."""
    from jaxbench.evaluator.parent.static import parses, target_declaration
    from jaxbench.tasks import UnknownTaskError

    wanted = {t.id for t in tasks} if tasks is not None else None
    notes = skipped if skipped is not None else []
    jobs = []
    for path in sorted(directory.glob("*.py")):
        if path.name.startswith(("_", ".")):
            continue
        try:
            task = get_task(path.stem)
        except UnknownTaskError as exc:
            notes.append(f"{path.name} ({exc})")
            continue
        if wanted is not None and task.id not in wanted:
            continue
        refused = _not_a_regular_file(path)
        if refused:
            notes.append(f"{path.name} ({refused})")
            continue
        data = path.read_bytes()
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError as exc:  # left out, named: the run goes on with the others
            line = data[:exc.start].count(b"\n") + 1
            notes.append(f"{path.name} (not UTF-8 text: byte 0x{data[exc.start]:02x} on line "
                         f"{line}; kernel files are read as UTF-8: save it as UTF-8)")
            continue
        declared, problem = target_declaration(source)
        if problem:
            notes.append(f"{path.name} ({problem})")
            continue
        target = declared or "tpu"
        if target in targets:
            jobs.append(Job(task.id, "file", target, path,
                            target_assumed=declared is None and parses(source)))
        else:
            notes.append(f"{path.name} (TARGET {target}, not selected by --target)")
    return jobs


def _not_a_regular_file(path: Path) -> str | None:
    """Why a directory entry is not read as a kernel file, or None for a regular file. Judged
    on the entry itself (``lstat``), so a symlink, wherever it points, is refused and not
    followed."""
    try:
        mode = path.lstat().st_mode
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    if stat.S_ISLNK(mode):
        return "a symlink; symlinks are not followed"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    return None


def select_tasks(suite: str | None, task_ids: str | None) -> list[Task] | None:
    """The tasks ``--tasks`` names (each within ``--suite`` when both are given), else the
    suite's, else None (all)."""
    if task_ids:
        tasks = [get_task(t.strip()) for t in task_ids.split(",") if t.strip()]
        if suite:
            list_tasks(suite)  # an unknown suite says so, with the suites there are
            outside = [f"{t.id} ({t.suite})" for t in tasks if t.suite != suite]
            if outside:
                from jaxbench.tasks import UnknownTaskError

                raise UnknownTaskError(f"not in the {suite} suite: {', '.join(outside)}; drop "
                                       "--suite or name its tasks (see `jaxbench tasks`)")
        return tasks
    if suite:
        return list_tasks(suite)
    return None


def default_workers() -> int:
    return max(1, min(4, (os.cpu_count() or 1)))


def finished_keys(run: RunDir) -> set[str]:
    """Jobs whose evaluation is already in the run's events (reused when it resumes)."""
    return {e["job"] for e in run.events() if e.get("type") == "evaluation" and "job" in e}


def finished_results(run: RunDir) -> dict[str, EvaluationResult]:
    """The run's recorded results by job key (an evaluation event that is not a readable
    result is not finished: its job runs again)."""
    done: dict[str, EvaluationResult] = {}
    for event in run.events():
        if event.get("type") == EVENT_TYPE and isinstance(event.get("job"), str):
            try:
                done[event["job"]] = EvaluationResult.read(event)
            except ValueError:
                continue
    return done


def run_jobs(
    jobs: list[Job],
    run: RunDir,
    settings: Settings,
    *,
    workers: int,
    on_result: Callable[[Job, EvaluationResult], None] | None = None,
    stop: Any = None,
    grace_s: float = 15.0,
    executor: str = "local",
    ray_address: str | None = None,
) -> list[EvaluationResult]:
    """Evaluates every job not already in the run's events with ``settings`` (each job's own
    target; with ``settings.save_ir``, each job's IR under that directory, in a folder named
    by its key); returns all results (old and new). The run's plan (the jobs' keys) is
    recorded in its manifest first.

    ``stop`` is a :class:`threading.Event` or a :class:`jaxbench.cli.terminal.StopSignals`. When it
    is set (Ctrl-C), nothing new starts, the evaluations in flight are killed
    and discarded (they are not results), and the results finished before the stop are
    returned; each was already appended to the run as it finished, so the run resumes from
    there. Waits at most ``grace_s`` for killed evaluations to clean up.

    ``executor`` is ``local`` (worker processes here) or ``ray`` (Ray tasks on the cluster at
    ``ray_address``; ``workers`` 0 means as many as the cluster runs at once). Either way
    this process alone appends the results. An evaluation the executor loses (its Ray node
    died on every retry) is logged as an ``evaluation_lost`` event, not a result: it is
    missing from the returned list and a resumed run evaluates it again.
    """
    run.record_plan([job.key for job in jobs])
    done = finished_results(run)
    record_skipped(run, jobs)
    results = [done[j.key] for j in jobs if j.key in done]
    pending = [j for j in jobs if j.key not in done]
    for job in jobs:
        if job.key in done and on_result:
            on_result(job, done[job.key])
    if not pending:
        return results
    evaluator = make_evaluator(executor, run.secret, spares=min(workers or 1, len(pending)),
                               ray_address=ray_address)
    workers = workers or cluster_slots(evaluator, settings.mode,
                                       {j.target for j in pending}) or default_workers()
    batch = _Batch(run, settings, evaluator, results, on_result)
    batch.evaluate_all(pending, workers, stop or threading.Event(), grace_s)
    return results


class _Batch:
    """The pending jobs of one :func:`run_jobs` call on a thread pool: each result appended to
    the run as it finishes, the stop honoured between results."""

    def __init__(self, run: RunDir, settings: Settings, evaluator: EvaluatorLike,
                 results: list[EvaluationResult],
                 on_result: Callable[[Job, EvaluationResult], None] | None) -> None:
        self.run, self.settings, self.evaluator = run, settings, evaluator
        self.results, self.on_result = results, on_result
        self.stopped_at: float | None = None

    def job_settings(self, job: Job) -> Settings:
        """The job's settings: its target, and its own folder for the IR when it is saved."""
        save_ir = self.settings.save_ir
        return self.settings.replace(
            target=job.target,
            save_ir=str(Path(save_ir) / job.key.replace("|", "-")) if save_ir else None)

    def evaluate(self, job: Job) -> tuple[EvaluationResult, float]:
        result = evaluate_with(self.evaluator, job.path, job.task, self.job_settings(job))
        return result, time.monotonic()

    def evaluate_all(self, pending: list[Job], workers: int, stop: Any, grace_s: float) -> None:
        threads = ThreadPoolExecutor(max_workers=workers)
        try:
            futures = {threads.submit(self.evaluate, job): job for job in pending}
            waiting = set(futures)
            while waiting and self.stopped_at is None:
                finished, waiting = wait(waiting, timeout=0.5, return_when=FIRST_COMPLETED)
                if stop.is_set():
                    self.stopped_at = _stop_time(stop)
                for future in finished:
                    self.finished(future, futures[future])
            if self.stopped_at is not None:
                for future in waiting:
                    future.cancel()
                self.evaluator.abort()
                wait(waiting, timeout=grace_s)  # killed evaluations remove their temporary files
        finally:
            threads.shutdown(wait=self.stopped_at is None,
                             cancel_futures=self.stopped_at is not None)
            self.evaluator.close()

    def finished(self, future: Future[tuple[EvaluationResult, float]], job: Job) -> None:
        """One evaluation's end: its result recorded, a lost one logged, one killed by the stop
        dropped; an error of the harness itself raised."""
        if future.cancelled() or future.exception() is not None:
            lost = None if future.cancelled() else future.exception()
            if self.stopped_at is None and isinstance(lost, EvaluationLost):
                self.run.append({"type": "evaluation_lost", "job": job.key, "message": str(lost)})
            elif self.stopped_at is None and lost is not None:
                raise lost  # a harness bug
            return
        result, ended = future.result()
        if self.stopped_at is not None and ended >= self.stopped_at:
            return  # killed by the stop: not a verdict
        recorded = _recorded_result(self.run, job, result)
        self.run.append(recorded.to_event())
        self.results.append(recorded)
        if self.on_result:
            self.on_result(job, recorded)


def _recorded_result(run: RunDir, job: Job, result: EvaluationResult) -> EvaluationResult:
    """A job's result as the run records it: the job's key, kind and file, its source kept
    (when unchanged since it was evaluated), a documented limitation, an assumed target."""
    kept: dict[str, str] = {"job": job.key, "kind": job.kind}
    source = job.path.read_text()
    if source_sha256(source) == result.source_sha256:  # unchanged since
        kept["source_file"] = run.keep_source(source)
    limitation = known_limitation(job, result)
    if limitation:
        kept["known_limitation"] = limitation
    warnings = result.warnings
    if job.target_assumed:
        warnings += (f'{job.path.name} declares no TARGET: evaluated for {job.target} (add '
                     f'TARGET = "tpu" or "gpu")',)
    return result.replace(kernel_file=str(job.path), warnings=warnings,
                          extra={**result.extra, **kept})


def record_skipped(run: RunDir, jobs: list[Job]) -> None:
    """Records the files of a ``--kernels DIR`` run that were left out (no such task, another
    target, not a regular file; :func:`directory_jobs`) as one ``kernels_skipped`` event
    (``directory``, ``files``: one "NAME.py (why)" each), once per run, for the report."""
    config = run.manifest.get("config") or {}
    kernels, target = config.get("kernels"), config.get("target") or "all"
    if not jobs or any(j.kind != "file" for j in jobs) or not isinstance(kernels, str) \
            or not Path(kernels).is_dir() or any(e.get("type") == "kernels_skipped" for e in run.events()):
        return
    skipped: list[str] = []
    try:
        directory_jobs(Path(kernels), select_tasks(config.get("suite"), config.get("tasks")),
                       ("tpu", "gpu") if target == "all" else (target,), skipped)
    except Exception:  # noqa: BLE001 - the selection was checked when the jobs were made
        return
    if skipped:
        run.append({"type": "kernels_skipped", "directory": kernels, "files": skipped})


def _stop_time(stop: Any) -> float:
    """When the stop was asked for (``StopSignals`` records it; else now)."""
    return getattr(stop, "stopped_at", None) or time.monotonic()


__all__ = ["KNOWN_INTERPRET_FAILURES", "SHIPPED_KINDS", "Job", "default_workers", "directory_jobs",
           "finished_keys", "kernel_unavailable", "known_limitation", "plan_jobs", "record_skipped",
           "run_jobs", "select_tasks", "shipped_jobs"]
