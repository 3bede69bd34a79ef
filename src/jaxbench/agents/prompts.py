"""Prompt pieces shared by every method: the task statement (reference, shapes at the sizes
actually evaluated, the roofline profile, the kernel contract), the verdict of an
evaluation as feedback, and pulling the code out of an answer.

Two prompt modes (``--prompt``): ``default`` is this harness's statement (with the roofline
profile and its hint, and the exact-GELU note for tasks that compute erf); ``paper``
reconstructs the JAXBench paper's arms, whose statement is the task alone (instruction,
reference, shapes, contract) with no profile, hint or advice, so that ``--docs`` is the only
difference between its no-docs and +docs arms (docs/agents.md, "Prompts").
"""

from __future__ import annotations

import ast
import inspect
import math
import re
import sys
import textwrap
from collections.abc import Callable
from functools import cache
from typing import Any, TypedDict

from jaxbench.contract import FIELD_OUTSIDE_FLOPS, POLICY_RULES, EvaluationResult, Stage, Status
from jaxbench.tasks import Task

HARDWARE = {
    "tpu": "a Google TPU (v5e / v6e / v5p class) through Pallas' Mosaic TPU backend",
    "gpu": "an NVIDIA GPU (H100 / H200 / A100 class) through Pallas' Triton backend",
}
IMPORTS = {
    "tpu": "from jax.experimental import pallas as pl\nfrom jax.experimental.pallas import tpu as pltpu",
    "gpu": "from jax.experimental import pallas as pl\nfrom jax.experimental.pallas import triton as plgpu",
}
# The chip a kernel is lowered for when none is attached (the evaluator's cross-lowering
# targets), used for the roofline profile in interpret mode.
PROFILE_CHIP = {"tpu": "TPU v6 lite", "gpu": "NVIDIA H200"}

PROMPT_MODES = ("default", "paper")

ANSWER_FORMAT = ("Answer with the complete kernel module in exactly one ```python code block "
                 "(no other code blocks).")

_HELPER_MODULES = ("jaxbench.tasks",)  # helpers the prompt spells out (task modules, ops)
_MAX_HELPERS = 16


# -- the reference ----------------------------------------------------------------------------

def _source(fn: Callable[..., Any]) -> str:
    """A function's source, dedented (closures and methods are indented in their module)."""
    return textwrap.dedent(inspect.getsource(fn))


def _constant(value: Any) -> bool:
    if isinstance(value, (bool, int, float, str)):
        return True
    return isinstance(value, tuple) and len(value) <= 16 and all(_constant(v) for v in value)


def _is_helper(value: Any) -> bool:
    return inspect.isfunction(value) and (value.__module__ or "").startswith(_HELPER_MODULES)


