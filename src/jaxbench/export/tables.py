"""Parquet, JSONL and CSV results datasets from run directories: one row per evaluation, the
same columns for every suite and method (schema version :data:`SCHEMA_VERSION`, documented in
docs/results.md).

Formats: ``jsonl`` and ``csv`` need nothing beyond the standard library; ``parquet`` needs
pyarrow (``pip install 'jaxbench[results]'``). A value that was not measured (a speedup in
interpret mode, an error of a kernel that never ran) is ``null``, never a placeholder.
Rows follow the registry's catalogue order of tasks, then the method, then the sample slot.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jaxbench.contract import FIELD_CORRECT, FIELD_TIME, STAGES, STATUSES, EvaluationResult
from jaxbench.report.data import (
    RunData,
    compiled,
    is_correct,
    load_run,
    method_of,
    replay_of,
    secret_verified,
    task_figures,
    task_or_none,
    task_order_key,
)

SCHEMA_VERSION = 2  # 2: replay_of
FORMATS = ("parquet", "jsonl", "csv")
# The values the enumerated columns hold (null aside): the evaluator schema's enums
# (jaxbench.contract), so a status or stage the evaluator adds is one here too.
# The events' own ``schema`` version is not a column: adding one would change every row of
# every export (docs/results.md, "Versioning").
ALLOWED_VALUES: dict[str, tuple[str, ...]] = {"status": STATUSES, "stage": STAGES}

# (column, type, meaning): the schema of docs/results.md, in column order.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("schema_version", "int64", "version of this schema"),
    ("run", "string", "run directory name"),
    ("run_command", "string", "`run` or `optimize`"),
    ("run_created_at", "string", "when the run directory was created (manifest)"),
    ("git_sha", "string", "jaxbench commit that made the run"),
    ("secret_sha256", "string", "the run's commitment to its input secret"),
    ("secret_verified", "bool", "every segment's run_end revealed a secret matching its "
                                "commitment; null while the last segment is open"),
    ("suite", "string", "task suite (`jaxbench`, `pallasbench`); null for a task the registry lacks"),
    ("task", "string", "task ID"),
    ("task_position", "int64", "position in the registry's catalogue order (0-based)"),
    ("task_number", "int64", "catalogue number (`meta.number`, else the ID's leading number)"),
    ("level", "string", "the task's `meta.level` as text (`1`, `production`, ...)"),
    ("family", "string", "the task's `meta.family`"),
    ("method", "string", "optimization method, or `run:<kind>` for `jaxbench run` directories"),
    ("model", "string", "model spec of an optimize run"),
    ("kernel", "string", "kernel name: `<kind>_<target>` (shipped), the file name (directory "
                         "kernels) or `<method>/<step>` (optimize)"),
    ("origin", "string", "`seed` for shipped seeds an optimizer evaluated before sampling"),
    ("sample", "int64", "budget slot of an optimize sample (0-based)"),
    ("step", "string", "the optimizer's step name"),
    ("parent", "string", "step of the candidate this one was derived from"),
    ("target", "string", "`tpu` or `gpu`"),
    ("mode", "string", "`interpret` or `device`"),
    ("size", "string", "`small` or `full`"),
    ("status", "string", "verdict: " + ", ".join(STATUSES)),
    ("stage", "string", "the stage that decided the verdict"),
    ("message", "string", "the useful part of the error; null when none"),
    (FIELD_CORRECT, "bool", "status == correct"),
    ("compiled", "bool", "got past static checks, tracing and lowering"),
    ("max_abs_err", "float64", "worst absolute error over the judged runs"),
    ("rel_err", "float64", "worst relative-norm error over the judged runs"),
    ("atol", "float64", "the absolute tolerance the evaluation used (else the task's)"),
    ("rtol", "float64", "the relative tolerance the evaluation used (else the task's)"),
    ("tol_fraction", "float64", "the worst element's error as a fraction of its tolerance "
                                "(1 = at the limit); null for NaN/Inf outputs"),
    ("t_ref_ms", "float64", "median time of the XLA reference (device mode)"),
    ("t_kernel_ms", "float64", "median time of the kernel (device mode)"),
    ("speedup", "float64", "t_ref_ms / t_kernel_ms; > 1 means the kernel is faster"),
    ("flops", "float64", "the task's FLOPs at the evaluated size"),
    ("bytes", "float64", "the task's minimal memory traffic at the evaluated size"),
    ("arithmetic_intensity", "float64", "flops / bytes"),
    ("achieved_flops_per_s", "float64", "flops / t_kernel (device mode)"),
    ("roofline_fraction", "float64", "max(flops/peak_flops, bytes/peak_bw) / t_kernel"),
    ("peak_flops", "float64", "the device's peak FLOP/s used for the roofline"),
    ("peak_bytes_per_s", "float64", "the device's peak memory bandwidth used for the roofline"),
    ("compile_s", "float64", "compile time of the judged module"),
    ("wall_s", "float64", "wall time of the whole evaluation"),
    ("timeout_s", "float64", "the time limit per phase"),
    ("trials", "int64", "correctness trials judged"),
    ("device_kind", "string", "device the judged module ran on (`cpu` in interpret mode)"),
    ("backend", "string", "JAX backend of the trusted runner"),
    ("judged_on", "string", "`trusted_export` (null when the trusted side did not run it)"),
    ("isolation", "string", "what the untrusted tracer ran under"),
    ("timing_method", "string", "how times were taken (device mode)"),
    ("jax_version", "string", "JAX version of the evaluation"),
    ("jaxlib_version", "string", "jaxlib version of the evaluation"),
    ("jaxbench_version", "string", "jaxbench version of the evaluation"),
    ("python_version", "string", "Python version of the evaluation"),
    ("source_sha256", "string", "SHA-256 of the kernel source"),
    ("kernel_file", "string", "the kernel file a `jaxbench run` evaluated"),
    ("ir_dir", "string", "directory of the IR saved with --save-ir"),
    ("reused_from", "string", "step whose verdict was reused for an identical source"),
    ("review", "string", "flag for a speedup above 10x"),
    ("warnings", "string", "the evaluator's warnings, one per line"),
    ("event_time", "float64", "when the evaluation event was written (Unix seconds)"),
    ("replay_of", "string", "a replay run's (`jaxbench run --replay DIR`): the run directory whose "
                            "revealed secret it drew its inputs from, as given to --replay; "
                            "those inputs were public, so its verdicts are not hardened against "
                            "a kernel tuned to them; null for a run of its own secret"),
)
COLUMN_NAMES = tuple(name for name, _, _ in COLUMNS)


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def task_number(task_id: str, task: Any) -> int | None:
    """The catalogue number: ``meta["number"]``, else the ID's leading number (8p_gemm: 8)."""
    number = task.meta.get("number") if task is not None else None
    if isinstance(number, int):
        return number
    m = re.match(r"(\d+)", task_id)
    return int(m.group(1)) if m else None


