"""The "Sakana archive" results record (the layout of Sakana AI's kernel archive), one record per
evaluated kernel, for PallasBench and any other suite.

``Correct`` is taken from the evaluator's verdict alone (``status == Status.CORRECT``): no other
field of an event (errors, times, a forged ``correct`` key) can make a kernel correct.
``Speedup`` is ``JAX_Baseline_Runtime / Pallas_Runtime`` (> 1: the kernel is faster), and
exists only where both runtimes were measured (device mode). An unmeasured value is ``null``.
The IR fields come from the files ``--save-ir`` stored in the run directory.

The archive pairs each kernel with the code it came from: ``Pallas_Code_Original`` is the
parent's source when the event names the candidate an agent started from; else, for a
PallasBench GPU kernel, the task's TPU-style ``seed_tpu.py`` (the suite's "original TPU code"
beside its "GPU-fixed code"); else the shipped seed for the target when the kernel is not
that seed. ``Diff`` is the unified diff from it to ``Pallas_Code`` and ``Original_Kernel``
names it. ``Kernel_Backend`` is the Pallas backend of the judged module (triton, mosaic_gpu,
mosaic_tpu), from the evaluation, else from the saved IR, else from the kernel's imports.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jaxbench.backends import KERNEL_CALL_BACKENDS, kernel_backend_of_calls
from jaxbench.backends.chips import CROSS_LOWERING_GPU, CROSS_LOWERING_TPU
from jaxbench.contract import EvaluationResult
from jaxbench.export.tables import (
    kernel_name,
    ordered_evaluations,
    ordered_positions,
    replayed_run,
    require_pyarrow,
    task_number,
)
from jaxbench.report.data import RunData, is_correct, load_run, task_or_none

DEFAULT_JSON = "sakanaai_pallasbench.json"
DEFAULT_PARQUET_DIR = "sakanaai_pallasbench"
CARD = "README.md"  # the dataset card written beside the Parquet files
# The chip whose rules (memory budgets, Triton's rules, lowering) interpret mode checks.
INTERPRET_RULES = {"gpu": CROSS_LOWERING_GPU, "tpu": CROSS_LOWERING_TPU}

# (field, type, meaning): types as the Parquet files store them ("grids": lists of int lists,
# "blocks": per call, per operand, a block shape); the meanings are docs/results.md's.
FIELDS: tuple[tuple[str, str, str], ...] = (
    ("Op_Name", "string", "the task ID, e.g. l1_relu, 8p_gemm"),
    ("Level_ID", "int64", "meta.level where it is a number (PallasBench 1-3); null otherwise"),
    ("Task_ID", "int64", "the catalogue number (meta.number, else the ID's leading number)"),
    ("Kernel_Name", "string", "seed_gpu / expert_tpu (shipped), a file name (--kernels DIR), "
                              "<method>/<step> (optimize)"),
    ("Pallas_Runtime", "float64", "ms: the kernel's median time per call (device mode); null "
                                  "where nothing was timed"),
    ("JAX_Baseline_Runtime", "float64", "ms: the plain-JAX reference's median time under XLA, "
                                        "timed interleaved with the kernel (device mode)"),
    ("Speedup", "float64", "JAX_Baseline_Runtime / Pallas_Runtime: above 1 the kernel is faster; "
                           "null unless both were measured"),
    ("Pallas_Code", "string", "the evaluated kernel's source (null when it cannot be recovered)"),
    ("Pallas_Code_Original", "string", "the code this kernel came from: the parent's source when "
                                       "the event names one, else (PallasBench GPU) the TPU-style "
                                       "seed_tpu.py, else the shipped seed for the target"),
    ("JAX_Code", "string", "the task's task.py: the reference, its sizes and input specs"),
    ("Diff", "string", "unified diff Pallas_Code_Original -> Pallas_Code (empty: identical)"),
    ("Correct", "bool", "status == correct, from the evaluator's verdict only"),
    ("Max_Diff", "float64", "worst absolute error against the float32 truth over the judged runs"),
    ("Error", "string", "the evaluator's message, for a kernel that is not correct"),
    ("Jaxpr_IR", "string", "the kernel's jaxpr (--save-ir), else null"),
    ("StableHLO_IR", "string", "the module the judge checked and ran (--save-ir), else null"),
    ("Triton_MLIR", "string", "the Triton IR of the kernel's Triton calls (--save-ir), else null"),
    ("Mosaic_MLIR", "string", "the Mosaic IR of the kernel's Mosaic TPU calls (--save-ir), else "
                              "null; an addition to the layout"),
    ("Block_Shape", "blocks", "per pallas_call, per operand: its block shape at the evaluated size "
                              "(null for a squeezed dimension), from the saved jaxpr"),
    ("Grid_Shape", "grids", "per pallas_call: its grid, from the saved jaxpr"),
    ("Input_Shapes", "grids", "the task's input shapes at the evaluated size"),
    ("Target_Hardware", "string", "device mode: the device measured on (NVIDIA H200); interpret "
                                  "mode: 'interpret (cpu), rules of <chip>' (the chip judged "
                                  "for: an A100 for PallasBench GPU tasks by default)"),
    ("JAX_Version", "string", "JAX version of the evaluation"),
    ("Triton_Version", "string", "only when Triton compiled this kernel and the event says which "
                                 "version (triton_compile); else null"),
    ("Status", "string", "the verdict (additions to the layout from here on)"),
    ("Mode", "string", "interpret or device"),
    ("Size", "string", "small or full"),
    ("Kernel_Backend", "string", "triton, mosaic_gpu or mosaic_tpu (several joined by +): the "
                                 "judged module's kernel calls, else the kernel's imports"),
    ("Original_Kernel", "string", "what Pallas_Code_Original is: seed_tpu.py, seed_gpu.py or the "
                                  "parent's <method>/<step>"),
    ("Replay_Of", "string", "a replay run's (jaxbench run --replay DIR): the run whose revealed secret "
                            "it drew its inputs from; those inputs were public, so Correct is "
                            "not hardened against a kernel tuned to them; null otherwise"),
)
FIELD_NAMES = tuple(name for name, _, _ in FIELDS)

# The module a kernel imports its compiler params from -> its backend (the fallback of
# Kernel_Backend for an evaluation that recorded none, e.g. a failure before lowering).
_IMPORTED_BACKENDS = (
    (re.compile(r"jax\.experimental\.pallas\.triton\b|from\s+jax\.experimental\.pallas\s+import\s+"
                r"[^\n]*\btriton\b"), "triton"),
    (re.compile(r"jax\.experimental\.pallas\.mosaic_gpu\b|from\s+jax\.experimental\.pallas\s+import"
                r"\s+[^\n]*\bmosaic_gpu\b"), "mosaic_gpu"),
    (re.compile(r"jax\.experimental\.pallas\.tpu\b|from\s+jax\.experimental\.pallas\s+import\s+"
                r"[^\n]*\btpu\b"), "mosaic_tpu"),
)
_TARGET_BACKENDS = {"gpu": ("triton", "mosaic_gpu"), "tpu": ("mosaic_tpu",)}


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


def _source_backend(code: str | None, target: str | None) -> str | None:
    """The backend a kernel's imports name (its compiler params' module), among the target's;
    a TPU kernel has one backend only. None when the imports do not decide it."""
    allowed = _TARGET_BACKENDS.get(target or "", ())
    found = sorted({backend for pattern, backend in _IMPORTED_BACKENDS
                    if code and pattern.search(code) and backend in allowed})
    if not found and target == "tpu":
        return "mosaic_tpu"
    return "+".join(found) or None


def _ir_custom_calls(ir: dict[str, Path]) -> Mapping[str, int]:
    """The kernel custom calls of a saved module: analysis.json's structure, else the targets
    named in stablehlo.mlir."""
    analysis = _read(ir.get("analysis"))
    if analysis:
        try:
            calls = (json.loads(analysis).get("structure") or {}).get("custom_calls")
        except (ValueError, AttributeError):
            calls = None
        if isinstance(calls, Mapping):
            return calls
    stablehlo = _read(ir.get("stablehlo")) or ""
    return dict(Counter(t for t in re.findall(r'call_target_name\s*=\s*"([^"]+)"', stablehlo)
                        if t in KERNEL_CALL_BACKENDS))


def kernel_backend(result: EvaluationResult, code: str | None = None,
                   ir: dict[str, Path] | None = None) -> str | None:
    """``triton``, ``mosaic_gpu``, ``mosaic_tpu`` (several joined by ``+``) or None: what the
    evaluation recorded from the judged module (``kernel_backend``, else its structure's
    custom calls), else the custom calls of the module saved with --save-ir, else the
    backend the kernel's imports name."""
    recorded = result.kernel_backend
    if isinstance(recorded, str) and recorded:
        return recorded
    structure = result.structure
    calls = structure.get("custom_calls") if isinstance(structure, Mapping) else None
    if isinstance(calls, Mapping) and kernel_backend_of_calls(calls):
        return kernel_backend_of_calls(calls)
    if ir and kernel_backend_of_calls(_ir_custom_calls(ir)):
        return kernel_backend_of_calls(_ir_custom_calls(ir))
    return _source_backend(code, result.target)


