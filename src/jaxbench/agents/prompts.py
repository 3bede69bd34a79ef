"""Prompt pieces shared by every method: the task statement, the docs block, the
verdict of an evaluation as feedback, and pulling the code out of an answer.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

from jaxbench.tasks import Task, ops

DOCS_DIR = Path(__file__).parent / "docs"
DOCS_HEADER = re.compile(r"<!-- jaxbench-docs: describes JAX (\S+)[^>]*-->\n?")
DOC_FILES = ("hardware_{t}", "pallas_api", "pallas_{t}", "example_{t}", "rules_{t}")

HARDWARE = {
    "tpu": "a Google TPU (v5e / v6e / v5p class) through Pallas' Mosaic TPU backend",
    "gpu": "an NVIDIA GPU (H100 / H200 / A100 class) through Pallas' Triton backend",
}
IMPORTS = {
    "tpu": "from jax.experimental import pallas as pl\nfrom jax.experimental.pallas import tpu as pltpu",
    "gpu": "from jax.experimental import pallas as pl\nfrom jax.experimental.pallas import triton as plgpu",
}

ANSWER_FORMAT = ("Answer with the complete kernel module in exactly one ```python code block "
                 "(no other code blocks).")


def reference_source(task: Task) -> str:
    """The reference's module docstring, its source, and the source of the helpers it calls."""
    module = sys.modules.get(task.reference.__module__)
    source = inspect.getsource(task.reference)
    helpers: list[str] = []
    for node in ast.walk(ast.parse(source)):
        # ops.<name>(...) helpers and functions of the task module the reference calls.
        label = ""
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ops":
            helper = getattr(ops, node.attr, None)
            label = f"# ops.{node.attr} (jaxbench.tasks.ops)\n"
        elif isinstance(node, ast.Name) and module is not None:
            helper = getattr(module, node.id, None)
            if getattr(helper, "__module__", None) != module.__name__:
                helper = None
        else:
            helper = None
        if inspect.isfunction(helper) and helper is not task.reference:
            text = label + inspect.getsource(helper)
            if text not in helpers:
                helpers.append(text)
    doc = (module.__doc__ or "").strip() if module is not None else task.description
    parts = [f'"""{doc}"""'] if doc else []
    parts += helpers + [source]
    return "\n\n".join(p.rstrip() for p in parts)


def _describe_outputs(task: Task, size: str) -> str:
    import jax

    leaves = jax.tree_util.tree_leaves(task.output_shapes(size))
    return "\n".join(f"output {i}: {leaf.dtype}{list(leaf.shape)}" if len(leaves) > 1
                     else f"{leaf.dtype}{list(leaf.shape)}" for i, leaf in enumerate(leaves))


def task_statement(task: Task, target: str) -> str:
    """What to write: the operator, its shapes, the hardware and the kernel contract."""
    return f"""You are an expert in writing high-performance Pallas kernels (JAX's kernel language).
Write a Pallas kernel for {HARDWARE[target]} that computes exactly what the reference below computes,
faster than XLA compiles the reference.

## Task {task.id}

Reference implementation (plain JAX; it is the XLA baseline you must beat):
```python
{reference_source(task)}
```

Inputs, in call order, at full size (the size that is timed):
{task.prompt_signature("full")}
Output (shape and dtype must match exactly):
{_describe_outputs(task, "full")}

The kernel is also checked for correctness at a smaller size, so it must handle these shapes too:
{task.prompt_signature("small")}

## Kernel contract
- Define `kernel({", ".join(s.name.lower() for s in task.input_specs("full"))})`: a function taking the
  inputs positionally and returning the output(s) with exactly the reference's shapes and dtypes.
- Set `TARGET = "{target}"` at module level.
- Import only jax, numpy and the standard math helpers (functools, math); for Pallas:
{IMPORTS[target]}
- Do the hot path (the bulk of the FLOPs and memory traffic) inside `pl.pallas_call`; small glue
  (reshapes, casts) may stay in jnp.
- Never pass `interpret=` to pallas_call and never read or patch JAX's config: the harness decides
  how the kernel runs.
- Accumulate in float32 where the reference does; results are compared against a float32 ground
  truth with atol={task.atol:g}, rtol={task.rtol:g}."""


@cache
def docs_block(target: str) -> str:
    """The documentation pack for a target: hardware, Pallas API, a worked example, rules."""
    parts = []
    for name in DOC_FILES:
        text = (DOCS_DIR / f"{name.format(t=target)}.md").read_text()
        parts.append(DOCS_HEADER.sub("", text).strip())
    return "# Reference documentation\n\n" + "\n\n".join(parts)


def docs_versions() -> dict[str, str]:
    """The JAX version each docs file says it describes (file name -> version)."""
    versions = {}
    for path in sorted(DOCS_DIR.glob("*.md")):
        match = DOCS_HEADER.match(path.read_text())
        versions[path.name] = match.group(1) if match else ""
    return versions


def describe_verdict(result: dict[str, Any]) -> str:
    """An evaluation result as feedback: what failed and where, or how fast it was."""
    status, stage = result.get("status"), result.get("stage")
    message = (result.get("message") or "").strip()
    if len(message) > 1500:
        message = message[:1500] + " ..."
    if status == "correct":
        lines = ["Verdict: correct"]
        if result.get("max_abs_err") is not None:
            lines[0] += f" (max abs error {result['max_abs_err']:.3g})"
        if result.get("speedup") is not None:
            lines.append(f"Timing: reference {result['t_ref_ms']:.4g} ms, kernel "
                         f"{result['t_kernel_ms']:.4g} ms, speedup {result['speedup']:.3f}x over XLA.")
        else:
            lines.append("Timing: not measured (no accelerator; correctness checked in interpret mode).")
        return "\n".join(lines)
    lines = [f"Verdict: {status} (failed at the {stage} stage)"]
    if message:
        lines.append(f"Message: {message}")
    if status == "incorrect" and result.get("max_abs_err") is not None:
        rel = result.get("rel_err") or 0.0
        lines.append(f"Max abs error {result['max_abs_err']:.3g}, relative error {rel:.3g}.")
    return "\n".join(lines)


_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)


def extract_code(text: str) -> str:
    """The last ```python block of an answer (else the last block, else the whole text)."""
    blocks = _FENCE.findall(text)
    python = [body for lang, body in blocks if lang.lower() in ("python", "py")]
    if python:
        return python[-1].strip() + "\n"
    if blocks:
        return blocks[-1][1].strip() + "\n"
    return text.strip() + "\n"