def kernel_name(result: EvaluationResult) -> str:
    """``seed_tpu`` (shipped), ``8p_gemm.py`` (a directory's file) or ``best_of_n/s3``: from the
    run's keys beside the result (``method`` and ``step``, else ``kind``)."""
    keys = result.extra
    if keys.get("method"):
        return f"{keys['method']}/{keys.get('step')}"
    kind = keys.get("kind")
    if kind == "file" and result.kernel_file:
        return Path(result.kernel_file).name
    return f"{kind}_{result.target}"


def ordered_positions(run: RunData) -> list[int]:
    """The positions in ``run.evaluations`` (file order) in catalogue order of tasks, then
    method, then sample slot, then file order."""
    def key(i: int) -> tuple[Any, ...]:
        e = run.evaluations[i]
        sample = e.extra.get("sample")
        slot = (0, sample) if isinstance(sample, int) else (1, 0)
        return (task_order_key(e.task), method_of(e), slot, i)

    return sorted(range(len(run.evaluations)), key=key)


def ordered_evaluations(run: RunData) -> list[EvaluationResult]:
    """Evaluations in catalogue order of tasks, then method, then sample slot / file order."""
    return [run.evaluations[i] for i in ordered_positions(run)]


def replayed_run(run: RunData) -> str | None:
    """The run a replay run (`jaxbench run --replay DIR`) drew its inputs again from: ``replay_of``'s
    ``run`` as the manifest records it, else as a run_start event does; None for a run that
    drew a secret of its own. A ``replay_of`` without a run gives its secret's SHA-256 (a replay
    is never passed off as a run of its own secret)."""
    recorded = [replay_of(run.manifest)]
    recorded += [replay_of(e) for e in run.segments if e.get("type") == "run_start"]
    for replayed in recorded:
        if replayed is not None:
            return (_text(replayed.get("run")) or _text(replayed.get("secret_sha256"))
                    or "unknown")
    return None


