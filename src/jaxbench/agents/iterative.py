"""``iterative``: parallel chains of refinement, each turn fed the evaluator's verdict.

Every turn a chain sees its previous attempt, the verdict on it (the compile error,
the correctness summary with the worst element, or the timing) and, when the
previous attempt lost ground, its best correct kernel so far. Chains advance in
lockstep (one round = one turn of every chain) and share the budget evenly.
"""

from __future__ import annotations

from jaxbench.agents.base import Candidate, Context, Method, best_first, register_method
from jaxbench.agents.prompts import describe_verdict


def attempt_section(title: str, candidate: Candidate) -> str:
    """A kernel and its verdict, as a prompt section."""
    return f"## {title}\n```python\n{candidate.code.rstrip()}\n```\n{describe_verdict(candidate.result)}"


def next_instruction(candidate: Candidate) -> str:
    if candidate.correct:
        return ("It is correct. Make it faster while keeping it correct: larger or better-shaped "
                "blocks, more fusion, fewer passes over HBM, better use of the matrix units.")
    return "Fix the problem above and return the complete corrected kernel."


@register_method("iterative")
class Iterative(Method):
    defaults = {"chains": 4}

    def run(self, ctx: Context) -> None:
        chains = max(1, min(self.chains, ctx.budget.remaining))
        history: list[list[Candidate]] = [[] for _ in range(chains)]
        turn = 0
        while ctx.budget.remaining > 0:
            slots = ctx.budget.take(chains)
            jobs = [(f"chain{chain}/turn{turn}", self.prompt(ctx, history[chain]), slot,
                     history[chain][-1] if history[chain] else None)
                    for chain, slot in enumerate(slots)]
            candidates = ctx.map(lambda job: ctx.propose(
                *job[:3], parent=job[3], origin="refine" if job[3] else "sample"), jobs)
            for chain, candidate in enumerate(candidates):
                history[chain].append(candidate)
            turn += 1

    def prompt(self, ctx: Context, past: list[Candidate]) -> str:
        if not past:
            return ctx.prompt()
        previous = past[-1]
        sections = [attempt_section("Your previous attempt", previous)]
        best = best_first(c for c in past if c.correct)
        if best and best[0] is not previous and best[0].fitness() > previous.fitness():
            sections.insert(0, attempt_section("Your best correct kernel so far", best[0]))
        sections.append(next_instruction(previous))
        return ctx.prompt(*sections)
