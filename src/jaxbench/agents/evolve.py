"""``evolve``: island-based evolutionary search in the manner of ShinkaEvolve (Sakana AI).

- **Islands seeded differently.** ``seed_islands`` islands start from the task's shipped
  seed kernel for the target (free of budget); the others start from their own fresh
  kernels written from the task statement alone (generation 0, one sample each), so
  islands explore from different starting points. Children stay on their parent's island.
- **Parents** are drawn per island by ShinkaEvolve's weighted rule: the island's correct
  kernels weighted by ``sigmoid(lambda * (s - median) / MAD)`` of their score times
  ``1 / (1 + children)`` (a bonus for kernels that were explored less); an island with no
  correct kernel draws from its best kernels by rank.
- **Archive and inspirations.** A global archive keeps the ``archive_size`` best correct
  kernels. A prompt shows the parent plus inspirations: the best kernel, elites and random
  correct kernels of the parent's island (else of the archive), and the archive's top
  ones, worst to best so the best comes last. Every kernel shown (parent, crossover
  partner, inspirations) carries its measurement line: status, the error in short, and on
  a device the speedup and roofline fraction
  (:func:`jaxbench.agents.prompts.measurement_line`).
- **Mutations**: SEARCH/REPLACE diff edits, full rewrites, and **crossover** of the parent
  with a second parent from another island (``patch_probabilities`` = diff, full, cross).
- **Novelty rejection before evaluation.** A proposal whose code (tokens, comments and
  spacing ignored) duplicates a kernel of the task, or whose similarity to a kernel of the
  parent's island (cosine of token 4-gram counts) exceeds ``novelty_threshold``, is not
  evaluated: the model is asked again with another parent and other inspirations, up to
  ``novelty_attempts`` times; the last proposal is then evaluated (an exact duplicate
  reuses its earlier verdict and costs no evaluation). A proposal that differs from a kernel
  only in numbers and string literals (a tile 512 -> 256, "parallel" -> "arbitrary") is a
  tuning edit and always novel. An answer with no usable kernel (no code, or an edit that
  does not apply) is asked again within the same allowance instead of being evaluated.
- **Migration** every ``migration_interval`` generations: from each island a share
  (``migration_rate``) of its correct, non-seed kernels, never its best, moves to another
  island.

Random draws are seeded by task, generation, island, child and attempt, and novelty is
judged against the islands as they stood when the generation began, so a resumed run
makes the same choices. The method is ``seeded`` (recorded in the run's config and
``task_done`` events) when any island starts from the shipped seed.
"""

from __future__ import annotations

import io
import math
import random
import re
import statistics
import tokenize
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial

from jaxbench.agents.base import Candidate, CandidateError, Context, Method, Reply, register_method
from jaxbench.agents.iterative import attempt_section
from jaxbench.agents.prompts import extract_code, measurement_line

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
    answer = answer.replace("\r\n", "\n")
    edits = EDIT_BLOCK.findall(answer)
    if not edits:
        if "```" in answer or "~~~" in answer or "def kernel" in answer:
            return extract_code(answer)
        raise CandidateError("the answer has neither SEARCH/REPLACE blocks nor a code block")
    for i, (search, replace) in enumerate(edits, 1):
        count = code.count(search)
        if count != 1:
            where = "not found in" if count == 0 else f"found {count} times in"
            raise CandidateError(f"edit {i} did not apply: its SEARCH text is {where} the kernel")
        code = code.replace(search, replace, 1)
    return code if code.endswith("\n") else code + "\n"


# -- novelty ----------------------------------------------------------------------------------

def code_tokens(code: str) -> list[str]:
    """The code's tokens, without comments, spacing and layout."""
    out: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            out.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        out = code.split()
    return out


def shape_of(tokens: Sequence[str]) -> tuple[str, ...]:
    """The tokens with every number and string literal masked: two kernels with the same shape
    differ only in constants and literal options (a tile 512 -> 256, "parallel" ->
    "arbitrary"), which is tuning."""
    masked = []
    for tok in tokens:
        if tok[:1].isdigit() or (tok[:1] == "." and tok[1:2].isdigit()):
            masked.append("<num>")
        elif tok[:1] in "'\"" or (tok[:2].lower() in ("f'", 'f"', "r'", 'r"', "b'", 'b"')):
            masked.append("<str>")
        else:
            masked.append(tok)
    return tuple(masked)


