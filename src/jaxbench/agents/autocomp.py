"""``autocomp``: Autocomp's plan-then-implement beam search (Hong et al., "Autocomp:
LLM-driven code optimization for tensor accelerators"), as its authors' code runs it.

Every round, for each kernel in the beam:

- ``plans`` planning calls. Each sees the task, the kernel with its verdict, the history
  of its ancestors (each step's plan and the verdict it led to), and the strategy menu
  for the target with every option dropped at random (``menu_dropout``) independently
  per plan. It is asked to choose exactly one option, or now and then to invent a new
  optimization inspired by, or different from, the menu. Planning calls are extra LLM
  calls: recorded (``kind: "plan"``) and reported with their cost, never counted in the
  budget.
- ``implementations`` implementation calls per plan, each one evaluated candidate (the
  budget counts these).

Only children that beat their parent enter the beam: correct and faster than the parent
(Autocomp's rule). The first correct kernel is compared with the reference instead: it
may be up to ``translate_threshold`` times slower than XLA, as Autocomp allows while
translating. The beam keeps the ``beam_width`` best of the improving children and the
current beam, one child per (parent, plan). Without timings (interpret mode) a correct
kernel cannot show it beat its parent, so the beam keeps its first correct kernels.

Before a correct kernel exists the menu is the translation menu. Autocomp starts from a
correct program in plain code and translates it; here the start is the task's reference,
and a child that gets further than its parent (from compile error to incorrect, say)
also enters the beam, so translation can take several rounds.

Randomness (menu dropout, prompt variants) is seeded from the task, round, parent and
plan, so a resumed run makes the same choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from jaxbench.agents.base import Candidate, Context, Method, register_method
from jaxbench.agents.iterative import attempt_section
from jaxbench.agents.prompts import describe_verdict

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


@dataclass
class Node:
    """A kernel in the search tree: its candidate, the plan that made it and its parent."""

    candidate: Candidate
    plan: str
    parent: Node | None
    plan_key: str  # (parent step, plan step): one child per plan enters the beam


def _history(node: Node | None) -> list[Node]:
    chain = []
    while node is not None:
        chain.append(node)
        node = node.parent
    return chain[::-1]


@register_method("autocomp")
class Autocomp(Method):
    defaults = {"beam_width": 4, "plans": 4, "implementations": 2, "menu_dropout": 0.25,
                "translate_threshold": 1.2, "invent_probability": 0.2}

    def check_options(self) -> None:
        for name in ("beam_width", "plans", "implementations"):
            if self.options[name] < 1:
                raise ValueError(f"option {name} must be at least 1")
        if not 0 <= self.menu_dropout < 1:
            raise ValueError("option menu_dropout must be in [0, 1)")

    def run(self, ctx: Context) -> None:
        beam: list[Node | None] = [None]  # None: the reference, before any kernel exists
        round_no = 0
        while ctx.budget.remaining > 0:
            translating = not any(n is not None and n.candidate.correct for n in beam)
            jobs = self.round_jobs(ctx, beam, round_no)
            if not jobs:
                break
            plans = ctx.map(lambda job: self.plan(ctx, *job[:4]), jobs)
            impls = [(job, plan, f"{job[1]}/impl{j}", slot)
                     for job, plan in zip(jobs, plans, strict=True)
                     for j, slot in enumerate(job[4])]
            children = ctx.map(partial(self.implement_item, ctx, translating), impls)
            nodes = [Node(child, plan, job[0], f"{job[0].candidate.step if job[0] else 'ref'}|{job[1]}")
                     for (job, plan, _, _), child in zip(impls, children, strict=True)]
            beam = self.select(beam, nodes)
            round_no += 1

    def round_jobs(self, ctx: Context, beam: list[Node | None], round_no: int) -> list[tuple]:
        """(parent, plan step, menu, instruction, slots) per plan of this round; the budget
        goes to plans in beam order, ``implementations`` slots each, until it runs out."""
        jobs = []
        for p, parent in enumerate(beam):
            for k in range(self.plans):
                slots = ctx.budget.take(self.implementations)
                if not slots:
                    return jobs
                step = f"round{round_no}/p{p}/plan{k}"
                rng = ctx.rng(step)
                translating = parent is None or not parent.candidate.correct
                menu = list((TRANSLATION_MENU if translating else OPTIMIZATION_MENU)[ctx.target])
                kept = [m for m in menu if rng.random() >= self.menu_dropout] or [rng.choice(menu)]
                draw = rng.random()
                instruction = CHOOSE_ONE
                if not translating and draw < self.invent_probability / 2:
                    instruction = INVENT_INSPIRED
                elif not translating and draw < self.invent_probability:
                    instruction = INVENT_DIFFERENT
                jobs.append((parent, step, kept, instruction, slots))
        return jobs

    def plan(self, ctx: Context, parent: Node | None, step: str, menu: list[str],
             instruction: str) -> str:
        sections = []
        history = _history(parent)
        if len(history) > 1:
            lines = ["## History of this kernel (its ancestors, oldest first)"]
            for i, node in enumerate(history[:-1]):
                verdict = describe_verdict(node.candidate.result).splitlines()[0]
                lines.append(f"{i + 1}. Plan: {node.plan.strip()[:1200]}\n   Result: {verdict}")
            sections.append("\n".join(lines))
        if parent is not None:
            if parent.plan:
                sections.append(f"## The plan that produced the current kernel\n{parent.plan.strip()}")
            sections.append(attempt_section("Current kernel", parent.candidate))
            goal = ("Goal: make this correct kernel faster while keeping it correct." if
                    parent.candidate.correct else "Goal: turn this kernel into a correct one.")
        else:
            goal = "Goal: a correct Pallas kernel for the reference (there is no kernel yet)."
        options = "\n".join(f"{i + 1}. {item}" for i, item in enumerate(menu))
        sections += [goal, f"## Strategies\n{options}", instruction,
                     "Write a short, concrete plan specific to this code (at most 10 bullet points: "
                     "block sizes, grid, what moves where). Limit the plan to the chosen "
                     "optimization and keep the kernel correct. Do not write the kernel yet."]
        return ctx.ask(step, ctx.prompt(*sections, answer=False), kind="plan")

    def implement_item(self, ctx: Context, translating: bool, item: tuple) -> Candidate:
        job, plan, step, slot = item
        return self.implement(ctx, job[0], plan, step, slot, translating)

    def implement(self, ctx: Context, parent: Node | None, plan: str, step: str, slot: int,
                  translating: bool) -> Candidate:
        sections = []
        if parent is not None:
            sections.append(attempt_section("Current kernel", parent.candidate))
        sections += [f"## Plan\n{plan.strip() or '(the planning call returned nothing)'}",
                     "Implement this plan" + (" on the current kernel." if parent else ".")]
        return ctx.propose(step, ctx.prompt(*sections), slot,
                           parent=parent.candidate if parent else None,
                           origin="translate" if translating else "optimize",
                           extra={"plan_step": step.rsplit("/", 1)[0]})

    def beats(self, child: Candidate, parent: Node | None) -> bool:
        """Whether ``child`` may enter the beam in place of its parent."""
        if parent is None:  # the reference: the first kernels
            if child.correct:
                return child.speedup is None or child.speedup >= 1 / self.translate_threshold
            return True  # nothing better exists yet: any kernel is a start
        if not parent.candidate.correct:
            return child.fitness()[0] > parent.candidate.fitness()[0] or (
                child.correct and not parent.candidate.correct)
        if not child.correct or child.speedup is None or parent.candidate.speedup is None:
            return False
        return child.speedup > parent.candidate.speedup

    def select(self, beam: list[Node | None], children: list[Node]) -> list[Node | None]:
        """The next beam: the best of the improving children and the current beam, one child
        per (parent, plan), distinct code; correct kernels only once there are any."""
        improving = [n for n in children if self.beats(n.candidate, n.parent)]
        pool = improving + [n for n in beam if n is not None]
        if not pool:
            return beam
        if any(n.candidate.correct for n in pool):
            pool = [n for n in pool if n.candidate.correct]
        ranked = sorted(pool, key=lambda n: n.candidate.fitness(), reverse=True)
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
        return kept
