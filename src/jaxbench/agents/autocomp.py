"""``autocomp``: Autocomp's plan-then-implement beam search (Hong et al., "Autocomp:
LLM-driven code optimization for tensor accelerators", arXiv 2505.18574), as its authors'
code (github.com/ucb-bar/autocomp) runs it.

Every round (a *phase*), for each kernel in the beam:

- ``plans`` planning calls. Each sees the task, the kernel with its verdict, the history
  of its ancestors (each step's plan and the measurement it led to), the phase it is in
  ("phase i of N"), and a strategy menu: the translation menu while the kernel is being
  translated (shown whole), else the optimization menu for the target with every option
  dropped at random (``menu_dropout``, the probability of *dropping* an option; Autocomp's
  ``dropout_menu_options`` is the probability of keeping one) independently per plan. It is
  asked to choose exactly one option or, in optimization phases, now and then
  (``invent_probability``) to invent a new optimization inspired by, or different from, the
  menu. Planning calls are extra LLM calls: recorded (``kind: "plan"``) and reported with
  their cost, never counted in the budget. Dropout applies to planning prompts only:
  implementation prompts carry no menu.
- ``implementations`` implementation calls per plan, each one evaluated candidate (the
  budget counts these); each also says which phase it is in.

Every kernel shown (the current kernel, its ancestors) carries its measurement line:
status, the error in short, and on a device the speedup and roofline fraction
(:func:`jaxbench.agents.prompts.measurement_line`).

**Phases.** ``rounds=0`` (the default) runs rounds until the budget is spent; N is then the
number of rounds the remaining budget pays for at full beam width (exact while the beam is
full; it grows when the beam is narrower). ``rounds=R`` stops after R rounds (N = R), even
with budget left. ``translate_rounds=0`` (the default) translates each kernel until it is
correct and optimizes it after: a beam entry without a correct kernel (at first the
reference) gets the translation menu, a correct one the optimization menu. ``translate_rounds=T``
follows Autocomp's ``translate_iters``: the first T rounds are translation phases for every
beam entry (the translation menu; a child may be up to ``translate_threshold`` times slower
than its parent; the reference keeps a beam slot until the last translation round, as
Autocomp keeps its original program), the rest optimization phases.

**The beam.** Only children that compile and are correct enter the beam (Autocomp drops
every candidate that fails or is wrong), and only when they beat their parent: faster than
the parent, or, for the first kernels (whose parent is the reference, i.e. XLA), at most
``translate_threshold`` times slower than XLA. Until a correct kernel exists the beam is
the reference, so every round translates it afresh. The beam keeps the ``beam_width`` best
of the improving children and the current beam, one child per (parent, plan), distinct
code. ``translate_progress=true`` restores this harness's earlier rule: while no correct
kernel exists, a failing child that gets further than its parent (compile error ->
incorrect, say) also enters the beam, and any kernel may replace the reference, so the
search repairs its failures the way ``iterative`` does instead of starting over. It is off
by default because it is not Autocomp's rule: a beam of failing kernels can crowd out
fresh translations.

**Ranking.** On a device the beam is ranked by measured speedup. In interpret mode nothing
is timed, so it is ranked by correctness, then by an estimate of cost from the evaluator's
structure figures: the share of the task's FLOPs left to XLA outside kernels, then the
number of pallas_calls (fewer HBM round trips), lower first; a correct child beats a
correct parent only with a strictly lower estimate (in the fixed translation rounds any
correct child may enter, as may the first kernels). Kernels without structure figures rank
last. The run's ``task_done`` event records the ranking used (``beam_ranking``) and the
beam rule (``beam_rule``).

**Presets.** ``preset=paper`` runs the paper's 4 + 4 rounds: 4 translation rounds, then 4
optimization rounds (``rounds=8 translate_rounds=4``; in Autocomp's terms ``iterations=8``
with ``translate_iters=4``), with the other search values of the authors' ``run_search.py``:
a beam of 4, 4 plans per beam entry and 2 implementations per plan (up to 32 candidates a
round, at most 232 for the 8 rounds), menu options kept with probability 0.25
(``menu_dropout=0.75``) and translations kept up to 15 times slower than their parent
(``translate_threshold=15``). Options given beside a preset override its values. The
budget still caps the run: with fewer than 232 samples it ends in an earlier round.

Randomness (menu dropout, prompt variants) is seeded from the task, round, parent and
plan, so a resumed run makes the same choices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Any

from jaxbench.agents.base import Candidate, Context, Method, register_method
from jaxbench.agents.iterative import attempt_section
from jaxbench.agents.prompts import measurement_line
from jaxbench.contract import FIELD_OUTSIDE_FLOPS, status_rank

TRANSLATION_MENU = {
    "tpu": (
        "Write one pallas_call for the whole operator: tile the output over a grid, one output "
        "block per grid step.",
        "Put the reduction axis last in the grid, marked 'arbitrary', with a float32 VMEM scratch "
        "accumulator set at the first step and written out at the last.",
        "Choose block shapes whose last two dimensions divide into (8, 128) tiles or equal the "
        "array's dimensions, at every size of the task.",
        "Fuse the element-wise prologue and epilogue into the kernel.",
        "Split the work into two pallas_calls when one pass cannot see all the data it needs "
        "(statistics first, then apply).",
        "Move the remaining jnp work into the kernel (work outside kernels may be at most 10% of "
        "the FLOPs).",
        "Fix the reported error, changing as little as possible.",
    ),
    "gpu": (
        "Write one pallas_call for the whole operator with "
        "compiler_params=plgpu.CompilerParams(...): tile the output over a grid of programs, one "
        "output tile per program.",
        "Loop over the reduction dimension inside the kernel (jax.lax.fori_loop with a float32 "
        "carry): programs run in parallel in any order, so no grid axis may reduce.",
        "Use power-of-two tiles of at most 2^20 elements; mask (plgpu.load/store with mask=) or "
        "pad where a dimension is not a multiple of the tile.",
        "Fuse the element-wise prologue and epilogue into the kernel.",
        "Split the work into two pallas_calls when one pass cannot see all the data it needs "
        "(statistics first, then apply).",
        "Move the remaining jnp work into the kernel (work outside kernels may be at most 10% of "
        "the FLOPs).",
        "Fix the reported error, changing as little as possible.",
    ),
}
OPTIMIZATION_MENU = {
    "tpu": (
        "Larger blocks: fewer grid steps (each costs ~0.35 us) and fewer HBM re-reads, within the "
        "scoped VMEM limit (raise vmem_limit_bytes in pltpu.CompilerParams when needed).",
        "Reorder the grid so that the reused operand's block index stays constant along the "
        "innermost axis (consecutive steps with the same block skip its copy).",
        "Keep intermediates in VMEM: fuse more of the computation into one kernel to save HBM "
        "round trips.",
        "MXU-friendly matmul blocks: dimensions that are multiples of 128 (256 on v6e).",
        "Mark the independent grid axes 'parallel' in dimension_semantics (two TensorCores on "
        "v5p and v4).",
        "Single-buffer an input whose block never changes (pipeline_mode=pl.Buffered(1)) to free "
        "VMEM for larger blocks of the others.",
        "Skip fully masked blocks (causal, ragged) with pl.when, and clamp index maps so skipped "
        "steps revisit the previous block (no copy).",
        "One-pass algorithms: online softmax with a running max and sum, streaming statistics; "
        "divide once after the reduction.",
        "Hoist loop-invariant work out of the grid loop and inner loops; do not rematerialise "
        "intermediates.",
        "Avoid transposes and relayouts: contract with jax.lax.dot_general dimension numbers "
        "instead of .T, and keep the long dimension last (lanes).",
        "Do elementwise math in float32 on loaded values and matmuls on bf16 operands with "
        "float32 accumulation; cast once at the end.",
        "Scalar prefetch (pltpu.PrefetchScalarGridSpec) for data-dependent block indices.",
        "Manual DMA (memory_space=pl.ANY with pltpu.make_async_copy) to overlap irregular copies "
        "with compute.",
        "Simplify or remove unnecessary code.",
    ),
    "gpu": (
        "Retune the tiles: 64-256 power-of-two tiles for dots, larger tiles for memory-bound "
        "kernels, within registers and shared memory.",
        "Retune num_warps (4 for 64x64 to 128x128 tiles, 8 for larger) and num_stages (2-4 "
        "pipeline stages of the loop over K).",
        "Grouped program order: remap program ids so neighbouring programs share rows of A and "
        "columns of B in L2.",
        "Launch enough programs to fill every SM (two to four per SM).",
        "Keep intermediates in registers: fuse more of the computation into one kernel to save "
        "HBM round trips.",
        "One-pass algorithms: online softmax with a running max and sum, Welford statistics; "
        "divide once after the reduction.",
        "Skip fully masked tiles (causal, ragged) with tighter loop bounds.",
        "Feed the tensor cores bf16 operands with float32 accumulation "
        "(preferred_element_type=jnp.float32) where the reference's precision allows.",
        "Hoist loads of reused operands and loop-invariant work out of the loop over K.",
        "Mask only the edge tiles; keep interior loads and stores unmasked.",
        "Simplify or remove unnecessary code.",
    ),
}
INVENT_INSPIRED = ("Invent a new optimization inspired by the strategies above, apply it to this "
                   "kernel, and explain how it will improve performance.")
INVENT_DIFFERENT = ("Think of a new optimization different from the strategies above, apply it to "
                    "this kernel, and explain how it will improve performance.")
CHOOSE_ONE = ("Choose exactly one of the strategies above that addresses the inefficiencies of "
              "this kernel, and plan how to apply it.")


PRESETS: dict[str, dict[str, bool | int | float | str]] = {  # name -> option values
    # The paper's 4 + 4 rounds (translate_iters=4 of iterations=8) with run_search.py's
    # beam_size=4, num_plan_candidates=4, num_code_candidates=2, dropout_menu_options=0.25
    # (the probability of keeping an option) and translate_perf_threshold=15.
    "paper": {"beam_width": 4, "plans": 4, "implementations": 2, "rounds": 8,
              "translate_rounds": 4, "menu_dropout": 0.75, "translate_threshold": 15.0},
}
BEAM_RANKING = {
    "device": "speedup (device)",
    "interpret": ("correctness, then estimated cost: share of FLOPs outside kernels, then "
                  "pallas_call count (interpret mode)"),
}


def estimated_cost(candidate: Candidate) -> tuple[float, float]:
    """(share of the task's FLOPs outside kernels, pallas_call count), lower is cheaper: what
    the evaluator's structure figures say about a kernel without timings. Infinite when it
    reported none."""
    structure = candidate.result.structure or {}
    calls, outside = structure.get("kernel_calls"), structure.get(FIELD_OUTSIDE_FLOPS)
    if calls is None or outside is None:
        return (math.inf, math.inf)
    task_flops = structure.get("task_flops") or 0
    share = outside / task_flops if task_flops else float(outside > 0)
    return (float(share), float(calls))


def interpret_rank(candidate: Candidate) -> tuple[float, float, float]:
    """Sort key without timings, higher is better: status, then the lower estimated cost."""
    share, calls = estimated_cost(candidate)
    return (status_rank(candidate.status), -share, -calls)


@dataclass
class Node:
    """A kernel in the search tree: its candidate, the plan that made it and its parent."""

    candidate: Candidate
    plan: str
    parent: Node | None
    plan_key: str  # (parent step, plan step): one child per plan enters the beam


@dataclass
class Job:
    """One planning call of a round and the implementation slots it pays for."""

    parent: Node | None
    step: str
    menu: list[str]
    instruction: str
    slots: list[int]
    translating: bool
    phase: str


def _history(node: Node | None) -> list[Node]:
    chain = []
    while node is not None:
        chain.append(node)
        node = node.parent
    return chain[::-1]


@register_method("autocomp")
class Autocomp(Method):
    defaults = {"beam_width": 4, "plans": 4, "implementations": 2, "menu_dropout": 0.25,
                "translate_threshold": 1.2, "invent_probability": 0.2, "rounds": 0,
                "translate_rounds": 0, "translate_progress": False, "preset": ""}

    def __init__(self, **options: Any) -> None:
        preset = str(options.get("preset") or "")
        if preset not in PRESETS and preset != "":
            raise ValueError(f"option preset={preset!r}: use one of {', '.join(sorted(PRESETS))}")
        super().__init__(**{**PRESETS.get(preset, {}), **options})  # explicit options win

    def check_options(self) -> None:
        for name in ("beam_width", "plans", "implementations"):
            if self.options[name] < 1:
                raise ValueError(f"option {name} must be at least 1")
        if not 0 <= self.menu_dropout < 1:
            raise ValueError("option menu_dropout must be in [0, 1)")
        if self.translate_threshold < 1:
            raise ValueError("option translate_threshold must be at least 1")
        if self.rounds < 0 or self.translate_rounds < 0:
            raise ValueError("options rounds and translate_rounds must be 0 or more")
        if self.rounds and self.translate_rounds > self.rounds:
            raise ValueError("option translate_rounds must not exceed rounds")

    def summary(self, ctx: Context) -> dict[str, int | float | str]:
        rule = ("correct kernels only" if not self.translate_progress else
                "correct kernels, and while none is, failing kernels that get further")
        return {"beam_ranking": BEAM_RANKING["device" if ctx.mode == "device" else "interpret"],
                "beam_rule": rule}

    # -- the loop -------------------------------------------------------------------------------

    def translation_round(self, round_no: int) -> bool:
        """Whether ``round_no`` is one of the fixed translation rounds (``translate_rounds``)."""
        return round_no < self.translate_rounds

    def run(self, ctx: Context) -> None:
        timed = ctx.mode == "device"
        beam: list[Node | None] = [None]  # None: the reference, before any kernel exists
        round_no = 0
        while ctx.budget.remaining > 0 and (not self.rounds or round_no < self.rounds):
            jobs = self.round_jobs(ctx, beam, round_no)
            if not jobs:
                break
            plans = ctx.map(partial(self.plan, ctx), jobs)
            impls = [(job, plan, f"{job.step}/impl{j}", slot)
                     for job, plan in zip(jobs, plans, strict=True)
                     for j, slot in enumerate(job.slots)]
            children = ctx.map(partial(self.implement_item, ctx), impls)
            nodes = [Node(child, plan, job.parent,
                          f"{job.parent.candidate.step if job.parent else 'ref'}|{job.step}")
                     for (job, plan, _, _), child in zip(impls, children, strict=True)]
            translating = self.translation_round(round_no)
            beam = self.select(beam, nodes, timed=timed, translating=translating,
                               keep_reference=translating and round_no + 1 < self.translate_rounds)
            round_no += 1

    def phase_count(self, round_no: int, remaining: int) -> int:
        """N of "phase i of N": ``rounds``, or the rounds the budget left after this round's
        slots pays for at full beam width."""
        if self.rounds:
            return self.rounds
        full = self.beam_width * self.plans * self.implementations
        return round_no + 1 + -(-remaining // full)

    def phase_text(self, number: int, count: int, translating: bool) -> str:
        kind = "translation" if translating else "optimization"
        text = f"This is phase {number} of {count} of the search: {kind}"
        if self.translate_rounds:
            last = min(self.translate_rounds, count)
            text += f" (phases 1-{last} translate the reference into a correct Pallas kernel"
            text += f", phases {last + 1}-{count} optimize it)." if last < count else ")."
        else:
            text += " (each kernel is translated until it is correct, then optimized)."
        return text

    def round_jobs(self, ctx: Context, beam: list[Node | None], round_no: int) -> list[Job]:
        """The round's planning calls, ``plans`` per beam entry; the budget goes to plans in beam
        order, ``implementations`` slots each, until it runs out."""
        taken: list[tuple[int, Node | None, int, list[int]]] = []
        for p, parent in enumerate(beam):
            for k in range(self.plans):
                slots = ctx.budget.take(self.implementations)
                if not slots:
                    break
                taken.append((p, parent, k, slots))
        count = self.phase_count(round_no, ctx.budget.remaining)
        jobs = []
        for p, parent, k, slots in taken:
            step = f"round{round_no}/p{p}/plan{k}"
            translating = (self.translation_round(round_no) or parent is None
                           or not parent.candidate.correct)
            instruction = CHOOSE_ONE
            if translating:  # Autocomp shows the translation menu whole
                menu = list(TRANSLATION_MENU[ctx.target])
            else:  # dropout: the optimization menu at planning, per plan, seeded by its step
                rng = ctx.rng(step)
                options = OPTIMIZATION_MENU[ctx.target]
                menu = [m for m in options if rng.random() >= self.menu_dropout] or [rng.choice(options)]
                draw = rng.random()
                if draw < self.invent_probability / 2:
                    instruction = INVENT_INSPIRED
                elif draw < self.invent_probability:
                    instruction = INVENT_DIFFERENT
            jobs.append(Job(parent, step, menu, instruction, slots, translating,
                            self.phase_text(round_no + 1, count, translating)))
        return jobs

    # -- prompts ----------------------------------------------------------------------------------

    def plan(self, ctx: Context, job: Job) -> str:
        sections = []
        parent = job.parent
        history = _history(parent)
        if len(history) > 1:
            lines = ["## History of this kernel (its ancestors, oldest first)"]
            for i, node in enumerate(history[:-1]):
                lines.append(f"{i + 1}. Plan: {node.plan.strip()[:1200]}\n"
                             f"   Measured: {measurement_line(node.candidate.result)}")
            sections.append("\n".join(lines))
        if parent is not None:
            if parent.plan:
                sections.append(f"## The plan that produced the current kernel\n{parent.plan.strip()}")
            sections.append(attempt_section("Current kernel", parent.candidate))
            goal = ("Goal: make this correct kernel faster while keeping it correct." if
                    parent.candidate.correct and not job.translating else
                    "Goal: bring more of the computation into Pallas while keeping it correct."
                    if parent.candidate.correct else "Goal: turn this kernel into a correct one.")
        else:
            goal = "Goal: a correct Pallas kernel for the reference (there is no kernel yet)."
        options = "\n".join(f"{i + 1}. {item}" for i, item in enumerate(job.menu))
        sections += [job.phase, goal, f"## Strategies\n{options}", job.instruction,
                     "Write a short, concrete plan specific to this code (at most 10 bullet points: "
                     "block sizes, grid, what moves where). Limit the plan to the chosen "
                     "optimization and keep the kernel correct. Do not write the kernel yet."]
        return ctx.ask(job.step, ctx.prompt(*sections, answer=False), kind="plan")

    def implement_item(self, ctx: Context, item: tuple[Job, str, str, int]) -> Candidate:
        job, plan, step, slot = item
        return self.implement(ctx, job, plan, step, slot)

    def implement(self, ctx: Context, job: Job, plan: str, step: str, slot: int) -> Candidate:
        parent = job.parent
        sections = []
        if parent is not None:
            sections.append(attempt_section("Current kernel", parent.candidate))
        sections += [job.phase,
                     f"## Plan\n{plan.strip() or '(the planning call returned nothing)'}",
                     "Implement this plan" + (" on the current kernel." if parent else ".")]
        return ctx.propose(step, ctx.prompt(*sections), slot,
                           parent=parent.candidate if parent else None,
                           origin="translate" if job.translating else "optimize",
                           extra={"plan_step": job.step})

    # -- the beam ---------------------------------------------------------------------------------

    def beats(self, child: Candidate, parent: Node | None, *, timed: bool = True,
              translating: bool = False) -> bool:
        """Whether ``child`` may enter the beam in place of its parent. ``timed``: device mode
        (speedups); ``translating``: one of the fixed translation rounds."""
        if not child.correct:  # Autocomp: only compiling, correct kernels
            if not self.translate_progress:
                return False
            if parent is None:
                return True  # nothing better exists yet: any kernel is a start
            return not parent.candidate.correct and child.fitness()[0] > parent.candidate.fitness()[0]
        if parent is None:  # the reference: the first kernels, held to XLA's speed
            return (not timed or child.speedup is None
                    or child.speedup >= 1 / self.translate_threshold)
        if not parent.candidate.correct:  # only with translate_progress: the first correct one
            return True
        if not timed:  # no speedups: the estimate must drop (any correct child while translating)
            return translating or estimated_cost(child) < estimated_cost(parent.candidate)
        if child.speedup is None or parent.candidate.speedup is None:
            return False
        factor = self.translate_threshold if translating else 1.0
        return child.speedup * factor > parent.candidate.speedup

    def select(self, beam: list[Node | None], children: list[Node], *, timed: bool = True,
               translating: bool = False, keep_reference: bool = False) -> list[Node | None]:
        """The next beam: the best of the improving children and the current beam, one child
        per (parent, plan), distinct code; correct kernels only once there are any. With
        ``keep_reference`` the reference keeps a slot the kernels leave free."""
        improving = [n for n in children
                     if self.beats(n.candidate, n.parent, timed=timed, translating=translating)]
        pool = improving + [n for n in beam if n is not None]
        if not pool:
            return beam
        if any(n.candidate.correct for n in pool):
            pool = [n for n in pool if n.candidate.correct]
        if timed:
            ranked = sorted(pool, key=lambda n: n.candidate.fitness(), reverse=True)
        else:
            ranked = sorted(pool, key=lambda n: interpret_rank(n.candidate), reverse=True)
        kept: list[Node | None] = []
        codes: set[str] = set()
        plans: set[str] = set()
        for node in ranked:
            if node.candidate.code in codes or node.plan_key in plans:
                continue
            codes.add(node.candidate.code)
            plans.add(node.plan_key)
            kept.append(node)
            if len(kept) == self.beam_width:
                break
        if keep_reference and None in beam and len(kept) < self.beam_width:
            kept.append(None)
        return kept
