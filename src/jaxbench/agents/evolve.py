"""``evolve``: island-based evolutionary search seeded with the task's seed kernels.

Each island holds a small population. Every generation, each island breeds
``children`` kernels: a parent is drawn with probability falling with its fitness
rank, and the model either rewrites it or edits it with SEARCH/REPLACE blocks
(``diff_probability``). Every ``migration_interval`` generations each island's best
kernel migrates to the next island (a ring). Random draws are seeded by task,
generation and child, so a resumed run makes the same choices.
"""

from __future__ import annotations

import random
import re

from jaxbench.agents.base import Candidate, CandidateError, Context, Method, best_first, register_method
from jaxbench.agents.iterative import attempt_section
from jaxbench.agents.prompts import extract_code

EDIT_BLOCK = re.compile(r"<{5,9} SEARCH[ \t]*\n(.*?)\n?={5,9}[ \t]*\n(.*?)\n?>{5,9} REPLACE", re.DOTALL)

DIFF_FORMAT = """Answer with targeted edits to this kernel as one or more blocks of the form

<<<<<<< SEARCH
exact lines copied from the current kernel
=======
the lines that replace them
>>>>>>> REPLACE

Each SEARCH text must occur exactly once in the current kernel. Do not send the whole file."""


def apply_edits(code: str, answer: str) -> str:
    """Applies the SEARCH/REPLACE blocks of ``answer`` to ``code``.

    An answer without edit blocks but with code (a code block, or a bare module that
    defines ``kernel``) counts as a full rewrite.
    Raises :class:`CandidateError` when a block does not match exactly once.
    """
    edits = EDIT_BLOCK.findall(answer)
    if not edits:
        if "```" in answer or "def kernel" in answer:
            return extract_code(answer)
        raise CandidateError("the answer has neither SEARCH/REPLACE blocks nor a code block")
    for i, (search, replace) in enumerate(edits, 1):
        count = code.count(search)
        if count != 1:
            where = "not found in" if count == 0 else f"found {count} times in"
            raise CandidateError(f"edit {i} did not apply: its SEARCH text is {where} the kernel")
        code = code.replace(search, replace, 1)
    return code if code.endswith("\n") else code + "\n"


@register_method("evolve")
class Evolve(Method):
    defaults = {"islands": 4, "children": 2, "population": 8, "migration_interval": 3,
                "diff_probability": 0.5}

    def run(self, ctx: Context) -> None:
        seeds = ctx.seed_candidates()
        islands: list[list[Candidate]] = [list(seeds) for _ in range(self.islands)]
        generation = 0
        while ctx.budget.remaining > 0:
            slots = ctx.budget.take(self.islands * self.children)
            jobs = []
            for i, slot in enumerate(slots):
                island = i % self.islands
                rng = random.Random(f"{ctx.task.id}/{generation}/{i}")
                parent = self.pick_parent(islands[island], rng)
                diff = parent is not None and rng.random() < self.diff_probability
                jobs.append((island, f"gen{generation}/island{island}/c{i}", slot, parent, diff))
            children = ctx.map(lambda job: self.breed(ctx, *job[1:]), jobs)
            for (island, *_), child in zip(jobs, children, strict=True):
                islands[island] = best_first(islands[island] + [child])[: self.population]
            generation += 1
            if generation % self.migration_interval == 0:
                self.migrate(islands)

    @staticmethod
    def pick_parent(population: list[Candidate], rng: random.Random) -> Candidate | None:
        """Rank-weighted choice: the best has weight 1, the next 1/2, then 1/3 ..."""
        if not population:
            return None
        ranked = best_first(population)
        return rng.choices(ranked, weights=[1 / (r + 1) for r in range(len(ranked))])[0]

    @staticmethod
    def migrate(islands: list[list[Candidate]]) -> None:
        bests = [best_first(pop)[0] if pop else None for pop in islands]
        for i, best in enumerate(bests):
            target = islands[(i + 1) % len(islands)]
            if best is not None and all(c.code != best.code for c in target):
                target.append(best)

    def breed(self, ctx: Context, step: str, slot: int, parent: Candidate | None,
              diff: bool) -> Candidate:
        if parent is None:
            return ctx.propose(step, ctx.prompt(), slot, origin="sample")
        goal = ("Improve this kernel: make it faster while keeping it correct." if parent.correct
                else "Fix this kernel so that it is correct.")
        current = attempt_section("Current kernel", parent)
        if diff:
            prompt = ctx.prompt(current, goal, DIFF_FORMAT, answer=False)
            return ctx.propose(step, prompt, slot, parent=parent, origin="diff",
                               to_code=lambda answer: apply_edits(parent.code, answer))
        prompt = ctx.prompt(current, goal + " You may rewrite it completely.")
        return ctx.propose(step, prompt, slot, parent=parent, origin="rewrite")