def rows(run_dir: str | os.PathLike[str] | RunData) -> list[dict[str, Any]]:
    """One row per evaluation of a run directory, with exactly :data:`COLUMN_NAMES`."""
    run = run_dir if isinstance(run_dir, RunData) else load_run(run_dir)
    verified = secret_verified(run)
    replayed = replayed_run(run)
    config = run.config
    out = []
    for e in ordered_evaluations(run):
        keys = e.extra  # the run's and the method's keys beside the result
        task = task_or_none(e.task)
        size = e.size or "small"
        flops, nbytes = task_figures(e.task, size)
        t_kernel = _number(e.t_kernel_ms)
        versions = e.versions if isinstance(e.versions, Mapping) else {}
        ir = run.ir_files(e)
        warnings = e.warnings
        tolerance = e.tolerance if isinstance(e.tolerance, Mapping) else {}
        row = {
            "schema_version": SCHEMA_VERSION,
            "run": run.name,
            "run_command": _text(config.get("command")),
            "run_created_at": _text(run.manifest.get("created_at")),
            "git_sha": _text(run.manifest.get("git_sha")),
            "secret_sha256": _text(run.manifest.get("secret_sha256")),
            "secret_verified": verified,
            "suite": task.suite if task is not None else None,
            "task": e.task,
            "task_position": task_order_key(e.task)[1] if task is not None else None,
            "task_number": task_number(e.task, task),
            "level": _text(task.meta.get("level")) if task is not None else None,
            "family": _text(task.meta.get("family")) if task is not None else None,
            "method": method_of(e),
            "model": _text(config.get("model")) if keys.get("method") else None,
            "kernel": kernel_name(e),
            "origin": _text(keys.get("origin")),
            "sample": _integer(keys.get("sample")),
            "step": _text(keys.get("step")),
            "parent": _text(keys.get("parent")),
            "target": _text(e.target),
            "mode": _text(e.mode),
            "size": _text(e.size),
            "status": _text(e.status),
            "stage": _text(e.stage),
            "message": _text(e.message),
            FIELD_CORRECT: is_correct(e),
            "compiled": compiled(e),
            "max_abs_err": _number(e.max_abs_err),
            "rel_err": _number(e.rel_err),
            "atol": _number(tolerance.get("atol", task.atol if task is not None else None)),
            "rtol": _number(tolerance.get("rtol", task.rtol if task is not None else None)),
            "tol_fraction": _number(e.tol_fraction),
            "t_ref_ms": _number(e.t_ref_ms),
            "t_kernel_ms": t_kernel,
            "speedup": _number(e.speedup),
            "flops": flops,
            "bytes": nbytes,
            "arithmetic_intensity": flops / nbytes if flops and nbytes else None,
            "achieved_flops_per_s": flops / (t_kernel / 1e3) if flops and t_kernel else None,
            "roofline_fraction": _number(e.roofline_fraction),
            "peak_flops": _number(e.peak_flops),
            "peak_bytes_per_s": _number(e.peak_bytes_per_s),
            "compile_s": _number(e.compile_s),
            "wall_s": _number(e.wall_s),
            "timeout_s": _number(e.timeout_s),
            "trials": _integer(e.trials),
            "device_kind": _text(e.device_kind),
            "backend": _text(e.backend),
            "judged_on": _text(e.judged_on),
            "isolation": _text(e.isolation),
            "timing_method": _text(e.timing_method),
            "jax_version": _text(versions.get("jax")),
            "jaxlib_version": _text(versions.get("jaxlib")),
            "jaxbench_version": _text(versions.get("jaxbench")),
            "python_version": _text(versions.get("python")),
            "source_sha256": _text(e.source_sha256),
            "kernel_file": _text(e.kernel_file),
            "ir_dir": str(next(iter(ir.values())).parent) if ir else None,
            "reused_from": _text(keys.get("reused_from")),
            "review": _text(e.review),
            "warnings": "\n".join(map(str, warnings)) if warnings else None,
            "event_time": _number(keys.get(FIELD_TIME)),
            "replay_of": replayed,
        }
        assert tuple(row) == COLUMN_NAMES
        out.append(row)
    return out


def arrow_schema() -> Any:
    """The schema as a pyarrow schema, with the version and column meanings as metadata."""
    pa = require_pyarrow()
    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}
    fields = [pa.field(name, types[kind], metadata={"description": meaning})
              for name, kind, meaning in COLUMNS]
    return pa.schema(fields, metadata={"jaxbench.schema_version": str(SCHEMA_VERSION)})


def require_pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        raise RuntimeError("Parquet needs pyarrow: pip install 'jaxbench[results]'") from None
    return pyarrow


# A spreadsheet opening the CSV runs a cell that starts with one of these as a formula; the
# text (a kernel's message, its file name) may come from the kernel's author.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _inert(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: a string that would start a formula gets a
    leading apostrophe (the spreadsheets' own escape); other values are unchanged."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def write(run_dir: str | os.PathLike[str], fmt: str, out: str | os.PathLike[str]) -> int:
    """Writes the run's rows to ``out`` as ``fmt``; returns the number of rows."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if fmt == "parquet":
        require_pyarrow()
    data = rows(run_dir)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    if fmt == "jsonl":
        with open(tmp, "w") as f:
            for row in data:
                f.write(json.dumps(row) + "\n")
    elif fmt == "csv":
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=COLUMN_NAMES)
            writer.writeheader()
            writer.writerows({k: _inert(v) for k, v in row.items()} for row in data)
    else:
        import pyarrow.parquet as pq

        schema = arrow_schema()
        table = require_pyarrow().Table.from_pylist(data, schema=schema)
        pq.write_table(table, tmp)
    tmp.replace(out)  # a failed export never leaves half a file under the final name
    return len(data)


__all__ = ["COLUMNS", "COLUMN_NAMES", "FORMATS", "SCHEMA_VERSION", "arrow_schema", "replayed_run", "rows",
           "write"]