def _kernel_ir(text: str | None, backend: str | None, target: str | None) -> tuple[str | None, str | None]:
    """(Triton IR, Mosaic IR) of a saved kernel_ir.mlir: its sections by the header each
    lowering wrote (``// Triton kernel``, ``// Mosaic TPU kernel``); a file without headers
    goes by the backend, else by the target."""
    if not text:
        return None, None
    sections = re.split(r"(?m)^(?=// (?:Triton|Mosaic TPU) kernel$)", text)
    triton = [s.strip() for s in sections if s.startswith("// Triton kernel")]
    mosaic = [s.strip() for s in sections if s.startswith("// Mosaic TPU kernel")]
    if triton or mosaic:
        return "\n\n".join(triton) or None, "\n\n".join(mosaic) or None
    parts = set((backend or "").split("+"))
    if "triton" in parts or (not backend and target == "gpu"):
        return text, None
    if parts & {"mosaic_tpu", "mosaic_gpu"} or (not backend and target == "tpu"):
        return None, text
    return None, None


def target_hardware(result: EvaluationResult) -> str | None:
    """Device mode: the device measured on. Interpret mode: where it ran and which chip's
    rules were checked, ``interpret (cpu), rules of NVIDIA A100``."""
    mode = result.mode
    if mode == "device":
        return result.device_kind or None
    if mode != "interpret":
        return None
    host = result.device_kind or result.backend
    text = f"interpret ({host})" if host else "interpret"
    # The chip it was judged for (results record it); results from before they did were judged
    # for the fixed cross-lowering chips.
    chip = result.chip or INTERPRET_RULES.get(result.target or "")
    return f"{text}, rules of {chip}" if chip else text


