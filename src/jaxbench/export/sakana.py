"""The "Sakana archive" results record (the layout of Sakana AI's kernel archive), one record per
evaluated kernel, for PallasBench and any other suite.

``Correct`` is taken from the evaluator's verdict alone (``status == "correct"``): no other
field of an event (errors, times, a forged ``correct`` key) can make a kernel correct.
``Speedup`` is ``JAX_Baseline_Runtime / Pallas_Runtime`` (> 1: the kernel is faster), and
exists only where both runtimes were measured (device mode). An unmeasured value is ``null``.
The IR fields come from the files ``--save-ir`` stored in the run directory.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import platform
import re
from importlib import metadata
from pathlib import Path
from typing import Any

from jaxbench.export.tables import kernel_name, ordered_evaluations, require_pyarrow, task_number
from jaxbench.report.data import RunData, load_run, task_or_none

DEFAULT_JSON = "sakanaai_pallasbench.json"
DEFAULT_PARQUET_DIR = "sakanaai_pallasbench"

# (field, type): types as the Parquet files store them; "json" = nested lists (see below).
FIELDS: tuple[tuple[str, str], ...] = (
    ("Op_Name", "string"),               # the task ID, e.g. l1_relu, 8p_gemm
    ("Level_ID", "int64"),               # meta.level where it is a number (PallasBench 1-3)
    ("Task_ID", "int64"),                # the catalogue number
    ("Kernel_Name", "string"),           # seed_tpu, a file name, or <method>/<step>
    ("Pallas_Runtime", "float64"),       # ms, median (device mode)
    ("JAX_Baseline_Runtime", "float64"),  # ms, median of the plain-JAX reference under XLA
    ("Speedup", "float64"),              # JAX_Baseline_Runtime / Pallas_Runtime
    ("Pallas_Code", "string"),           # the evaluated kernel's source
    ("Pallas_Code_Original", "string"),  # the shipped seed for the target, when not evaluated
    ("JAX_Code", "string"),              # the task's task.py: the reference and its inputs
    ("Diff", "string"),                  # unified diff Pallas_Code_Original -> Pallas_Code
    ("Correct", "bool"),                 # status == "correct", nothing else
    ("Max_Diff", "float64"),             # worst absolute error over the judged runs
    ("Error", "string"),                 # the evaluator's message for a kernel not correct
    ("Jaxpr_IR", "string"),
    ("StableHLO_IR", "string"),
    ("Triton_MLIR", "string"),           # GPU kernels' Triton IR
    ("Mosaic_MLIR", "string"),           # TPU kernels' Mosaic IR (an addition to the layout)
    ("Block_Shape", "blocks"),           # per pallas_call, per operand: block dims (null: squeezed)
    ("Grid_Shape", "grids"),             # per pallas_call: its grid
    ("Input_Shapes", "grids"),           # the task's input shapes at the evaluated size
    ("Target_Hardware", "string"),       # device kind (device mode), else the target: tpu, gpu
    ("JAX_Version", "string"),
    ("Triton_Version", "string"),
    ("Status", "string"),                # the verdict (additions to the layout from here on)
    ("Mode", "string"),                  # interpret or device
    ("Size", "string"),                  # small or full
)
FIELD_NAMES = tuple(name for name, _ in FIELDS)


def _read(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _balanced(text: str, start: int) -> str:
    """The text from ``start`` (an opening parenthesis) to its matching close, inclusive."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return text[start:]


