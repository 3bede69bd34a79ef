"""A run directory as reports and exports read it: the manifest, the evaluation events in file
order, each kernel's source and saved IR, and tasks in the registry's catalogue order.

Everything is derived from the run directory alone (``manifest.json``, ``events.jsonl``,
``artifacts/``, ``sources/``); a kernel file outside the run is used only while its content
still hashes to the event's ``source_sha256``.

An evaluation event is read as the :class:`~jaxbench.contract.EvaluationResult` it holds
(:func:`read_evaluation`): reports read the result's fields, and the keys the run and its method
wrote beside them (``method``, ``kind``, ``job``, ``step``, ``sample``, ``origin``, ``parent``,
``source_file``, ...) from its ``extra``. The other events (``llm_call``, ``task_done``,
``run_end``, ...) stay the JSON objects they are.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any, NamedTuple

from jaxbench.contract import COMPILED_STAGES, STATUS_RANKING, EvaluationResult, Status, status_rank
from jaxbench.contract.result import EVENT_TYPE
from jaxbench.runs import EVENTS, MANIFEST, SecretAudit, audit_secret, read_events

# Worst to best: the order in which a group of evaluations picks its "best" status (the
# schema's ranking, under the name reports have used).
STATUS_ORDER = STATUS_RANKING
IR_FILES = {"jaxpr": "jaxpr.txt", "stablehlo": "stablehlo.mlir", "kernel_ir": "kernel_ir.mlir",
            "optimized_hlo": "optimized_hlo.txt", "analysis": "analysis.json"}


@cache
def _catalogue() -> dict[str, int]:
    from jaxbench.tasks import list_tasks

    return {task.id: i for i, task in enumerate(list_tasks())}


def task_order_key(task_id: str) -> tuple[int, int, str]:
    """Sort key of a task ID: its position in ``list_tasks()`` (catalogue order: 1p, 2p, ...,
    17p, 18k, ..., 50k, then the next suite); an ID the registry does not know comes after
    them, by its leading number and then by name (never as a plain string: 2p before 10p)."""
    position = _catalogue().get(task_id)
    if position is not None:
        return (0, position, task_id)
    m = re.match(r"\D*(\d+)", task_id)
    return (1, int(m.group(1)) if m else 10**9, task_id)


def task_sort_value(task_id: str) -> int:
    """:func:`task_order_key` as one number (for a table's sort attribute)."""
    known, number, _ = task_order_key(task_id)
    return number + (10**6 if known else 0)


def in_catalogue_order(task_ids: Iterable[str]) -> list[str]:
    return sorted(set(task_ids), key=task_order_key)


def task_or_none(task_id: str) -> Any:
    """The registry's task, or None for an ID it no longer has."""
    from jaxbench.tasks import UnknownTaskError, get_task

    try:
        return get_task(task_id)
    except UnknownTaskError:
        return None


@cache
def task_figures(task_id: str, size: str) -> tuple[float | None, float | None]:
    """The task's (FLOPs, bytes) at ``size``, computed once per task and size; (None, None)
    for a task or size the registry does not have."""
    task = task_or_none(task_id)
    if task is None or size not in task.sizes:
        return None, None
    return task.flops(size), task.bytes(size)


def read_evaluation(event: Mapping[str, Any]) -> EvaluationResult | None:
    """The result an ``evaluation`` event holds (:meth:`EvaluationResult.read`); None for an
    event of another type, and for an evaluation event that holds none (no task, or no status:
    a hand-edited file), which reports leave out."""
    if event.get("type") != EVENT_TYPE or not event.get("task"):
        return None
    try:
        return EvaluationResult.read(event)
    except ValueError:
        return None


def compiled(evaluation: EvaluationResult) -> bool:
    return evaluation.status == Status.CORRECT or evaluation.stage in COMPILED_STAGES


def is_correct(evaluation: EvaluationResult) -> bool:
    return evaluation.status == Status.CORRECT


def best_of(evaluations: list[EvaluationResult]) -> EvaluationResult | None:
    """The best evaluation of a group: correct with the highest speedup, else correct, else the
    latest-stage failure (the first one of equal rank)."""
    if not evaluations:
        return None

    def key(e: EvaluationResult) -> tuple[int, float]:
        speed = e.speedup if is_correct(e) else None
        return (status_rank(e.status), speed if speed is not None else float("-inf"))

    best = evaluations[0]
    for e in evaluations[1:]:
        if key(e) > key(best):
            best = e
    return best


def method_of(evaluation: EvaluationResult) -> str:
    """The method that produced an evaluation (its ``method`` key); ``run:<kind>`` for
    `jaxbench run` directories."""
    method = evaluation.extra.get("method")
    if method:
        return str(method)
    return f"run:{evaluation.extra.get('kind', 'kernels')}"


def series_label(evaluation: EvaluationResult) -> str:
    """The series an evaluation belongs to in every chart, table and summary of a run: its
    method and target, ``best_of_n · tpu`` (the method alone for an event without a target)."""
    target = evaluation.target
    return f"{method_of(evaluation)} · {target}" if target else method_of(evaluation)


class BestRow(NamedTuple):
    """A task and series (method · target): its best evaluation and all its evaluations."""

    task: str
    series: str
    best: EvaluationResult
    evaluations: list[EvaluationResult]


@dataclass
class RunData:
    """One run directory, read once (its derived properties are computed once, after
    :func:`load_run` has read every event)."""

    path: Path
    manifest: dict[str, Any]
    evaluations: list[EvaluationResult] = field(default_factory=list)  # in file order
    llm_calls: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None  # the final run_end (not an interrupt's)
    segments: list[dict[str, Any]] = field(default_factory=list)  # run_start, run_end events
    skipped: list[str] = field(default_factory=list)  # kernel files `run --kernels DIR` left out
    _sources: dict[str, list[Path]] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.path.resolve().name

    @property
    def config(self) -> dict[str, Any]:
        return self.manifest.get("config") or {}

    @cached_property
    def targets(self) -> list[str]:
        return sorted({e.target for e in self.evaluations if e.target})

    @cached_property
    def modes(self) -> list[str]:
        return sorted({e.mode for e in self.evaluations if e.mode})

    @cached_property
    def timed(self) -> bool:
        return any(e.t_kernel_ms is not None for e in self.evaluations)

    @cached_property
    def suites(self) -> list[str]:
        found = set()
        for task_id in {e.task for e in self.evaluations}:
            task = task_or_none(task_id)
            found.add(task.suite if task is not None else "unknown")
        if not found and self.config.get("suite"):
            found.add(self.config["suite"])
        return sorted(found)

    @cached_property
    def task_ids(self) -> list[str]:
        return in_catalogue_order(e.task for e in self.evaluations)

    def series_of(self, evaluation: EvaluationResult) -> str:
        """The method and target (:func:`series_label`)."""
        return series_label(evaluation)

    def samples(self) -> dict[str, dict[str, list[EvaluationResult]]]:
        """series (method · target) -> task -> its samples in budget-slot order, then file order
        (shipped seeds that ``evolve`` starts from are not samples); tasks in catalogue order."""
        grouped: dict[str, dict[str, list[EvaluationResult]]] = {}
        for e in self.evaluations:
            if is_seed(e):
                continue
            grouped.setdefault(series_label(e), {}).setdefault(e.task, []).append(e)
        out = {}
        for name in sorted(grouped):
            by_task = grouped[name]
            out[name] = {t: sorted(by_task[t], key=_slot) for t in in_catalogue_order(by_task)}
        return out

    def best_rows(self) -> list[BestRow]:
        """Per task and series, its best evaluation and all its evaluations; tasks in catalogue
        order."""
        groups: dict[tuple[str, str], list[EvaluationResult]] = {}
        for e in self.evaluations:
            groups.setdefault((e.task, self.series_of(e)), []).append(e)
        keys = sorted(groups, key=lambda k: (task_order_key(k[0]), k[1]))
        return [BestRow(task, series, _best(groups[(task, series)]), groups[(task, series)])
                for task, series in keys]

    def source(self, evaluation: EvaluationResult) -> tuple[str | None, Path | None]:
        """The evaluated kernel's source and the file it is in (None when only the event holds
        it): the event's own copy (its ``source`` key), the run's ``source_file`` or its
        content-addressed ``sources/``, else the kernel file while it still hashes to the
        result's ``source_sha256``."""
        sha = evaluation.source_sha256 or None
        own = evaluation.extra.get("source")
        if isinstance(own, str):
            return own, None
        candidates: list[Path] = []
        for key in ("source_file", "source_path"):
            name = evaluation.extra.get(key)
            if name:
                p = Path(name)
                candidates.append(p if p.is_absolute() else self.path / p)
        if sha:
            index = self._sources_index()  # named by the full digest or its first 16 digits
            candidates += index.get(sha, []) + index.get(sha[:16], [])
        if evaluation.kernel_file:
            candidates.append(Path(evaluation.kernel_file))
        for p in candidates:
            try:
                text = p.read_text()
            except (OSError, UnicodeDecodeError):
                continue
            if sha is None or hashlib.sha256(text.encode()).hexdigest() == sha:
                return text, p
        return None, None

    def _sources_index(self) -> dict[str, list[Path]]:
        """Files under ``sources/`` by the hex digest their name starts with."""
        if self._sources is None:
            self._sources = {}
            root = self.path / "sources"
            for p in sorted(root.rglob("*")) if root.is_dir() else []:
                digest = re.match(r"[0-9a-f]{16,64}", p.name)
                if digest and p.is_file():
                    self._sources.setdefault(digest.group(0), []).append(p)
        return self._sources

    def ir_files(self, evaluation: EvaluationResult) -> dict[str, Path]:
        """The IR and analyses saved with ``--save-ir`` for this evaluation (name -> file)."""
        artifacts = evaluation.artifacts
        if not isinstance(artifacts, Mapping) or not artifacts.get("dir"):
            return {}
        directory = Path(artifacts["dir"])
        if not directory.is_dir():  # the run directory was moved: look inside it
            directory = self.path / "artifacts" / directory.name
        return {name: directory / fname for name, fname in IR_FILES.items()
                if (directory / fname).is_file()}


def is_seed(evaluation: EvaluationResult) -> bool:
    """A shipped seed kernel that a method (``evolve``) evaluated before sampling: no sample."""
    return evaluation.extra.get("origin") == "seed"


def _best(evaluations: list[EvaluationResult]) -> EvaluationResult:
    best = best_of(evaluations)
    if best is None:
        raise ValueError("no evaluations to pick the best of")
    return best


def _slot(e: EvaluationResult) -> int:
    """The budget slot of a sample (its ``sample`` key); samples without one after the rest
    (sorting is stable: a list in file order stays in file order within a slot)."""
    sample = e.extra.get("sample")
    return sample if isinstance(sample, int) else 10**9


def secret_audit(run: RunData) -> SecretAudit:
    """Each segment of the run (its start, each resume) and whether the ``run_end`` closing it
    revealed the secret its ``run_start`` committed to
    (:func:`~jaxbench.runs.directory.audit_secret`)."""
    return audit_secret(run.manifest, run.segments)


def secret_verified(run: RunData) -> bool | None:
    """True when every segment's run_end revealed a secret matching its commitment; None while
    the last segment is open (every earlier one verified); False when a reveal mismatches or an
    earlier segment was never revealed (killed: its evaluations cannot be audited)."""
    return secret_audit(run).verified


def inputs_commitment(run: RunData) -> str | None:
    """The commitment of the one secret every input of the run derives from: its run_start
    events' ``secret_sha256`` when they all name the same (one segment, or a replay run resumed
    with its replayed secret), else None (segments with secrets of their own, or a run of an
    older version that committed in its manifest only). Two runs with the same one drew the
    same inputs (``jaxbench run --replay``)."""
    commitments = {e.get("secret_sha256") for e in run.segments if e.get("type") == "run_start"}
    if len(commitments) == 1:
        commitment = commitments.pop()
        return commitment if isinstance(commitment, str) and commitment else None
    return None


def replay_of(manifest: Mapping[str, Any]) -> dict[str, Any] | None:
    """A replay run's ``replay_of`` (the run whose revealed secret it uses, and that secret's
    SHA-256); None for a run that drew its own secret."""
    replayed = manifest.get("replay_of")
    return replayed if isinstance(replayed, dict) else None


def replay_text(replayed: Mapping[str, Any]) -> str:
    """What a report says of a replay run: whose inputs it drew again, and that they were
    public before it started, so its verdicts are not hardened against a kernel that knows them."""
    sha = str(replayed.get("secret_sha256") or "?")
    return (f"replay of {replayed.get('run', '?')} (its revealed secret, sha256 {sha[:16]}…): the "
            "same inputs, public before this run started, so its verdicts are NOT hardened "
            "against a kernel that knows its inputs; it compares timing methods, hardware or "
            "versions on identical inputs")


def require_run_dir(run_dir: str | os.PathLike[str]) -> Path:
    """The path of a run directory; FileNotFoundError with a one-line message otherwise
    (saying whether the path is missing or holds no manifest)."""
    path = Path(run_dir)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist (give a run directory, e.g. runs/<name>)")
    if not (path / MANIFEST).is_file():
        raise FileNotFoundError(f"{path} is not a run directory (no {MANIFEST})")
    return path


def load_run(run_dir: str | os.PathLike[str]) -> RunData:
    """Reads a run directory (FileNotFoundError with a one-line message when it is none)."""
    path = require_run_dir(run_dir)
    try:
        manifest = json.loads((path / MANIFEST).read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path / MANIFEST} is not valid JSON ({exc})") from None
    run = RunData(path, manifest)
    if not (path / EVENTS).exists():
        return run
    for event in read_events(path):
        kind = event.get("type")
        if kind == EVENT_TYPE:
            result = read_evaluation(event)
            if result is not None:
                run.evaluations.append(result)
        elif kind == "llm_call":
            run.llm_calls.append(event)
        elif kind in ("run_start", "run_end"):
            run.segments.append(event)
            if kind == "run_end" and not event.get("interrupted"):  # a Ctrl-C's does not end it
                run.end = event
        elif kind == "kernels_skipped" and isinstance(event.get("files"), list):
            run.skipped += [str(f) for f in event["files"]]
    return run


__all__ = ["IR_FILES", "BestRow", "RunData", "STATUS_ORDER", "best_of", "compiled", "is_correct",
           "in_catalogue_order", "inputs_commitment", "is_seed", "load_run", "method_of",
           "read_evaluation", "replay_of", "replay_text", "secret_audit", "secret_verified",
           "series_label", "task_figures", "task_order_key", "task_or_none", "task_sort_value"]