def ngrams(tokens: list[str], n: int = 4) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(max(1, len(tokens) - n + 1)))


def cosine(a: Counter, b: Counter) -> float:
    if len(a) > len(b):
        a, b = b, a
    dot = sum(v * b.get(k, 0) for k, v in a.items())
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


def similarity(a: str, b: str) -> float:
    """Cosine similarity of the two programs' token 4-gram counts (1.0: same tokens)."""
    ta, tb = code_tokens(a), code_tokens(b)
    return 1.0 if ta == tb else cosine(ngrams(ta), ngrams(tb))


# -- the population ---------------------------------------------------------------------------

@dataclass(eq=False)
class Program:
    candidate: Candidate
    island: int
    generation: int
    children: int = 0
    seed: bool = False

    @cached_property
    def tokens(self) -> tuple[str, ...]:
        return tuple(code_tokens(self.candidate.code))

    @cached_property
    def shape(self) -> tuple[str, ...]:
        return shape_of(self.tokens)

    @cached_property
    def grams(self) -> Counter:
        return ngrams(list(self.tokens))

    @property
    def score(self) -> float:
        """Higher is better: the speedup when measured, else 1 for correct kernels."""
        if not self.candidate.correct:
            return 0.0
        return self.candidate.speedup if self.candidate.speedup is not None else 1.0


@dataclass
class Population:
    islands: list[list[Program]]
    archive_size: int
    everything: list[Program] = field(default_factory=list)

    def archive(self) -> list[Program]:
        correct = [p for p in self.everything if p.candidate.correct]
        return sorted(correct, key=lambda p: p.candidate.fitness(), reverse=True)[: self.archive_size]

    def add(self, program: Program, population: int) -> None:
        self.everything.append(program)
        island = self.islands[program.island]
        island.append(program)
        island.sort(key=lambda p: p.candidate.fitness(), reverse=True)
        del island[population:]


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1 / (1 + math.exp(-x))
    e = math.exp(x)
    return e / (1 + e)


