"""The documentation pack (``--docs``): sections chosen per prompt, the paper's "targeted
documentation".

Each section is one Markdown file of ``agents/docs/`` for one or both targets. A few are
always given for the target (hardware, the Pallas API, the backend's rules, common
mistakes); the others are chosen from two sources only, never from the harness's own words:

- the task: what its reference computes (GELU needs ``erf``, attention needs online
  softmax, ragged inputs need scalar prefetch) and its shapes (edge blocks when a
  dimension does not divide into tiles). These are the same for every call of a task, so
  they go with the fixed sections into the prompt's fixed prefix (:func:`for_task`);
- the evaluator's error messages that the prompt shows (a failed evaluation's
  ``message``, with any of the candidate's own lines it quotes taken out): a VMEM
  overflow brings the VMEM section, a Triton size error the size rules
  (:func:`for_errors`). These vary per call and go after the method's sections.

The feedback wording the harness writes around an error (verdict lines, memory facts,
grids and blocks) and the candidate's code are never matched, so a ``reshape`` in a
wrapper or the word "VMEM" in a memory fact selects nothing. Every prompt records the
sections it carried.

Every code block in the pack is executed by the tests (``tests/test_agents_docs.py``): in
interpret mode and cross-lowered for its target with the installed JAX, so advice that JAX
refuses fails CI. Each file's first line names the JAX version it was proven at.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

from jaxbench.agents.prompts import uses_erf
from jaxbench.contract import RULES, EvaluationResult, Rule
from jaxbench.tasks import Task


class Judged(Protocol):
    """A judged sample as :func:`shown_failures` reads it (an agent's ``Candidate``)."""

    result: EvaluationResult
    code: str

    @property
    def correct(self) -> bool: ...

DOCS_DIR = Path(__file__).parent / "docs"
DOCS_HEADER = re.compile(r"<!-- jaxbench-docs: describes JAX (\S+)[^>]*-->\n?")
CHECK_COMMENT = re.compile(r"\n?<!-- check(?:\s[^\n]*)?\n.*?-->\n?", re.DOTALL)
MAX_CHOSEN = 5  # sections chosen by the task, on top of the target's fixed ones
MAX_BY_ERRORS = 2  # sections chosen by the errors a prompt shows, on top of those
TASK_DOCS_TITLE = "# Reference documentation"
ERROR_DOCS_TITLE = "# Reference documentation for the errors above"


@dataclass(frozen=True)
class Section:
    """One docs file. ``file`` may hold ``{t}`` (the target). ``rules``: the rule codes of
    failures it explains (the evaluator's own checks). ``reference`` and ``errors`` are
    regular expressions matched against the task's reference source and against the words of
    a compiler's or JAX's own diagnosis (failures coded :data:`DIAGNOSED`, never the
    evaluator's messages); ``shapes`` is a test on the task (its shapes, or what its
    reference computes)."""

    name: str
    file: str
    targets: tuple[str, ...] = ("tpu", "gpu")
    always: bool = False
    reference: str = ""
    errors: str = ""
    shapes: Callable[[Task], bool] | None = None
    rules: frozenset[Rule] = frozenset()

    def path(self, target: str) -> Path:
        return DOCS_DIR / f"{self.file.format(t=target)}.md"


def _ragged_tpu_dims(task: Task) -> bool:
    """Some input's last two dimensions do not divide into (8, 128) tiles at some size."""
    for size in task.sizes:
        for spec in task.input_specs(size):
            dims = spec.shape[-2:]
            if len(dims) == 2 and (dims[0] % 8 or dims[1] % 128):
                return True
            if len(dims) == 1 and dims[0] % 128:
                return True
    return False


def _not_power_of_two(task: Task) -> bool:
    for size in task.sizes:
        for spec in task.input_specs(size):
            if any(d & (d - 1) for d in spec.shape if d > 0):
                return True
    return False


# The ``errors`` patterns name what compilers and the evaluator say when a kernel breaks a
# rule, not the operations in general: "reshapes" in the evaluator's note that glue may stay
# in jnp is no reshape error.
_UNSUPPORTED = r"(?:not supported|unsupported|not implemented|cannot|can't|failed to)"
SECTIONS: tuple[Section, ...] = (
    Section("hardware", "hardware_{t}", always=True),
    Section("pallas_api", "pallas_api", always=True),
    Section("pallas_tpu", "pallas_tpu", ("tpu",), always=True),
    Section("pallas_gpu", "pallas_gpu", ("gpu",), always=True),
    Section("triton_sizes", "triton_sizes", ("gpu",), always=True),
    Section("rules", "rules_{t}", always=True),
    Section("erf_gelu", "erf_gelu_{t}", shapes=uses_erf, errors=r"\berfc?(?:_p)?\b"),
    Section("edge_blocks_tpu", "edge_blocks_tpu", ("tpu",), shapes=_ragged_tpu_dims,
            errors=r"divisible by|block shape|out of bounds|\bedge block",
            rules=frozenset({Rule.BLOCK_SHAPE})),
    Section("vmem_tpu", "vmem_tpu", ("tpu",), reference=r"matmul|einsum|attention|dot|conv",
            errors=r"VMEM|vmem|scoped|RESOURCE_EXHAUSTED|memory budget",
            rules=frozenset({Rule.VMEM_BUDGET})),
    Section("reshape_tpu", "reshape_tpu", ("tpu",),
            reference=r"reshape|transpose|swapaxes|moveaxis|\.T\b|einsum|rearrange",
            errors=(r"shape_cast|shape cast|relayout|\blayout|vector\.transpose"
                    rf"|{_UNSUPPORTED}[^\n]{{0,80}}\b(?:reshape|transpose)"
                    rf"|\b(?:reshape|transpose)[^\n]{{0,80}}{_UNSUPPORTED}")),
    Section("prefetch_tpu", "prefetch_tpu", ("tpu",),
            reference=r"page|indices|gather|\btake\b|ragged|group|top_k|argsort|segment|cu_q",
            errors=r"PrefetchScalarGridSpec|scalar prefetch|SMEM|data-dependent"),
    Section("softmax", "softmax_{t}", reference=r"softmax|logsumexp|attention",
            errors=r"softmax|logsumexp|running max"),
    Section("example_matmul", "example_{t}", reference=r"matmul|linear|einsum|\bdot\b|conv|bmm",
            errors=r"dot_general|MXU|tensor core"),
    Section("edge_masks_gpu", "edge_masks_gpu", ("gpu",), shapes=_not_power_of_two,
            errors=r"power of 2|power-of-two|edge_mask|\bmask|out of bounds",
            rules=frozenset({Rule.TRITON_RULE})),
)


def sections_for(target: str) -> list[Section]:
    return [s for s in SECTIONS if target in s.targets]


def for_task(task: Task, target: str, reference: str) -> list[Section]:
    """The sections every prompt of ``task`` carries: the target's fixed ones, then those the
    task's operators (its reference source) and shapes call for, at most ``MAX_CHOSEN``.
    The same for every call of the task, so they belong in the prompt's fixed prefix."""
    fixed = [s for s in sections_for(target) if s.always]
    chosen = [s for s in sections_for(target) if not s.always and (
        (s.reference and re.search(s.reference, reference))
        or (s.shapes is not None and s.shapes(task)))]
    return fixed + chosen[:MAX_CHOSEN]


# Failures whose message is a compiler's or JAX's own diagnosis (lowering, tracing, running):
# there, the diagnosis' words pick the section. Every other failure picks by its code alone.
DIAGNOSED = frozenset({Rule.LOWERING, Rule.TRACE_ERROR, Rule.OTHER_SIZE_TRACE_ERROR,
                       Rule.RUNTIME, Rule.TRITON_COMPILE})


def for_errors(target: str, errors: Iterable[str | tuple[str | None, str]],
               given: Iterable[Section] = ()) -> list[Section]:
    """The sections the failures shown in a prompt call for that ``given`` does not hold (at
    most ``MAX_BY_ERRORS``). Each failure is ``(rule, message)``, or a bare message (a
    diagnosis: rule unknown). A section is chosen by the failure's rule code; the message's
    words count only where the code says they are a compiler's or JAX's own diagnosis
    (:data:`DIAGNOSED`), never the evaluator's wording of its own checks. ``message`` is the
    evaluator's text without the candidate's lines (:func:`evaluator_text`), never the
    harness's feedback around it."""
    pairs = [(None, e) if isinstance(e, str) else e for e in errors]
    rules = {rule for rule, _ in pairs if rule in RULES}
    text = "\n".join(m for rule, m in pairs if m and (rule is None or rule in DIAGNOSED))
    held = {s.name for s in given}
    return [s for s in sections_for(target) if not s.always and s.name not in held and (
        rules & s.rules or (s.errors and text.strip() and re.search(s.errors, text)))
        ][:MAX_BY_ERRORS]


def select(task: Task, target: str, reference: str,
           errors: str | Iterable[str | tuple[str | None, str]] = ()) -> list[Section]:
    """All the sections of one prompt: :func:`for_task`, then :func:`for_errors` for the
    evaluator's error messages ``errors`` (one string or several)."""
    task_sections = for_task(task, target, reference)
    messages = [errors] if isinstance(errors, str) else list(errors)
    return task_sections + for_errors(target, messages, task_sections)


def shown_failures(candidates: Iterable[Judged],
                   sections: Iterable[str]) -> list[tuple[str | None, str]]:
    """The failures that ``sections`` show, as ``(rule, message)``: of the failed candidates
    judged by the evaluator, those whose message's first line (its first 120 characters)
    appears there, each message without the lines of the candidate's code it quotes
    (:func:`evaluator_text`)."""
    text = "\n".join(sections)
    if not text:
        return []
    found: dict[tuple[str | None, str], None] = {}
    for candidate in candidates:
        message = (candidate.result.message or "").strip()
        if candidate.correct or not message or candidate.result.synthetic:
            continue  # a synthetic verdict (no kernel, a failed call) is the harness's text
        first = message.splitlines()[0].strip()[:120]  # shown whole or cut short
        if first and first in text:
            found.setdefault((candidate.result.rule,
                              evaluator_text(message, candidate.code)), None)
    return list(found)


def evaluator_text(message: str, code: str = "") -> str:
    """An evaluation's error message without the candidate's own lines it may quote (a
    traceback's source line, ``at <kernel>:4: y = x.reshape(5, 7)``): what the compiler or
    the evaluator said, not what the candidate wrote."""
    text = message or ""
    lines = sorted({ln.strip() for ln in code.splitlines() if len(ln.strip()) >= 8}, key=len, reverse=True)
    for line in lines:
        if line in text:
            text = text.replace(line, " ")
    return text


@cache
def section_text(name: str, target: str) -> str:
    """A section as the model sees it: without the version header and the test comments."""
    section = next(s for s in SECTIONS if s.name == name)
    text = section.path(target).read_text()
    text = CHECK_COMMENT.sub("\n", DOCS_HEADER.sub("", text))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def render(sections: list[Section], target: str, title: str = TASK_DOCS_TITLE) -> str:
    return f"{title}\n\n" + "\n\n".join(section_text(s.name, target) for s in sections)


def docs_files() -> list[Path]:
    return sorted(DOCS_DIR.glob("*.md"))


DOCS_CHECKED = re.compile(r"snippets checked on JAX ([\d.]+(?:, [\d.]+)*)")


def docs_checked_versions() -> dict[str, set[str]]:
    """The JAX versions each docs file's snippets were run and cross-lowered on (file name ->
    versions); tests/test_agents_docs.py runs them on the installed one."""
    found = {}
    for path in docs_files():
        header = DOCS_HEADER.match(path.read_text())
        checked = DOCS_CHECKED.search(header.group(0)) if header else None
        found[path.name] = set(checked.group(1).split(", ")) if checked else set()
    return found


def docs_versions() -> dict[str, str]:
    """The JAX version each docs file says it describes (file name -> version)."""
    versions = {}
    for path in docs_files():
        match = DOCS_HEADER.match(path.read_text())
        versions[path.name] = match.group(1) if match else ""
    return versions
