"""``autocomp``: two-stage beam search with plan-then-implement steps.

Translation rounds (at most ``translation_rounds``) run until some kernel is
correct; then ``optimization_rounds`` improve the best ones. Each step is two LLM
calls: one chooses strategies from a menu and writes a plan, the other implements
the plan on the parent kernel. Each round spends ``ceil(remaining budget / rounds
left)`` samples, spread over the beam's ``beam_width`` best kernels.

Budget accounting: the budget counts candidate kernels evaluated (implement calls);
the planning call that precedes each one is an extra LLM call, recorded with its
tokens and cost but not counted as a sample.
"""

from __future__ import annotations

import math

from jaxbench.agents.base import Candidate, Context, Method, best_first, register_method
from jaxbench.agents.iterative import attempt_section

TRANSLATION_MENU = (
    "Tile the output over a grid; each program computes one output block.",
    "Reduce over the reduction dimension as the last grid axis ('arbitrary', TPU) or in a "
    "loop inside the kernel (GPU).",
    "Accumulate in float32 (VMEM scratch on TPU, loop carry on GPU); cast once at the end.",
    "Choose block sizes that divide the shapes at both sizes and follow the target's tiling rules.",
    "Fuse the element-wise prologue/epilogue into the kernel.",
    "Split the work into two pallas_calls when one pass cannot see all the data it needs.",
    "Fix the reported error, changing as little as possible.",
)
OPTIMIZATION_MENU = (
    "Larger blocks: fewer grid steps and fewer HBM re-reads (within VMEM / register limits).",
    "Reorder the grid for reuse: keep the reused operand's block index constant on the inner axis.",
    "Fuse more of the computation into one kernel to save HBM round trips.",
    "Matrix-unit friendly shapes: multiples of 128/256 (TPU MXU), 64-256 power-of-two tiles (GPU).",
    "Parallelism settings: 'parallel' dimension semantics (TPU megacore), num_warps/num_stages (GPU).",
    "Deeper pipelining of streamed inputs: pl.Buffered(3) (TPU) or more num_stages (GPU).",
    "Remove recomputation and redundant casts; keep intermediates in float32 on chip.",
    "Skip fully masked blocks (causal, sparse) with pl.when or tighter loop bounds.",
    "One-pass algorithms: online softmax, streaming statistics.",
    "Scalar prefetch (PrefetchScalarGridSpec) for data-dependent block indices.",
)


@register_method("autocomp")
class Autocomp(Method):
    defaults = {"beam_width": 4, "translation_rounds": 4, "optimization_rounds": 4}

    def run(self, ctx: Context) -> None:
        beam: list[Candidate] = []
        translation_left, optimization_left = self.translation_rounds, self.optimization_rounds
        round_no = 0
        while ctx.budget.remaining > 0:
            translating = not any(c.correct for c in beam) and translation_left > 0
            if not translating and optimization_left == 0:
                break
            rounds_left = (translation_left if translating else 0) + optimization_left
            slots = ctx.budget.take(math.ceil(ctx.budget.remaining / rounds_left))
            parents: list[Candidate | None] = list(beam) or [None]
            stage = "translate" if translating else "optimize"
            jobs = [(f"round{round_no}/{stage}/s{slot}", slot, parents[i % len(parents)])
                    for i, slot in enumerate(slots)]
            children = ctx.map(lambda job: self.plan_and_implement(ctx, *job), jobs)
            beam = self.select(beam + children)
            if translating:
                translation_left -= 1
            else:
                optimization_left -= 1
            round_no += 1

    def select(self, pool: list[Candidate]) -> list[Candidate]:
        """The beam: the best distinct kernels, correct ones only once there are any."""
        if any(c.correct for c in pool):
            pool = [c for c in pool if c.correct]
        beam, seen = [], set()
        for candidate in best_first(pool):
            if candidate.code not in seen:
                seen.add(candidate.code)
                beam.append(candidate)
        return beam[: self.beam_width]

    def plan_and_implement(self, ctx: Context, step: str, slot: int,
                           parent: Candidate | None) -> Candidate:
        # The menu follows the parent: until a kernel is correct, the job is translation.
        translating = parent is None or not parent.correct
        menu = TRANSLATION_MENU if translating else OPTIMIZATION_MENU
        current = attempt_section("Current kernel", parent) if parent else ""
        goal = ("Goal: a correct Pallas kernel for the reference." if translating
                else "Goal: make this correct kernel faster while keeping it correct.")
        options = "\n".join(f"{i + 1}. {item}" for i, item in enumerate(menu))
        plan = ctx.ask(f"{step}/plan", ctx.prompt(
            current, goal, f"## Strategy menu\n{options}",
            "Choose the one or two strategies from the menu that help most now and write a short, "
            "concrete plan (at most 10 bullet points: block sizes, grid, what moves where). "
            "Do not write the kernel yet.", answer=False), slot)
        return ctx.propose(step, ctx.prompt(current, goal, f"## Plan\n{plan.strip()}",
                                            "Implement this plan."),
                           slot, parent=parent, origin="translate" if translating else "optimize")
