"""The documentation pack (``--docs``): sections chosen per prompt, the paper's "targeted
documentation".

Each section is one Markdown file of ``agents/docs/`` for one or both targets. A few are
always given for the target (hardware, the Pallas API, the backend's rules, common
mistakes); the others are chosen by what the task computes (its reference source: GELU
needs ``erf``, attention needs online softmax, ragged inputs need scalar prefetch), by its
shapes (edge blocks when a dimension does not divide into tiles) and by what the prompt
shows the model (the last verdict's error, the kernel being revised): a VMEM overflow
brings the VMEM section, a Triton size error the size rules. Every prompt records the
sections it carried.

Every code block in the pack is executed by the tests (``tests/test_agents_docs.py``): in
interpret mode and cross-lowered for its target with the installed JAX, so advice that JAX
refuses fails CI. Each file's first line names the JAX version it was proven at.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from jaxbench.agents.prompts import uses_erf
from jaxbench.tasks import Task

DOCS_DIR = Path(__file__).parent / "docs"
DOCS_HEADER = re.compile(r"<!-- jaxbench-docs: describes JAX (\S+)[^>]*-->\n?")
CHECK_COMMENT = re.compile(r"\n?<!-- check(?:\s[^\n]*)?\n.*?-->\n?", re.DOTALL)
MAX_CHOSEN = 5  # sections chosen on top of the target's fixed ones


@dataclass(frozen=True)
class Section:
    """One docs file. ``file`` may hold ``{t}`` (the target). ``reference`` and ``feedback``
    are regular expressions matched against the task's reference source and against the
    prompt's method sections (verdicts, kernels); ``shapes`` is a test on the task (its
    shapes, or what its reference computes)."""

    name: str
    file: str
    targets: tuple[str, ...] = ("tpu", "gpu")
    always: bool = False
    reference: str = ""
    feedback: str = ""
    shapes: Callable[[Task], bool] | None = None

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


SECTIONS: tuple[Section, ...] = (
    Section("hardware", "hardware_{t}", always=True),
    Section("pallas_api", "pallas_api", always=True),
    Section("pallas_tpu", "pallas_tpu", ("tpu",), always=True),
    Section("pallas_gpu", "pallas_gpu", ("gpu",), always=True),
    Section("triton_sizes", "triton_sizes", ("gpu",), always=True),
    Section("rules", "rules_{t}", always=True),
    Section("erf_gelu", "erf_gelu_{t}", shapes=uses_erf, feedback=r"\berfc?\b"),
    Section("edge_blocks_tpu", "edge_blocks_tpu", ("tpu",), shapes=_ragged_tpu_dims,
            feedback=r"divisible by|block shape|cdiv|out of bounds|edge"),
    Section("vmem_tpu", "vmem_tpu", ("tpu",), reference=r"matmul|einsum|attention|dot|conv",
            feedback=r"VMEM|vmem|scoped|RESOURCE_EXHAUSTED|memory budget"),
    Section("reshape_tpu", "reshape_tpu", ("tpu",),
            reference=r"reshape|transpose|swapaxes|moveaxis|\.T\b|einsum|rearrange",
            feedback=r"reshape|transpose|shape_cast|relayout|layout"),
    Section("prefetch_tpu", "prefetch_tpu", ("tpu",),
            reference=r"page|indices|gather|\btake\b|ragged|group|top_k|argsort|segment|cu_q",
            feedback=r"PrefetchScalarGridSpec|scalar prefetch|SMEM|data-dependent"),
    Section("softmax", "softmax_{t}", reference=r"softmax|logsumexp|attention",
            feedback=r"softmax|logsumexp|running max"),
    Section("example_matmul", "example_{t}", reference=r"matmul|linear|einsum|\bdot\b|conv|bmm",
            feedback=r"dot_general|MXU|tensor core|matmul"),
    Section("edge_masks_gpu", "edge_masks_gpu", ("gpu",), shapes=_not_power_of_two,
            feedback=r"power of 2|power-of-two|edge_mask|mask|out of bounds"),
)


def sections_for(target: str) -> list[Section]:
    return [s for s in SECTIONS if target in s.targets]


def select(task: Task, target: str, reference: str, feedback: str = "") -> list[Section]:
    """The sections for one prompt: the target's fixed ones, then those the feedback calls
    for, then those the task's operators and shapes call for (at most ``MAX_CHOSEN``)."""
    fixed = [s for s in sections_for(target) if s.always]
    by_feedback = [s for s in sections_for(target) if not s.always and s.feedback and feedback
                   and re.search(s.feedback, feedback)]
    by_task = [s for s in sections_for(target) if not s.always and s not in by_feedback and (
        (s.reference and re.search(s.reference, reference))
        or (s.shapes is not None and s.shapes(task)))]
    return fixed + (by_feedback + by_task)[:MAX_CHOSEN]


@cache
def section_text(name: str, target: str) -> str:
    """A section as the model sees it: without the version header and the test comments."""
    section = next(s for s in SECTIONS if s.name == name)
    text = section.path(target).read_text()
    text = CHECK_COMMENT.sub("\n", DOCS_HEADER.sub("", text))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def render(sections: list[Section], target: str) -> str:
    return "# Reference documentation\n\n" + "\n\n".join(section_text(s.name, target) for s in sections)


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
