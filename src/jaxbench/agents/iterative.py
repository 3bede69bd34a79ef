"""``iterative``: parallel chains of refinement, each turn fed the evaluator's verdict.

Every turn a chain sees its previous attempt, the verdict on it (the compile error with
the candidate's line, the correctness summary with the worst element, or the timing and
roofline fraction, with the grids and blocks the evaluator saw) and, when the previous
attempt lost ground, its best correct kernel so far. From the third turn on it also sees
every earlier attempt of the chain as one measurement line each (status, the error in
short, and on a device the speedup and roofline fraction;
:func:`jaxbench.agents.prompts.measurement_line`), so it knows what was already tried and
how it measured. Every kernel shown carries that line. Chains advance in lockstep (one
round = one turn of every chain) and share the budget evenly.

``chains=0`` (the default) derives the number of chains from the budget: one chain per
4 samples, at most 4, so every chain gets at least 4 turns (a budget under 8 is one
chain). An explicit ``chains`` that leaves chains a single turn each is allowed, and
the run's ``task_done`` event says so (``turns_per_chain``).
"""

from __future__ import annotations

from typing import Any

from jaxbench.agents.base import Candidate, Context, Method, best_first, register_method
from jaxbench.agents.prompts import describe_verdict, measurement_line

MAX_AUTO_CHAINS = 4
TURNS_PER_AUTO_CHAIN = 4
CHAIN_HISTORY_TURNS = 12  # earlier attempts listed in a prompt (the most recent ones)


def attempt_section(title: str, candidate: Candidate) -> str:
    """A kernel, its measurement line and its verdict, as a prompt section."""
    return (f"## {title}\n```python\n{candidate.code.rstrip()}\n```\n"
            f"Measured: {measurement_line(candidate.result)}\n"
            f"{describe_verdict(candidate.result, candidate.code)}")


def chain_history(past: list[Candidate], limit: int = CHAIN_HISTORY_TURNS) -> str:
    """The chain's attempts before the previous one, one measurement line each, oldest first."""
    earlier = past[:-1]
    start = max(0, len(earlier) - limit)
    lines = ["## Your earlier attempts in this chain (oldest first)"]
    if start:
        lines.append(f"({start} older attempts not shown)")
    lines += [f"Attempt {i + 1}: {measurement_line(c.result)}"
              for i, c in enumerate(earlier) if i >= start]
    return "\n".join(lines)


def next_instruction(candidate: Candidate) -> str:
    if candidate.correct:
        return ("It is correct. Make it faster while keeping it correct: larger or better-shaped "
                "blocks, more fusion, fewer passes over HBM, better use of the matrix units.")
    return "Fix the problem above and return the complete corrected kernel."


def chain_count(chains: int, budget: int) -> int:
    """The chains a budget runs: ``chains``, or (0) one per 4 samples, at most 4."""
    if chains > 0:
        return max(1, min(chains, budget))
    return max(1, min(MAX_AUTO_CHAINS, budget // TURNS_PER_AUTO_CHAIN))


@register_method("iterative")
class Iterative(Method):
    defaults = {"chains": 0}

    def check_options(self) -> None:
        if self.chains < 0:
            raise ValueError("option chains must be 0 (from the budget) or a positive number")

    def run(self, ctx: Context) -> None:
        chains = chain_count(self.chains, ctx.budget.remaining)
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

    def summary(self, ctx: Context) -> dict[str, Any]:
        chains = chain_count(self.chains, ctx.budget.total)
        return {"chains": chains, "turns_per_chain": ctx.budget.total // chains}

    def prompt(self, ctx: Context, past: list[Candidate]) -> str:
        if not past:
            return ctx.prompt()
        previous = past[-1]
        sections = [attempt_section(f"Your previous attempt (attempt {len(past)})", previous)]
        best = best_first(c for c in past if c.correct)
        if best and best[0] is not previous and best[0].fitness() > previous.fitness():
            sections.insert(0, attempt_section("Your best correct kernel so far", best[0]))
        if len(past) > 1:
            sections.insert(0, chain_history(past))
        sections.append(next_instruction(previous))
        return ctx.prompt(*sections)