def _names_used(fn: Callable[..., Any]) -> list[tuple[str, str | None]]:
    """(name, attribute) pairs the function's body reads: ``x`` -> (x, None), ``ops.f`` -> (ops, f)."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(_source(fn))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            found.append((node.value.id, node.attr))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found.append((node.id, None))
    return found


def _label(helper: Callable[..., Any], task_module: str | None) -> str:
    if helper.__module__ == task_module:
        return ""
    if helper.__module__ == "jaxbench.tasks.ops":
        return f"# ops.{helper.__name__} (jaxbench.tasks.ops)\n"
    return f"# {helper.__module__}.{helper.__name__}\n"


def reference_source(task: Task) -> str:
    """The reference's module docstring, the constants and helper functions it reaches (in
    dependency order, found transitively through globals, closures and ``ops.<name>``), and
    its own source. Closures and nested functions are dedented; a closure's free variables
    are spelled out as assignments."""
    reference = task.reference
    module = sys.modules.get(reference.__module__)
    task_module = module.__name__ if module is not None else None
    helpers: list[Callable[..., Any]] = []
    constants: dict[str, str] = {}
    bindings: list[str] = []
    seen: set[int] = {id(reference)}

    def visit(fn: Callable[..., Any]) -> None:
        try:
            closure = inspect.getclosurevars(fn)
        except (TypeError, ValueError):
            return
        scopes = {**fn.__globals__, **closure.nonlocals}
        for name, attr in _names_used(fn):
            value = scopes.get(name)
            if value is None:
                continue
            if attr is not None:
                if inspect.ismodule(value) and value.__name__.startswith(_HELPER_MODULES):
                    value = getattr(value, attr, None)
                else:
                    continue
            if _is_helper(value):
                if name in closure.nonlocals and value.__name__ != name:
                    binding = f"{name} = {value.__name__}  # bound when the reference was built"
                    if binding not in bindings:
                        bindings.append(binding)
                if id(value) not in seen and len(helpers) < _MAX_HELPERS:
                    seen.add(id(value))
                    visit(value)
                    helpers.append(value)
            elif attr is None and _constant(value) and (name in closure.nonlocals or (
                    name in fn.__globals__ and name.isupper())):
                constants.setdefault(name, f"{name} = {value!r}")

    visit(reference)
    doc = (module.__doc__ or "").strip() if module is not None else task.description
    parts = [f'"""{doc}"""'] if doc else []
    if constants:
        parts.append("\n".join(constants.values()))
    parts += [_label(h, task_module) + _source(h) for h in helpers]
    own = _source(reference)
    if bindings:
        own = "\n".join(bindings) + "\n\n" + own
    parts.append(own)
    return "\n\n".join(p.rstrip() for p in parts)


@cache
def _reference_primitives(task_id: str) -> frozenset[str]:
    import jax

    from jaxbench.tasks import get_task

    task = get_task(task_id)
    specs = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in task.input_specs("small")]
    text = str(jax.make_jaxpr(task.reference)(*specs))
    # equations print as "c:f32[4] = name[params] a b" or "c:f32[4] = name a b"
    return frozenset(re.findall(r"= ([a-z_][a-z0-9_]*)\b", text))


def uses_erf(task: Task) -> bool:
    """Whether the reference computes erf or erfc (the exact GELU does): no Pallas backend
    lowers erfc, and Triton lowers neither."""
    try:
        return bool({"erf", "erfc"} & _reference_primitives(task.id))
    except Exception:  # noqa: BLE001 - a reference that cannot be traced abstractly
        return False


# -- shapes and profile -----------------------------------------------------------------------

def _describe_outputs(task: Task, size: str) -> str:
    import jax

    leaves = jax.tree_util.tree_leaves(task.output_shapes(size))
    return "\n".join(f"output {i}: {leaf.dtype}{list(leaf.shape)}" if len(leaves) > 1
                     else f"{leaf.dtype}{list(leaf.shape)}" for i, leaf in enumerate(leaves))


def _human(n: float, unit: str) -> str:
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {prefix}{unit}"
    return f"{n:.3g} {unit}"


class Profile(TypedDict):
    """A task's work at one size against a chip's roofline (:func:`profile`)."""

    size: str
    chip: str
    flops: float
    bytes: float  # of minimal HBM traffic
    intensity: float  # FLOP per byte
    ridge: float  # the chip's ridge point, FLOP per byte
    bound: str  # "memory" or "compute": the roof that binds
    roofline_ms: float  # the time at the roof


def profile(task: Task, size: str, target: str, device_kind: str | None = None) -> Profile:
    """The task's work at ``size`` against the target chip's roofline: FLOPs, HBM bytes,
    arithmetic intensity, the chip's ridge point, which roof binds, and the time at the roof."""
    from jaxbench.backends.peaks import peak_for

    chip = device_kind or PROFILE_CHIP[target]
    peak = peak_for(chip) or peak_for(PROFILE_CHIP[target])
    assert peak is not None
    flops, nbytes = task.flops(size), task.bytes(size)
    intensity = flops / nbytes if nbytes else math.inf
    ridge = peak[0] / peak[1]
    return {"size": size, "chip": chip, "flops": flops, "bytes": nbytes, "intensity": intensity,
            "ridge": ridge, "bound": "memory" if intensity < ridge else "compute",
            "roofline_ms": max(flops / peak[0], nbytes / peak[1]) * 1e3}