def _split_top(inner: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def _dim(text: str) -> int | None:
    m = re.search(r"block_size=(\d+)", text)
    if m:
        return int(m.group(1))
    return int(text) if text.isdigit() else None


def grid_and_blocks(jaxpr: str | None) -> tuple[list[list[int]] | None, list[list[list[int | None]]] | None]:
    """Each ``pallas_call``'s grid and operand block shapes, read from a saved jaxpr (None when
    there is no jaxpr or it holds no grid mapping that can be read)."""
    if not jaxpr:
        return None, None
    grids, blocks = [], []
    for m in re.finditer(r"GridMapping\(", jaxpr):
        mapping = _balanced(jaxpr, m.end() - 1)
        grid = re.search(r"grid=\(([^)]*)\)", mapping)
        if grid is None:
            continue
        grids.append([int(g) for g in re.findall(r"-?\d+", grid.group(1))])
        call_blocks = []
        for b in re.finditer(r"BlockMapping\(block_shape=\(", mapping):
            shape = _balanced(mapping, b.end() - 1)[1:-1]
            call_blocks.append([_dim(part) for part in _split_top(shape)])
        blocks.append(call_blocks)
    return (grids or None), (blocks if grids else None)


def _triton_version(event: dict[str, Any]) -> str | None:
    """For GPU kernels: the Triton version that compiled it (``triton_compile``, on a CPU host
    with the ``triton`` extra), the one the evaluation recorded, or the one installed here
    where it ran on this host; null otherwise (never guessed for another host, never for a
    TPU kernel)."""
    if event.get("target") != "gpu":
        return None
    compiled = event.get("triton_compile")
    if isinstance(compiled, dict) and compiled.get("triton_version"):
        return str(compiled["triton_version"])
    versions = event.get("versions") or {}
    if versions.get("triton"):
        return str(versions["triton"])
    if versions.get("host") != platform.node():
        return None
    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return None


def records(run_dir: str | os.PathLike[str] | RunData) -> list[dict[str, Any]]:
    """One record per evaluated kernel, in catalogue order, with exactly :data:`FIELD_NAMES`."""
    run = run_dir if isinstance(run_dir, RunData) else load_run(run_dir)
    out = []
    for e in ordered_evaluations(run):
        task = task_or_none(e["task"])
        target, size = e.get("target"), e.get("size") or "small"
        code, _ = run.source(e)
        original = None
        if task is not None:
            seed_path = task.kernel_files().get(("seed", target))
            seed = _read(seed_path)
            if seed is not None and hashlib.sha256(seed.encode()).hexdigest() != e.get("source_sha256"):
                original = seed
        diff = None
        if original is not None and code is not None:
            diff = "".join(difflib.unified_diff(
                original.splitlines(keepends=True), code.splitlines(keepends=True),
                fromfile=f"seed_{target}.py", tofile=kernel_name(e))) or None
        ir = run.ir_files(e)
        jaxpr = _read(ir.get("jaxpr"))
        kernel_ir = _read(ir.get("kernel_ir"))
        grids, blocks = grid_and_blocks(jaxpr)
        level = task.meta.get("level") if task is not None else None
        t_kernel, t_ref = e.get("t_kernel_ms"), e.get("t_ref_ms")
        measured = isinstance(t_kernel, (int, float)) and isinstance(t_ref, (int, float)) \
            and t_kernel > 0 and t_ref > 0
        correct = e.get("status") == "correct"
        inputs = None
        if task is not None and size in task.sizes:
            inputs = [list(spec.shape) for spec in task.input_specs(size)]
        out.append({
            "Op_Name": e["task"],
            "Level_ID": level if isinstance(level, int) and not isinstance(level, bool) else None,
            "Task_ID": task_number(e["task"], task),
            "Kernel_Name": kernel_name(e),
            "Pallas_Runtime": float(t_kernel) if measured else None,
            "JAX_Baseline_Runtime": float(t_ref) if measured else None,
            "Speedup": float(t_ref) / float(t_kernel) if measured else None,
            "Pallas_Code": code,
            "Pallas_Code_Original": original,
            "JAX_Code": _read(task.folder / "task.py") if task is not None and task.folder else None,
            "Diff": diff,
            "Correct": correct,
            "Max_Diff": e.get("max_abs_err") if isinstance(e.get("max_abs_err"), (int, float)) else None,
            "Error": None if correct else (e.get("message") or None),
            "Jaxpr_IR": jaxpr,
            "StableHLO_IR": _read(ir.get("stablehlo")),
            "Triton_MLIR": kernel_ir if target == "gpu" else None,
            "Mosaic_MLIR": kernel_ir if target == "tpu" else None,
            "Block_Shape": blocks,
            "Grid_Shape": grids,
            "Input_Shapes": inputs,
            "Target_Hardware": e.get("device_kind") if e.get("mode") == "device" else target,
            "JAX_Version": (e.get("versions") or {}).get("jax"),
            "Triton_Version": _triton_version(e),
            "Status": e.get("status"),
            "Mode": e.get("mode"),
            "Size": e.get("size"),
        })
    return out


def write_json(run_dir: str | os.PathLike[str], out: str | os.PathLike[str]) -> int:
    """The records as one JSON array; returns how many."""
    data = records(run_dir)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(out)
    return len(data)


def arrow_schema() -> Any:
    pa = require_pyarrow()
    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(),
             "grids": pa.list_(pa.list_(pa.int64())),
             "blocks": pa.list_(pa.list_(pa.list_(pa.int64())))}
    return pa.schema([pa.field(name, types[kind]) for name, kind in FIELDS],
                     metadata={"format": "sakana-archive", "producer": "jaxbench"})


def level_file(record: dict[str, Any]) -> str:
    """The Parquet file a record goes to: ``level_<N>.parquet`` for a numeric level, else the
    task's own level name (``level_production.parquet``, ``level_kernelbench.parquet`` for the
    JAXBench suite), ``level_unknown.parquet`` for a task the registry lacks."""
    level = record["Level_ID"]
    if level is None:
        task = task_or_none(record["Op_Name"])
        level = (task.meta.get("level") if task is not None else None) or "unknown"
    return f"level_{re.sub(r'[^A-Za-z0-9_-]', '_', str(level))}.parquet"


def write_parquet(run_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> dict[str, int]:
    """One Parquet file per level (``level_1.parquet``, ...; see :func:`level_file`) in
    ``out_dir``; returns records per file."""
    pa = require_pyarrow()
    import pyarrow.parquet as pq

    data = records(run_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_file: dict[str, list[dict[str, Any]]] = {}
    for record in data:
        by_file.setdefault(level_file(record), []).append(record)
    schema = arrow_schema()
    written = {}
    for name, group in by_file.items():
        path = out / name
        tmp = path.with_name(path.name + ".tmp")
        pq.write_table(pa.Table.from_pylist(group, schema=schema), tmp)
        tmp.replace(path)
        written[path.name] = len(group)
    return written


__all__ = ["DEFAULT_JSON", "DEFAULT_PARQUET_DIR", "FIELDS", "FIELD_NAMES", "grid_and_blocks", "records",
           "write_json", "write_parquet"]