@register_method("evolve")
class Evolve(Method):
    defaults = {"islands": 4, "children": 2, "population": 8, "seed_islands": 1,
                "archive_size": 16, "archive_inspirations": 2, "top_k_inspirations": 1,
                "patch_probabilities": "0.5,0.35,0.15", "parent_lambda": 10.0,
                "novelty_threshold": 0.95, "novelty_attempts": 3,
                "migration_interval": 3, "migration_rate": 0.1}

    def check_options(self) -> None:
        if self.islands < 1 or self.children < 1 or self.population < 1:
            raise ValueError("options islands, children and population must be at least 1")
        if not 0 <= self.seed_islands <= self.islands:
            raise ValueError("option seed_islands must be between 0 and islands")
        self.patch_weights()

    def patch_weights(self) -> tuple[float, float, float]:
        try:
            weights = tuple(float(w) for w in str(self.patch_probabilities).split(","))
            if len(weights) != 3 or min(weights) < 0 or sum(weights) <= 0:
                raise ValueError
        except ValueError:
            raise ValueError("option patch_probabilities must be three non-negative numbers "
                             "'DIFF,FULL,CROSS', e.g. 0.5,0.35,0.15") from None
        return weights  # type: ignore[return-value]

    @property
    def seeded(self) -> bool:  # type: ignore[override]
        return self.seed_islands > 0

    # -- the loop -------------------------------------------------------------------------------

    def run(self, ctx: Context) -> None:
        pop = Population([[] for _ in range(self.islands)], self.archive_size)
        seeds = ctx.seed_candidates() if self.seed_islands else []
        for island in range(self.seed_islands):
            for seed in seeds:
                pop.add(Program(seed, island, 0, seed=True), self.population)
        generation = 0
        while ctx.budget.remaining > 0:
            jobs = []
            for i in range(self.islands * self.children):
                island = i % self.islands
                slots = ctx.budget.take(1)
                if not slots:
                    break
                jobs.append((island, f"gen{generation}/island{island}/c{i}", slots[0], i))
            snapshot = [list(p) for p in pop.islands]
            archive = pop.archive()
            everything = list(pop.everything)
            children = ctx.map(partial(self.breed_job, ctx, snapshot, archive, everything,
                                       generation), jobs)
            for (island, *_), (child, parent) in zip(jobs, children, strict=True):
                if parent is not None:
                    parent.children += 1
                pop.add(Program(child, island, generation + 1), self.population)
            generation += 1
            if self.islands > 1 and generation % self.migration_interval == 0:
                self.migrate(pop, ctx.rng(f"migrate{generation}"))

    # -- selection ------------------------------------------------------------------------------

    def pick_parent(self, island: list[Program], rng: random.Random) -> Program | None:
        """ShinkaEvolve's weighted parent draw over the island's correct kernels; by rank when
        the island has none."""
        if not island:
            return None
        correct = [p for p in island if p.candidate.correct]
        if not correct:
            ranked = sorted(island, key=lambda p: p.candidate.fitness(), reverse=True)
            return rng.choices(ranked, weights=[1 / (r + 1) for r in range(len(ranked))])[0]
        scores = [p.score for p in correct]
        median = statistics.median(scores)
        mad = max(statistics.median(abs(s - median) for s in scores), 1e-6)
        weights = [_sigmoid(self.parent_lambda * (p.score - median) / mad) / (1 + p.children)
                   for p in correct]
        return rng.choices(correct, weights=weights)[0]

    def choose_inspirations(self, parent: Program, island: list[Program], archive: list[Program],
                     rng: random.Random) -> list[Program]:
        """Archive inspirations (the best kernel, island elites, random correct ones) and the
        archive's top ones, without the parent; worst first, best last."""
        chosen: list[Program] = []

        def take(p: Program) -> None:
            if p is not parent and p.candidate.code != parent.candidate.code and all(
                    q.candidate.code != p.candidate.code for q in chosen):
                chosen.append(p)

        n = self.archive_inspirations
        if archive and n > 0:
            take(archive[0])
        elites = sorted((p for p in island if p.candidate.correct),
                        key=lambda p: p.candidate.fitness(), reverse=True)
        for p in elites[: max(0, n // 2)]:
            if len(chosen) < n:
                take(p)
        pool = [p for p in elites if p not in chosen and p is not parent] or \
               [p for p in archive if p not in chosen and p is not parent]
        while len(chosen) < n and pool:
            take(pool.pop(rng.randrange(len(pool))))
        for p in archive:
            if len(chosen) >= n + self.top_k_inspirations:
                break
            take(p)
        return sorted(chosen, key=lambda p: p.candidate.fitness())

    def migrate(self, pop: Population, rng: random.Random) -> None:
        """Moves a share of each island's correct, non-seed kernels (never its best) to another
        island."""
        moves = []
        for source, island in enumerate(pop.islands):
            eligible = [p for p in island if p.candidate.correct and not p.seed]
            if len(eligible) < 2:
                continue
            best = max(eligible, key=lambda p: p.candidate.fitness())
            movable = [p for p in eligible if p is not best]
            count = max(1, int(len(island) * self.migration_rate))
            for program in rng.sample(movable, min(count, len(movable))):
                dest = rng.choice([i for i in range(len(pop.islands)) if i != source])
                moves.append((program, source, dest))
        for program, source, dest in moves:
            if program in pop.islands[source]:
                pop.islands[source].remove(program)
            program.island = dest
            pop.islands[dest].append(program)

    # -- one child ------------------------------------------------------------------------------

    def breed_job(self, ctx: Context, snapshot: list[list[Program]], archive: list[Program],
                  everything: list[Program], generation: int,
                  job: tuple) -> tuple[Candidate, Program | None]:
        return self.breed(ctx, snapshot, archive, everything, generation, *job)

    def breed(self, ctx: Context, snapshot: list[list[Program]],
              archive: list[Program], everything: list[Program], generation: int, island: int,
              step: str, slot: int, index: int) -> tuple[Candidate, Program | None]:
        """Proposes a child until one is novel (or attempts run out), then evaluates it."""
        rejections: list[dict] = []
        diff_weight, full_weight, cross_weight = self.patch_weights()
        for attempt in range(max(1, self.novelty_attempts)):
            rng = ctx.rng(step, f"a{attempt}")
            parent = self.pick_parent(snapshot[island], rng)
            call_step = step if attempt == 0 else f"{step}/retry{attempt}"
            if parent is None:  # an island's first kernel: from the task statement alone
                reply, code, failure = self._ask(ctx, call_step, ctx.prompt(), slot, extract_code)
                kind, partner = "init", None
            else:
                others = [p for i, isl in enumerate(snapshot) if i != island for p in isl
                          if p.candidate.correct and p.candidate.code != parent.candidate.code]
                kind = rng.choices(["diff", "full", "cross"],
                                   weights=[diff_weight, full_weight, cross_weight if others else 0])[0]
                partner = rng.choice(others) if kind == "cross" else None
                inspirations = self.choose_inspirations(parent, snapshot[island], archive, rng)
                prompt, to_code = self.mutation_prompt(ctx, kind, parent, partner, inspirations)
                reply, code, failure = self._ask(ctx, call_step, prompt, slot, to_code)
            if failure is not None:  # no kernel in the answer, or an edit that does not apply
                if attempt + 1 < max(1, self.novelty_attempts):
                    rejections.append({"attempt": attempt, "unusable": failure[:200]})
                    continue  # asked again: an unusable answer spends no evaluation
                break
            duplicate = self.duplicate_of(code, parent, snapshot, everything)
            if duplicate is None:
                break
            rejections.append({"attempt": attempt, **duplicate})
        extra = {"mutation": kind, "island": island, "generation": generation + 1}
        if partner is not None:
            extra["crossover_with"] = partner.candidate.step
        if rejections:
            extra["novelty_rejections"] = rejections
        if reply.truncated:
            extra["truncated"] = True
        child = ctx.evaluate(call_step, code, slot, parent=parent.candidate.step if parent else None,
                             origin=kind, failure=failure, extra=extra)
        return child, parent

    @staticmethod
    def _ask(ctx: Context, step: str, prompt: str, slot: int,
             to_code: Callable[[str], str]) -> tuple[Reply, str, str | None]:
        reply = ctx.reply(step, prompt, slot)
        code, failure = ctx.to_code(reply, to_code)
        return reply, code, failure

    def duplicate_of(self, code: str, parent: Program | None, snapshot: list[list[Program]],
                     everything: list[Program]) -> dict | None:
        """Why ``code`` is not novel (the kernel it copies and how closely), or None."""
        tokens = tuple(code_tokens(code))
        for program in everything:
            if program.tokens == tokens:
                return {"similar_to": program.candidate.step, "similarity": 1.0}
        island = snapshot[parent.island] if parent is not None else []
        best, best_sim = None, 0.0
        grams, shape = ngrams(list(tokens)), shape_of(tokens)
        for program in island:
            if program.shape == shape:  # only constants or literal options changed: tuning
                continue
            sim = cosine(grams, program.grams)
            if sim > best_sim:
                best, best_sim = program, sim
        if best is not None and best_sim > self.novelty_threshold:
            return {"similar_to": best.candidate.step, "similarity": round(best_sim, 4)}
        return None

    def mutation_prompt(self, ctx: Context, kind: str, parent: Program, partner: Program | None,
                        inspirations: list[Program]) -> tuple[str, Callable[[str], str]]:
        sections = []
        if inspirations:
            shown = "\n\n".join(
                f"### Inspiration {i + 1}\n```python\n{p.candidate.code.rstrip()}\n```\n"
                f"Measured: {measurement_line(p.candidate.result)}"
                for i, p in enumerate(inspirations))
            sections.append("## Other kernels from the archive (worst to best)\n" + shown)
        goal = ("Improve this kernel: make it faster while keeping it correct." if parent.candidate.correct
                else "Fix this kernel so that it is correct.")
        if kind == "cross" and partner is not None:
            sections += [attempt_section("Kernel A", parent.candidate),
                         attempt_section("Kernel B", partner.candidate),
                         "Combine the strengths of kernels A and B into one kernel that is correct "
                         "and faster than both."]
            return ctx.prompt(*sections), extract_code
        sections += [attempt_section("Current kernel", parent.candidate)]
        if kind == "diff":
            sections += [goal, DIFF_FORMAT]
            code = parent.candidate.code
            return ctx.prompt(*sections, answer=False), lambda answer: apply_edits(code, answer)
        sections.append(goal + " You may rewrite it completely.")
        return ctx.prompt(*sections), extract_code


__all__ = ["DIFF_FORMAT", "Evolve", "apply_edits", "similarity"]
