"""What each method does, shown with scripted models and instant evaluators: Autocomp's
plans x implementations per beam entry, menu dropout and beam rule; evolve's islands,
archive inspirations, crossover, novelty rejection, parent weights and migration;
iterative's chain count. What the searches show of each measurement, and Autocomp's
phases, presets and ranking: tests/test_agents_search.py."""

from __future__ import annotations

import random
import re

import pytest
from agent_fakes import FakeEvaluator, events_of, fast, kernels, script, seed, verdict

from jaxbench.agents import get_method, optimize
from jaxbench.agents.autocomp import OPTIMIZATION_MENU, TRANSLATION_MENU, Autocomp, Node
from jaxbench.agents.base import Candidate
from jaxbench.agents.evolve import Evolve, Population, Program, similarity
from jaxbench.agents.iterative import chain_count
from jaxbench.backends.host import versions
from jaxbench.contract import EvaluationResult
from jaxbench.llm import get_model
from jaxbench.runs import RunDir, event_source

SPEED = re.compile(r"SPEED = ([\d.]+)")


class SpeedEvaluator(FakeEvaluator):
    """Correct with speedup X when the code says ``SPEED = X``; a compile error otherwise."""

    def evaluate(self, code, task_id, settings):  # noqa: ANN001, ANN201
        target, mode, size = settings.target or "tpu", settings.mode, settings.size
        self.calls += 1
        self.codes.append(code)
        start = EvaluationResult.start(task_id, target, mode, size, code, versions=versions())
        match = SPEED.search(code)
        if match:
            speedup = float(match.group(1))
            return start.replace(status="correct", stage="time", speedup=speedup, t_ref_ms=1.0,
                                 t_kernel_ms=1 / speedup, max_abs_err=1e-3)
        return start.replace(status="compile_error", stage="lower", message="bad block shape")


def calls_by_step(run: RunDir) -> dict[str, dict]:
    return {c["step"]: c for c in events_of(run, "llm_call")}


def candidate(step: str, status: str = "correct", speedup: float | None = None, code: str = "") -> Candidate:
    return Candidate(step, 0, code or step, verdict(status, speedup=speedup, max_abs_err=0.0))


# -- Autocomp ---------------------------------------------------------------------------------

def test_autocomp_plans_per_beam_entry_implementations_per_plan_and_its_accounting(tmp_path):
    run = RunDir.open(tmp_path / "run", {})
    answers = [fast(1.0 + i / 10, str(i)) for i in range(40)]
    model = get_model(script(tmp_path / "s", *answers))
    optimize(["8p_gemm"], get_method("autocomp", beam_width=2, plans=2, implementations=2), model,
             run, budget=12, target="tpu", mode="interpret", trials=1, workers=2,
             evaluator=SpeedEvaluator())
    calls = calls_by_step(run)
    plans = sorted(s for s, c in calls.items() if c["kind"] == "plan")
    assert plans[:2] == ["round0/p0/plan0", "round0/p0/plan1"]  # 2 plans for the one root entry
    assert len(plans) == 2 + 2 * 2  # then 2 plans for each of the 2 beam entries
    evals = [e for e in events_of(run, "evaluation") if e["sample"] is not None]
    assert len(evals) == 12  # the budget counts evaluated candidates only
    for e in evals:  # 2 implementations per plan, each names its plan
        assert re.fullmatch(r"round\d/p\d/plan\d/impl[01]", e["step"])
        assert e["plan_step"] == e["step"].rsplit("/", 1)[0] and e["plan_step"] in plans
    done = events_of(run, "task_done")[0]
    assert done["samples"] == 12 and done["planning_calls"] == 6 and done["seeded"] is False