def triton_version(result: EvaluationResult, backend: str | None) -> str | None:
    """The Triton version that compiled this kernel, only where the event says Triton compiled
    it (``triton_compile``: Triton's own compiler for sm_90 in interpret mode), or names a
    Triton version for a Triton kernel; null otherwise (XLA's GPU compiler builds Triton
    kernels with the Triton inside jaxlib, whose version no event records)."""
    compiled = result.triton_compile
    if isinstance(compiled, Mapping) and compiled.get("triton_version"):
        return str(compiled["triton_version"])
    versions = result.versions if isinstance(result.versions, Mapping) else {}
    if versions.get("triton") and "triton" in (backend or "").split("+"):
        return str(versions["triton"])
    return None


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class _Parents:
    """The evaluation a child's ``parent`` key names: the same task, method and target, that
    step, the latest one before the child in the run's events (else any). Evaluations are
    named by their position in ``run.evaluations`` (file order)."""

    def __init__(self, run: RunData) -> None:
        self.run = run
        self.by_key: dict[tuple[Any, ...], list[int]] = {}
        for i, e in enumerate(run.evaluations):
            key = (e.task, e.extra.get("method"), e.target, e.extra.get("step"))
            self.by_key.setdefault(key, []).append(i)

    def of(self, child: int) -> EvaluationResult | None:
        e = self.run.evaluations[child]
        found = self.by_key.get((e.task, e.extra.get("method"), e.target, e.extra.get("parent")), [])
        before = [i for i in found if i < child]
        return self.run.evaluations[(before or found)[-1]] if found else None