def describe_profile(task: Task, sizes: list[str], target: str, device_kind: str | None = None) -> str:
    lines = []
    for size in sizes:
        p = profile(task, size, target, device_kind)
        lines.append(
            f"- size {size}: {_human(p['flops'], 'FLOP')}, {_human(p['bytes'], 'B')} of minimal HBM "
            f"traffic, {p['intensity']:.3g} FLOP/byte against a ridge point of {p['ridge']:.0f} "
            f"FLOP/byte on {p['chip']}: **{p['bound']}-bound**; at the roofline it takes "
            f"{p['roofline_ms'] * 1e3:.3g} us.")
    hint = ("Memory-bound: one pass over HBM, fused, with large blocks; the FLOPs are free."
            if profile(task, sizes[-1], target, device_kind)["bound"] == "memory" else
            "Compute-bound: keep the matrix units busy (big, aligned tiles in bf16 or f32 dots "
            "with f32 accumulation) and re-read operands from HBM as little as possible.")
    return "## Profile\n" + "\n".join(lines) + "\n" + hint


def _mode_text(mode: str, target: str) -> str:
    if mode == "device":
        return (f"on the {target.upper()} itself: checked for correctness, then timed against the "
                "XLA-compiled reference (the speedup is the score)")
    extra = " and in the TPU interpreter (NaN-filled memory, race detection)" if target == "tpu" else ""
    return ("on a CPU: cross-lowered for the target, then checked for correctness in interpret "
            f"mode{extra}. No timing is measured in this run; write the kernel you would time")


def task_statement(task: Task, target: str, size: str = "small", mode: str = "interpret",
                   device_kind: str | None = None, prompt_mode: str = "default") -> str:
    """What to write: the operator, its shapes at the sizes the harness uses, the profile,
    the hardware and the kernel contract. Identical for every call of a task and setting, so
    prompts start with it (providers cache the longest common prefix). ``prompt_mode``
    "paper" leaves out the roofline profile and its hint and the exact-GELU advice."""
    if prompt_mode not in PROMPT_MODES:
        raise ValueError(f"prompt mode {prompt_mode!r}: use one of {', '.join(PROMPT_MODES)}")
    advice = prompt_mode == "default"
    others = [s for s in task.sizes if s != size]
    other_shapes = "\n".join(
        f"Size {s}{' (the benchmark times this size)' if s == 'full' else ''}:\n"
        f"{task.prompt_signature(s)}\nOutput: {_describe_outputs(task, s)}" for s in others)
    names = ", ".join(s.name.lower() for s in task.input_specs(size))
    gpu_params = ""
    if target == "gpu":
        gpu_params = (
            "\n- Every `pl.pallas_call` must pass `compiler_params=plgpu.CompilerParams(num_warps=..., "
            "num_stages=...)`\n  (`plgpu` = jax.experimental.pallas.triton). Without it JAX sends the "
            "kernel to the Mosaic GPU\n  backend instead of Triton and the harness reports a "
            "compile_error.")
    reference = reference_source(task)
    if advice and uses_erf(task):
        gpu_params += ("\n- The exact GELU (`jax.nn.gelu(x, approximate=False)`, erf-based) does not lower "
                       "inside a kernel: it\n  uses `erfc`. " + (
                           "Write `0.5 * x * (1 + jax.lax.erf(x / math.sqrt(2)))`: `jax.lax.erf` lowers."
                           if target == "tpu" else
                           "Triton lowers neither erf nor erfc: build erf from `jnp.exp` (e.g. "
                           "Abramowitz-Stegun 7.1.26,\n  |error| < 1.5e-7)."))
    profile_sizes = [size] + (["full"] if size != "full" and "full" in task.sizes else [])
    profile_text = f"\n\n{describe_profile(task, profile_sizes, target, device_kind)}" if advice else ""
    return f"""You are an expert in writing high-performance Pallas kernels (JAX's kernel language).
Write a Pallas kernel for {HARDWARE[target]} that computes exactly what the reference below computes,
faster than XLA compiles the reference.

## Task {task.id}

Reference implementation (plain JAX; it is the XLA baseline you must beat):
```python
{reference}
```

## Shapes
This run evaluates the kernel at size {size} {_mode_text(mode, target)}.
Inputs, in call order, at size {size}:
{task.prompt_signature(size)}
Output (shape and dtype must match exactly):
{_describe_outputs(task, size)}

The kernel is also traced at every other size of the task, and its blocks must fit on-chip
memory there too, so write it for all of these shapes:
{other_shapes}{profile_text}

## Kernel contract
- Define `kernel({names})`: a function taking the inputs positionally and returning the
  output(s) with exactly the reference's shapes and dtypes.
- Set `TARGET = "{target}"` at module level.
- Import only jax, numpy and the standard math helpers (functools, math); for Pallas:
{IMPORTS[target]}
- Do the hot path (the bulk of the FLOPs and memory traffic) inside `pl.pallas_call`; small glue
  (reshapes, casts) may stay in jnp: work outside kernels may be at most 10% of the task's FLOPs.{gpu_params}
- Never pass `interpret=` to pallas_call and never read or patch JAX's config: the harness decides
  how the kernel runs.
- Accumulate in float32 where the reference does; results are compared against a float32 ground
  truth with atol={task.atol:g}, rtol={task.rtol:g}."""