def test_autocomp_menu_dropout_per_plan_and_per_target(tmp_path):
    for target in ("tpu", "gpu"):
        run = RunDir.open(tmp_path / target, {})
        model = get_model(script(tmp_path / f"s{target}", *kernels(target, 20)))
        optimize(["8p_gemm"], get_method("autocomp", beam_width=1, plans=6, implementations=1,
                                         menu_dropout=0.5),
                 model, run, budget=12, target=target, mode="interpret", trials=1, workers=2,
                 evaluator=FakeEvaluator())
        menus: dict[str, list[tuple[str, ...]]] = {"round0": [], "round1": []}
        for call in events_of(run, "llm_call"):
            if call["kind"] == "plan":
                section = call["prompt"].split("## Strategies\n")[1].split("\n\n")[0]
                options = [line.split(". ", 1)[1] for line in section.splitlines()]
                menus[call["step"].split("/")[0]].append(tuple(options))
        # translating the reference: the whole translation menu (Autocomp drops none of it)
        assert menus["round0"] == [TRANSLATION_MENU[target]] * 6
        optimizing = menus["round1"]  # a correct kernel: the optimization menu, with dropout
        assert len(optimizing) == 6 and len(set(optimizing)) > 1  # dropped at random, per plan
        assert all(set(m) <= set(OPTIMIZATION_MENU[target]) for m in optimizing)
        assert any(len(m) < len(OPTIMIZATION_MENU[target]) for m in optimizing)
    gpu = " ".join(TRANSLATION_MENU["gpu"] + OPTIMIZATION_MENU["gpu"])
    assert "PrefetchScalarGridSpec" not in gpu and "VMEM" not in gpu
    assert "compiler_params=plgpu.CompilerParams" in gpu
    assert any("PrefetchScalarGridSpec" in m for m in OPTIMIZATION_MENU["tpu"])


def test_autocomp_beam_rule():
    method = Autocomp()
    root = None
    assert method.beats(candidate("a", speedup=0.9), root)       # within 1.2x of XLA
    assert not method.beats(candidate("a", speedup=0.7), root)   # too slow a translation
    assert method.beats(candidate("a", speedup=None), root)      # interpret mode: unknown
    parent = Node(candidate("p", speedup=1.5), "plan", None, "x")
    assert method.beats(candidate("c", speedup=1.6), parent)
    assert not method.beats(candidate("c", speedup=1.4), parent)
    assert not method.beats(candidate("c", speedup=None), parent)  # cannot show it is faster
    assert not method.beats(candidate("c", status="incorrect"), parent)
    broken = Node(candidate("p", status="compile_error"), "plan", None, "x")
    assert not method.beats(candidate("c", status="incorrect"), root)  # correct kernels only
    assert not method.beats(candidate("c", status="incorrect"), broken)
    legacy = Autocomp(translate_progress=True)  # the harness's earlier translation rule
    assert legacy.beats(candidate("c", status="incorrect"), root)
    assert legacy.beats(candidate("c", status="incorrect"), broken)  # got further
    assert legacy.beats(candidate("c", speedup=0.5), broken)  # the first correct one
    # the fixed translation rounds let a translation be up to translate_threshold slower
    assert Autocomp(translate_threshold=2.0).beats(candidate("c", speedup=0.8), parent,
                                                   translating=True)
    # one child per (parent, plan): the better of two implementations of one plan
    kids = [Node(candidate("c1", speedup=1.7), "plan", parent, "p|plan0"),
            Node(candidate("c2", speedup=1.8), "plan", parent, "p|plan0"),
            Node(candidate("c3", speedup=1.6), "plan", parent, "p|plan1")]
    beam = Autocomp(beam_width=4).select([parent], kids)
    assert [n.candidate.step for n in beam] == ["c2", "c3", "p"]


# -- evolve -----------------------------------------------------------------------------------