def _original(run: RunData, parents: _Parents, position: int, task: Any,
              ) -> tuple[str | None, str | None]:
    """(Pallas_Code_Original, Original_Kernel) of the evaluation at ``position``: see the module
    docstring."""
    result = run.evaluations[position]
    if result.extra.get("parent"):
        parent = parents.of(position)
        if parent is None:
            return None, f"{result.extra.get('method')}/{result.extra['parent']}"
        return run.source(parent)[0], kernel_name(parent)
    if task is None:
        return None, None
    target = result.target
    files = task.kernel_files()
    if task.suite == "pallasbench" and target == "gpu":
        tpu_style = _read(files.get(("seed", "tpu")))
        if tpu_style is not None:
            return tpu_style, "seed_tpu.py"
    seed = _read(files.get(("seed", target)))
    if seed is not None and _sha(seed) != result.source_sha256:
        return seed, f"seed_{target}.py"
    return None, None


def records(run_dir: str | os.PathLike[str] | RunData) -> list[dict[str, Any]]:
    """One record per evaluated kernel, in catalogue order, with exactly :data:`FIELD_NAMES`."""
    run = run_dir if isinstance(run_dir, RunData) else load_run(run_dir)
    parents = _Parents(run)
    replayed = replayed_run(run)
    out = []
    for position in ordered_positions(run):
        e = run.evaluations[position]
        task = task_or_none(e.task)
        target, size = e.target, e.size or "small"
        code, _ = run.source(e)
        original, original_name = _original(run, parents, position, task)
        diff = None
        if original is not None and code is not None:
            diff = "".join(difflib.unified_diff(
                original.splitlines(keepends=True), code.splitlines(keepends=True),
                fromfile=original_name or "original", tofile=kernel_name(e)))
        ir = run.ir_files(e)
        jaxpr = _read(ir.get("jaxpr"))
        backend = kernel_backend(e, code, ir)
        triton_ir, mosaic_ir = _kernel_ir(_read(ir.get("kernel_ir")), backend, target)
        grids, blocks = grid_and_blocks(jaxpr)
        level = task.meta.get("level") if task is not None else None
        t_kernel, t_ref = e.t_kernel_ms, e.t_ref_ms
        measured = isinstance(t_kernel, (int, float)) and isinstance(t_ref, (int, float)) \
            and t_kernel > 0 and t_ref > 0
        verdict = is_correct(e)
        inputs = None
        if task is not None and size in task.sizes:
            inputs = [list(spec.shape) for spec in task.input_specs(size)]
        record = {
            "Op_Name": e.task,
            "Level_ID": level if isinstance(level, int) and not isinstance(level, bool) else None,
            "Task_ID": task_number(e.task, task),
            "Kernel_Name": kernel_name(e),
            "Pallas_Runtime": float(t_kernel) if measured else None,
            "JAX_Baseline_Runtime": float(t_ref) if measured else None,
            "Speedup": float(t_ref) / float(t_kernel) if measured else None,
            "Pallas_Code": code,
            "Pallas_Code_Original": original,
            "JAX_Code": _read(task.folder / "task.py") if task is not None and task.folder else None,
            "Diff": diff,
            "Correct": verdict,
            "Max_Diff": e.max_abs_err if isinstance(e.max_abs_err, (int, float)) else None,
            "Error": None if verdict else (e.message or None),
            "Jaxpr_IR": jaxpr,
            "StableHLO_IR": _read(ir.get("stablehlo")),
            "Triton_MLIR": triton_ir,
            "Mosaic_MLIR": mosaic_ir,
            "Block_Shape": blocks,
            "Grid_Shape": grids,
            "Input_Shapes": inputs,
            "Target_Hardware": target_hardware(e),
            "JAX_Version": (e.versions or {}).get("jax"),
            "Triton_Version": triton_version(e, backend),
            "Status": e.status,
            "Mode": e.mode or None,
            "Size": e.size or None,
            "Kernel_Backend": backend,
            "Original_Kernel": original_name,
            "Replay_Of": replayed,
        }
        assert tuple(record) == FIELD_NAMES
        out.append(record)
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
    return pa.schema([pa.field(name, types[kind], metadata={"description": meaning})
                      for name, kind, meaning in FIELDS],
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


def _counts(values: list[Any]) -> str:
    counted = Counter("null" if v is None else str(v) for v in values)
    return ", ".join(f"{value} {n}" for value, n in sorted(counted.items(), key=lambda kv: (-kv[1], kv[0])))


_PARQUET_TYPES = {"string": "string", "int64": "int64", "float64": "float64", "bool": "bool",
                  "grids": "list<list<int64>>", "blocks": "list<list<list<int64>>>"}


def _guarantees(replayed: str | None) -> list[str]:
    """The card's "What the judge guarantees": for a replay run (``replayed``, the run whose
    revealed secret it used) the inputs were public, which the card says first."""
    inputs = ("on inputs the kernel could not know" if replayed is None else
              "on the inputs of the run it replays, which were public (below)")
    lines = [
        "- `Correct` comes from the evaluator's verdict alone (`Status == \"correct\"`); no other "
        "field can make a record correct. A kernel that copies its input, or does the work in "
        "plain XLA outside Pallas, is not correct.",
        f"- Device mode: the module the judge checked is the module it ran and timed, {inputs}. "
        "Interpret mode: the interpreted module is correct and the module lowered for the chip "
        "is structurally a Pallas kernel; device mode is what proves the compiled kernel "
        "(docs/evaluator.md, threat model).",
        "- `Pallas_Code` is the evaluated source: taken from the run, or from a kernel file only "
        "while it still hashes to the evaluated source.",
    ]
    if replayed is not None:
        lines.insert(0, f"- **A replay.** This run (`jaxbench run --replay DIR`) drew the inputs of "
                        f"`{replayed}` again, from the secret that run revealed: they were "
                        "public before it started, so its verdicts are NOT hardened against a "
                        "kernel tuned to them (every record's `Replay_Of` says so). It compares "
                        "timing methods, hardware or versions on identical inputs; do not mix "
                        "its records into a leaderboard of hardened verdicts.")
    return [*lines, ""]


def dataset_card(run: RunData, data: list[dict[str, Any]], files: dict[str, int]) -> str:
    """The dataset card (README.md) of a Parquet export: what is in it, each field with its
    type and how it was measured, what the judge guarantees, where the tasks come from."""
    results = ordered_evaluations(run)
    suites = sorted({t.suite for t in map(task_or_none, {r["Op_Name"] for r in data}) if t is not None})
    splits = [(name.removesuffix(".parquet"), name) for name in sorted(files)]
    timing = sorted({str(e.timing_method) for e in results if e.timing_method})
    versions = sorted({f"jaxbench {(e.versions or {}).get('jaxbench')}, JAX "
                       f"{(e.versions or {}).get('jax')}" for e in results})
    front = ["---", "pretty_name: jaxbench Pallas kernels (Sakana-archive records)",
             "tags: [jax, pallas, gpu-kernels, tpu-kernels, code]", "configs:",
             "- config_name: default", "  data_files:"]
    front += [f"  - split: {split}\n    path: {name}" for split, name in splits]
    first = splits[0][1] if splits else "level_1.parquet"
    lines = [
        *front, "---", "",
        f"# {run.name}: Pallas kernels judged by jaxbench", "",
        f"{len(data)} records, one per evaluated kernel (every evaluation of the run directory "
        f"`{run.name}`, correct or not), in the layout of Sakana AI's kernel archive adapted to "
        "Pallas; written by `jaxbench export RUN --format sakana-parquet`. Suites: "
        f"{', '.join(suites) or 'none known'}.", "",
        "| file | records |", "|---|---:|",
        *[f"| `{name}` | {files[name]} |" for _, name in splits], "",
        f"- Status: {_counts([r['Status'] for r in data])}",
        f"- Mode: {_counts([r['Mode'] for r in data])}; size: {_counts([r['Size'] for r in data])}",
        f"- Hardware: {_counts([r['Target_Hardware'] for r in data])}",
        f"- Kernel backend: {_counts([r['Kernel_Backend'] for r in data])}",
        f"- Timing: {', '.join(timing) or 'none (nothing was timed: runtimes and speedups are null)'}",
        f"- Evaluated with: {'; '.join(versions) or 'unknown'}", "",
        "## Loading", "",
        "```python",
        "import pandas as pd",
        f'df = pd.read_parquet("{first}")  # one level',
        "",
        "from datasets import load_dataset",
        f'ds = load_dataset("parquet", data_files="{first}", split="train")',
        'levels = load_dataset("path/to/this/folder")  # every level, one split each (configs above)',
        "```", "",
        "## Fields", "",
        "Units: times in milliseconds; errors in the output's units. A value that was not "
        "measured is null, never a placeholder.", "",
        "| field | type | meaning |", "|---|---|---|",
        *[f"| `{name}` | {_PARQUET_TYPES[kind]} | {meaning} |" for name, kind, meaning in FIELDS], "",
        "## How the values were measured", "",
        "- Each kernel went through jaxbench's evaluator: static checks, a trace in a sandboxed, "
        "untrusted process that sees input shapes only, an export of that trace, and a trusted "
        "judge that checks the exported module's structure (Pallas kernel calls present, work "
        "outside the kernels within budget) and runs exactly that module on inputs drawn on "
        "its side.",
        "- `Correct` / `Max_Diff`: outputs against the float32 truth (the reference on upcast "
        "inputs) over the judged trials, `|out - truth| <= atol + rtol * |truth|` with the "
        "task's tolerances, at the evaluated `Size`.",
        "- Runtimes (device mode only): the judge times the compiled kernel and the XLA "
        "reference interleaved, after warm-up, and reports medians (`device_trace`: device "
        "time per call from a profiler trace; `wall_clock_interleaved`: wall clock per call). "
        "`Speedup` = `JAX_Baseline_Runtime / Pallas_Runtime`.",
        "- Interpret mode (a CPU host): the kernel body ran in JAX's interpreter; its lowering "
        "for the chip named in `Target_Hardware` was checked (structure, memory budgets and, for "
        "GPU kernels, Triton's rules) but not run, and nothing was timed.",
        "- IR, `Block_Shape`, `Grid_Shape`: from the files `--save-ir` stored with the run "
        "(null without it).", "",
        "## What the judge guarantees", "",
        *_guarantees(replayed_run(run)),
        "## Sources and licence", "",
        "The tasks (`JAX_Code`: references, sizes, inputs) and the shipped seed kernels come "
        "from jaxbench's task catalogue (`src/jaxbench/tasks/`), licensed Apache-2.0 with "
        "jaxbench. PallasBench's tasks follow the published PallasBench catalogue (its "
        "numbering, levels and shapes; the repairs are listed in docs/suites.md); the JAXBench "
        "suite has 17 production operators and 33 KernelBench Level-2 fusions. Those upstream "
        "catalogues have their own licences, which jaxbench does not record: check them before "
        "redistributing. Kernels written by a model (`Kernel_Name` `<method>/<step>`) are that "
        "model's output, under its provider's terms.", "",
    ]
    return "\n".join(lines)


def write_parquet(run_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> dict[str, int]:
    """One Parquet file per level (``level_1.parquet``, ...; see :func:`level_file`) in
    ``out_dir``, and the dataset card beside them (``README.md``); returns records per file."""
    pa = require_pyarrow()
    import pyarrow.parquet as pq

    run = run_dir if isinstance(run_dir, RunData) else load_run(run_dir)
    data = records(run)
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
    card = out / CARD
    tmp = card.with_name(card.name + ".tmp")
    tmp.write_text(dataset_card(run, data, written))
    tmp.replace(card)
    return written


__all__ = ["CARD", "DEFAULT_JSON", "DEFAULT_PARQUET_DIR", "FIELDS", "FIELD_NAMES", "dataset_card",
           "grid_and_blocks", "kernel_backend", "records", "target_hardware", "triton_version",
           "write_json", "write_parquet"]