# -- feedback ---------------------------------------------------------------------------------

_LINE_REF = re.compile(r"(?:<kernel>|kernel\.py|candidate\.py)[:\", ]+(?:line )?(\d+)|\bline (\d+)\b")


def error_lines(message: str, code: str) -> list[tuple[int, str]]:
    """The candidate's lines an error message points at (``<kernel>:12``, ``line 12``)."""
    lines = code.splitlines()
    out: list[tuple[int, str]] = []
    for match in _LINE_REF.finditer(message):
        number = int(match.group(1) or match.group(2))
        if 0 < number <= len(lines) and all(n != number for n, _ in out):
            out.append((number, lines[number - 1].rstrip()))
    return out[:4]


def _memory_facts(result: EvaluationResult) -> list[str]:
    memory = (result.stages.get(Stage.LOWER) or {}).get("memory") or ()
    facts = []
    for item in memory[:6]:
        where = f"pallas_call #{item.get('kernel', 0)} at size {item.get('size')}"
        if item.get("vmem_bytes") is not None:
            limit = item.get("vmem_limit_bytes") or 0
            facts.append(f"{where}: {item['vmem_bytes'] / 2**20:.2f} MiB of VMEM "
                         f"(limit {limit / 2**20:g} MiB)")
        elif item.get("block_bytes") is not None:
            text = f"{where}: blocks {item['block_bytes'] / 2**10:.0f} KiB"
            if item.get("largest_tensor_elements"):
                text += f", largest in-kernel tensor {item['largest_tensor_elements']} elements"
            if item.get("dot_shared_bytes_estimate"):
                text += f", dot shared memory ~{item['dot_shared_bytes_estimate'] / 2**10:.0f} KiB"
            if item.get("num_stages"):
                text += f", num_stages {item['num_stages']}"
            facts.append(text)
    return facts