def test_evolve_islands_start_differently_and_the_run_says_it_is_seeded(tmp_path):
    run = RunDir.open(tmp_path / "run", {})
    model = get_model(script(tmp_path / "s", *kernels("tpu", 9)))
    optimize(["l1_relu"], get_method("evolve", islands=3, children=1), model, run, budget=3,
             target="tpu", mode="interpret", trials=1, workers=2, evaluator=FakeEvaluator())
    evals = {e["step"]: e for e in events_of(run, "evaluation")}
    seed_eval = evals["seed/seed_tpu"]  # the shipped PallasBench seed is the first population
    assert event_source(run.path, seed_eval) == seed("l1_relu", "tpu") and seed_eval["sample"] is None
    first = {e["island"]: e for e in evals.values() if e.get("generation") == 1}
    assert first[0]["parent"] == "seed/seed_tpu" and first[0]["origin"] in ("diff", "full", "cross")
    assert first[1]["origin"] == first[2]["origin"] == "init" and first[1]["parent"] is None
    calls = calls_by_step(run)
    assert "## Current kernel" not in calls["gen0/island1/c1"]["prompt"]  # from the task alone
    assert events_of(run, "task_done")[0]["seeded"] is True


def test_evolve_rejects_duplicates_and_near_duplicates_before_evaluating(tmp_path):
    original = seed("12p_rmsnorm", "tpu")
    near = original.replace("1e-5", "1e-5 ") + "\n# a comment changes nothing\n"
    answers = [f"```python\n{original}```", f"```python\n{near}```", kernels("tpu", 1)[0]]
    run = RunDir.open(tmp_path / "run", {})
    evaluator = FakeEvaluator()
    optimize(["12p_rmsnorm"], get_method("evolve", islands=1, children=1,
                                         patch_probabilities="0,1,0"),
             get_model(script(tmp_path / "s", *answers)), run, budget=1, target="tpu",
             mode="interpret", trials=1, workers=1, evaluator=evaluator)
    calls = sorted(c["step"] for c in events_of(run, "llm_call"))
    assert calls == ["gen0/island0/c0", "gen0/island0/c0/retry1", "gen0/island0/c0/retry2"]
    child = next(e for e in events_of(run, "evaluation") if e["sample"] == 0)
    assert child["step"] == "gen0/island0/c0/retry2"
    assert [r["similar_to"] for r in child["novelty_rejections"]] == ["seed/seed_tpu"] * 2
    assert child["novelty_rejections"][0]["similarity"] == 1.0
    assert evaluator.calls == 2  # the seed and the novel kernel: no duplicate was evaluated
    assert similarity(original, near) == 1.0  # comments and spacing are not novelty
    assert 0.9 < similarity(original, original.replace("1e-5", "1e-6")) < 1.0


def _evolve_once(tmp_path, task_id, answers, patches="0,1,0"):
    run = RunDir.open(tmp_path / "run", {})
    evaluator = FakeEvaluator()
    optimize([task_id], get_method("evolve", islands=1, children=1, patch_probabilities=patches),
             get_model(script(tmp_path / "s", *answers)), run, budget=1, target="tpu",
             mode="interpret", trials=1, workers=1, evaluator=evaluator)
    calls = sorted(c["step"] for c in events_of(run, "llm_call"))
    child = next(e for e in events_of(run, "evaluation") if e["sample"] == 0)
    return calls, child, evaluator


def test_evolve_welcomes_tuning_edits(tmp_path):
    """A kernel that differs from its parent only in constants and literal options is a tuning
    edit: evaluated at once, although its token similarity is above the threshold."""
    from jaxbench.agents.evolve import code_tokens, shape_of

    original = seed("12p_rmsnorm", "tpu")
    tuned = original.replace("1e-5", "1e-6")
    assert similarity(original, tuned) > 0.95  # the threshold's default: a "near-duplicate"
    assert shape_of(code_tokens(original)) == shape_of(code_tokens(tuned))
    calls, child, evaluator = _evolve_once(tmp_path, "12p_rmsnorm", [f"```python\n{tuned}```"])
    assert calls == ["gen0/island0/c0"] and "novelty_rejections" not in child
    assert evaluator.calls == 2  # the seed and the tuned kernel
    # an identical kernel is still a duplicate, and a structural near-copy still near
    assert shape_of(code_tokens(original)) != shape_of(code_tokens(
        original.replace("1e-5", "1e-5 + 0")))


def test_evolve_asks_again_for_an_answer_without_a_usable_kernel(tmp_path):
    """A diff edit that does not apply (or an answer with neither edits nor code) spends no
    evaluation: the model is asked again, within the novelty allowance."""
    stale = "<<<<<<< SEARCH\nno such line in the kernel\n=======\nx = 1\n>>>>>>> REPLACE\n"
    calls, child, evaluator = _evolve_once(tmp_path, "l1_relu",
                                           [stale, "I would rather not.", kernels("tpu", 1)[0]],
                                           patches="1,0,0")
    assert calls == ["gen0/island0/c0", "gen0/island0/c0/retry1", "gen0/island0/c0/retry2"]
    assert child["step"] == "gen0/island0/c0/retry2"
    reasons = [r["unusable"] for r in child["novelty_rejections"]]
    assert reasons == ["edit 1 did not apply: its SEARCH text is not found in the kernel",
                       "the answer has neither SEARCH/REPLACE blocks nor a code block"]
    assert evaluator.calls == 2  # the seed and the usable kernel: nothing spent on the refusal


def test_evolve_prompts_carry_archive_inspirations_worst_to_best_and_crossover(tmp_path):
    answers = [fast(1.0 + i / 10, str(i)) for i in range(30)]
    run = RunDir.open(tmp_path / "run", {})
    optimize(["8p_gemm"], get_method("evolve", islands=2, children=2, seed_islands=0,
                                     patch_probabilities="0,1,1"),
             get_model(script(tmp_path / "s", *answers)), run, budget=12, target="tpu",
             mode="interpret", trials=1, workers=1, evaluator=SpeedEvaluator())
    prompts = [c["prompt"] for c in events_of(run, "llm_call")]
    inspired = [p for p in prompts if "## Other kernels from the archive (worst to best)" in p]
    assert inspired
    for prompt in inspired:
        shown = prompt.split("## Other kernels from the archive")[1].split("## Current kernel")[0]
        shown = shown.split("## Kernel A")[0]
        speeds = [float(s) for s in SPEED.findall(shown)]
        assert speeds == sorted(speeds)  # the best comes last
    crosses = [e for e in events_of(run, "evaluation") if e.get("mutation") == "cross"]
    assert crosses and all(e["crossover_with"] for e in crosses)
    cross_prompt = next(p for p in prompts if "## Kernel B" in p)
    assert "## Kernel A" in cross_prompt and "Combine the strengths of kernels A and B" in cross_prompt


def _program(step: str, speed: float | None, island: int = 0, children: int = 0,
             status: str = "correct") -> Program:
    return Program(candidate(step, status, speed, code=f"code {step}"), island, 1, children)


def test_evolve_parent_weights_favour_better_and_less_explored_kernels():
    method = Evolve()
    good, plain = _program("good", 2.0), _program("plain", 1.0)
    rng = random.Random(0)
    picks = [method.pick_parent([good, plain], rng).candidate.step for _ in range(400)]
    assert picks.count("good") > 300
    explored, fresh = _program("explored", 1.0, children=9), _program("fresh", 1.0)
    picks = [method.pick_parent([explored, fresh], rng).candidate.step for _ in range(400)]
    assert picks.count("fresh") > 300  # equal scores: weight 1/(1 + children)
    broken = [_program(f"b{i}", None, status="compile_error") for i in range(3)]
    assert method.pick_parent(broken, rng) in broken  # no correct kernel: by rank