def describe_verdict(result: EvaluationResult, code: str | None = None) -> str:
    """An evaluation result as feedback: what failed and on which of the candidate's lines, or
    how fast it was; with what the evaluator saw of the kernel (calls, grids, blocks, memory,
    compile time, roofline fraction). The agent's keys it reads are in ``result.extra``:
    ``truncated`` (the answer was cut off), ``ir_facts`` (:func:`ir_facts`) and ``source``."""
    status, stage = result.status, result.stage
    message = (result.message or "").strip()
    if len(message) > 1500:
        message = message[:1500] + " ..."
    if status == Status.CORRECT:
        lines = ["Verdict: correct"]
        if result.max_abs_err is not None:
            lines[0] += f" (max abs error {result.max_abs_err:.3g})"
        if result.speedup is not None:
            lines.append(f"Timing: reference {result.t_ref_ms:.4g} ms, kernel "
                         f"{result.t_kernel_ms:.4g} ms, speedup {result.speedup:.3f}x over XLA.")
            if result.roofline_fraction is not None:
                lines.append(f"Roofline fraction: {result.roofline_fraction:.2f} "
                             "(1.0 = at the chip's roofline for this task).")
        else:
            lines.append("Timing: not measured (no accelerator; correctness checked in interpret mode).")
    else:
        lines = [f"Verdict: {status} (failed at the {stage} stage)"]
        if result.rule in POLICY_RULES:
            lines.append(f"Rule: {result.rule}: honest work left in XLA over the glue budget "
                         "(a policy refusal, not a cheat); move that work into the kernel.")
        if result.extra.get("truncated"):
            lines.append("The answer was cut off at the output-token limit before it ended.")
        if message:
            lines.append(f"Message: {message}")
        frames = [f for f in result.candidate_frames if isinstance(f, str)]
        if frames:  # the evaluator's frames in the candidate file, outermost first
            lines.append("Where, in your kernel (outermost call first):")
            lines += [f"  {frame[:300]}" for frame in frames[-4:]]
        else:
            source = result.extra.get("source")
            for number, text in error_lines(message, code or (source if isinstance(source, str) else "")):
                lines.append(f"  your line {number}: {text.strip()}")
        if status == Status.INCORRECT and result.max_abs_err is not None:
            rel = result.rel_err or 0.0
            lines.append(f"Max abs error {result.max_abs_err:.3g}, relative error {rel:.3g}.")
    facts = []
    structure = result.structure or {}
    if structure.get("kernel_calls") is not None:
        facts.append(f"pallas_calls: {structure['kernel_calls']}")
    for i, call in enumerate((result.extra.get("ir_facts") or {}).get("calls", ())[:4]):
        text = f"pallas_call #{i}: grid {tuple(call.get('grid', ()))}"
        if call.get("blocks"):
            text += ", blocks " + ", ".join(str(tuple(b)) for b in call["blocks"][:6])
        if call.get("params"):
            text += f", {call['params']}"
        facts.append(text)
    facts += _memory_facts(result)
    if result.compile_s is not None:
        facts.append(f"compile time {result.compile_s:.2f} s")
    if structure.get(FIELD_OUTSIDE_FLOPS):
        task_flops = structure.get("task_flops") or 0
        share = f" ({structure[FIELD_OUTSIDE_FLOPS] / task_flops:.1%} of the task)" if task_flops else ""
        facts.append(f"FLOPs outside kernels: {structure[FIELD_OUTSIDE_FLOPS]:.3g}{share}")
    if facts:
        lines.append("What the evaluator saw: " + "; ".join(facts) + ".")
    return "\n".join(lines)


MEASUREMENT_ERROR_CHARS = 160


def _short(text: str, limit: int = MEASUREMENT_ERROR_CHARS) -> str:
    """The first non-empty line of ``text``, cut to ``limit`` characters."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return first if len(first) <= limit else first[: limit - 3].rstrip() + "..."


def measurement_line(result: EvaluationResult) -> str:
    """One line per evaluated kernel, for every kernel a search shows the model (ancestors,
    parents, inspirations, earlier attempts): its status; for a failure, the stage and the
    error in short (the worst error against the tolerance when it ran but was wrong); for a
    timed kernel, its time, speedup over XLA and roofline fraction; in interpret mode, that
    it was not timed.

    e.g. ``status correct · 0.412 ms · speedup 1.84x over XLA · 41% of roofline``
    """
    status = result.status or "unknown"
    parts = [f"status {status}"]
    if status == Status.CORRECT:
        if result.speedup is not None:
            if result.t_kernel_ms is not None:
                parts.append(f"{result.t_kernel_ms:.4g} ms")
            parts.append(f"speedup {result.speedup:.3g}x over XLA")
            if result.roofline_fraction is not None:
                parts.append(f"{result.roofline_fraction:.0%} of roofline")
        elif result.mode == "interpret":
            parts.append("not timed (interpret mode)")
        else:
            parts.append("not timed")
        return " · ".join(parts)
    if result.stage:
        parts[0] += f" ({result.stage})"
    message = _short(result.message or "")
    if message:
        parts[0] += f": {message}"
    if status == Status.INCORRECT and result.max_abs_err is not None:
        err = f"max abs err {result.max_abs_err:.2g}"
        if result.tol_fraction is not None:
            err += f" ({result.tol_fraction:.2g}x the tolerance)"
        parts.append(err)
    if result.extra.get("truncated"):
        parts.append("answer cut off at the output-token limit")
    return " · ".join(parts)


_PARAMS = re.compile(r"compiler_params=(\w*CompilerParams)\(")
_DIM = re.compile(r"Blocked\(block_size=(\d+)\)|Squeezed\(\)|None|(\d+)")


def _group(text: str, open_at: int) -> str:
    """The text inside the parenthesis that opens at ``open_at`` (balanced)."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[open_at + 1:i]
    return text[open_at + 1:]