def test_evolve_migration_keeps_each_islands_best():
    method = Evolve(migration_rate=0.5)
    pop = Population([[_program(f"i0k{k}", 1.0 + k, 0) for k in range(4)],
                      [_program("i1k0", 1.0, 1)]], archive_size=4)
    best = pop.islands[0][-1]
    method.migrate(pop, random.Random(0))
    assert best in pop.islands[0] and len(pop.islands[0]) < 4
    moved = [p for p in pop.islands[1] if p.candidate.step.startswith("i0")]
    assert moved and all(p.island == 1 for p in moved)


# -- iterative --------------------------------------------------------------------------------

def test_iterative_derives_its_chains_from_the_budget(tmp_path):
    assert [chain_count(0, b) for b in (1, 4, 7, 8, 12, 16, 144)] == [1, 1, 1, 2, 3, 4, 4]
    assert chain_count(4, 2) == 2 and chain_count(3, 144) == 3
    run = RunDir.open(tmp_path / "run", {})
    optimize(["8p_gemm"], get_method("iterative"), get_model(script(tmp_path / "s", *kernels("tpu", 5))),
             run, budget=6, target="tpu", mode="interpret", trials=1, workers=1,
             evaluator=FakeEvaluator())
    steps = sorted(c["step"] for c in events_of(run, "llm_call"))
    assert steps == [f"chain0/turn{t}" for t in range(6)]  # a budget under 8: one chain refines
    done = events_of(run, "task_done")[0]
    assert done["chains"] == 1 and done["turns_per_chain"] == 6


@pytest.mark.parametrize("chains, turns", [(4, 1), (2, 2)])
def test_iterative_explicit_chains_are_kept_and_reported(tmp_path, chains, turns):
    run = RunDir.open(tmp_path / "run", {})
    optimize(["8p_gemm"], get_method("iterative", chains=chains),
             get_model(script(tmp_path / "s", *kernels("tpu", 5))), run, budget=4, target="tpu",
             mode="interpret", trials=1, workers=1, evaluator=FakeEvaluator())
    done = events_of(run, "task_done")[0]
    assert done["chains"] == chains and done["turns_per_chain"] == turns


# -- reproducible runs ------------------------------------------------------------------------

def _seeded_evolve(tmp_path, name, seed):
    from jaxbench.llm import Sampling

    run = RunDir.open(tmp_path / name, {})
    answers = [fast(1.0 + i / 10, str(i)) for i in range(12)]
    model = get_model(script(tmp_path / f"s{name}", *answers), sampling=Sampling(seed=seed))
    optimize(["8p_gemm"], get_method("evolve", islands=2, children=2, seed_islands=0,
                                     patch_probabilities="1,1,1"),
             model, run, budget=8, target="tpu", mode="interpret", trials=1, workers=1,
             evaluator=SpeedEvaluator())
    evals = sorted(events_of(run, "evaluation"), key=lambda e: e["step"])
    prompts = sorted((c["step"], c["prompt"]) for c in events_of(run, "llm_call"))
    return [(e["step"], e.get("parent"), e.get("origin"), e.get("island"),
             e.get("crossover_with"), e.get("status"), e.get("speedup")) for e in evals], prompts


def test_two_runs_with_one_seed_are_the_same_and_another_seed_chooses_otherwise(tmp_path):
    first, again, other = (_seeded_evolve(tmp_path, name, seed)
                           for name, seed in (("a", 7), ("b", 7), ("c", 8)))
    assert first == again  # every choice, prompt and verdict
    choices = [[e[:5] for e in run[0]] for run in (first, other)]
    assert choices[0] != choices[1]  # parents, mutations or crossover partners differ


def test_providers_that_take_a_seed_get_one_per_call():
    from jaxbench.llm import Sampling

    assert Sampling().call_seed("t/s/0") is None  # no --seed: nothing is sent
    seeded = Sampling(seed=7)
    one, two = seeded.call_seed("t/s/0"), seeded.call_seed("t/s/1")
    assert one == Sampling(seed=7).call_seed("t/s/0") and one != two  # repeated draws differ
    assert 0 <= one < 2**31 and Sampling(seed=8).call_seed("t/s/0") != one