class PallasCallFacts(TypedDict, total=False):
    """One ``pallas_call`` of a candidate's jaxpr (:func:`ir_facts`): its grid, the block shape
    of each operand (None: a squeezed dimension) and its main compiler parameters, as text
    (only where it sets some)."""

    grid: list[int]
    blocks: list[list[int | None]]
    params: str


class IRFacts(TypedDict):
    """What :func:`ir_facts` reads off a candidate's jaxpr: its ``pallas_call``s, in order."""

    calls: list[PallasCallFacts]


def ir_facts(jaxpr_text: str) -> IRFacts:
    """Grids, block shapes and the main compiler parameters of every ``pallas_call`` in the
    jaxpr text the evaluator saved for a candidate (feedback only; never used to judge)."""
    calls = []
    params = [_group(jaxpr_text, m.end() - 1) for m in _PARAMS.finditer(jaxpr_text)]
    for i, match in enumerate(re.finditer(r"GridMapping\(", jaxpr_text)):
        body = _group(jaxpr_text, match.end() - 1)
        grid_at = body.find("grid=(")
        grid = [int(g) for g in re.findall(r"\d+", _group(body, grid_at + 5))] if grid_at >= 0 else []
        blocks = []
        for block in re.finditer(r"BlockMapping\(block_shape=\(", body):
            dims = []
            for dim in _DIM.finditer(_group(body, block.end() - 1)):
                size = dim.group(1) or dim.group(2)
                dims.append(int(size) if size else None)
            blocks.append(dims)
        call: PallasCallFacts = {"grid": grid, "blocks": blocks}
        if i < len(params):
            kept = [kv.strip() for kv in re.split(r",\s*(?=\w+=)", params[i])
                    if kv.strip().split("=")[0] in ("dimension_semantics", "num_warps", "num_stages",
                                                    "vmem_limit_bytes")
                    and not kv.strip().endswith("=None")]
            if kept:
                call["params"] = ", ".join(kept)
        calls.append(call)
    return {"calls": calls}


# -- answers ----------------------------------------------------------------------------------

_OPEN = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n`]*$", re.MULTILINE)
_PY_LANGS = ("python", "py", "python3", "py3", "ipython", "")


def _fenced_blocks(text: str) -> list[tuple[str, str, bool]]:
    """(language, body, closed) of every fenced block; an unclosed last block runs to the end."""
    blocks = []
    pos = 0
    while True:
        opening = _OPEN.search(text, pos)
        if opening is None:
            break
        fence, lang = opening.group(1), opening.group(2).lower()
        body_start = opening.end() + 1
        closing = re.compile(rf"^[ \t]{{0,3}}{fence[0]}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = closing.search(text, body_start)
        if end is None:
            blocks.append((lang, text[body_start:], False))
            break
        blocks.append((lang, text[body_start:end.start()], True))
        pos = end.end()
    return blocks


def _score(body: str) -> tuple[int, int, int]:
    defines_kernel = bool(re.search(r"^def kernel\s*\(", body, re.MULTILINE))
    calls_pallas = "pallas_call" in body
    return (int(defines_kernel), int(calls_pallas), len(body))


def extract_code(text: str) -> str:
    """The kernel module in an answer: among its Python code blocks (``` or ~~~ fences,
    ``python``/``py``/``python3``/no language; an unclosed last block counts) the one that
    defines ``kernel`` and calls ``pallas_call``, preferring the last such; a trailing usage
    example or test does not replace it. Without code blocks, the whole text."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    blocks = [(lang, body) for lang, body, _ in _fenced_blocks(text) if lang in _PY_LANGS]
    if blocks:
        best = max(range(len(blocks)), key=lambda i: (_score(blocks[i][1])[:2], i))
        return blocks[best][1].strip("\n").rstrip() + "\n"
    return text.strip() + "\n"
