"""Searches that see every measurement, and Autocomp's options as its code and paper define
them: the measurement line on every kernel a prompt shows (Autocomp's ancestors, evolve's
parent and inspirations, the iterative chain's earlier attempts), timed and untimed; only
correct kernels in Autocomp's beam; menu dropout at planning only; "phase i of N"; the
paper preset's 4 + 4 rounds; the beam ranking each mode uses and records."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from agent_fakes import FakeEvaluator, KilledAfter, events_of, fast, kernels, plan, script, verdict

from jaxbench.agents import get_method, optimize
from jaxbench.agents.autocomp import (
    BEAM_RANKING,
    OPTIMIZATION_MENU,
    PRESETS,
    TRANSLATION_MENU,
    Autocomp,
    Node,
    estimated_cost,
)
from jaxbench.agents.base import Candidate
from jaxbench.agents.prompts import measurement_line
from jaxbench.backends.host import versions
from jaxbench.contract import EvaluationResult
from jaxbench.llm import ModelClient, Sampling, get_model
from jaxbench.runs import RunDir

SPEED = re.compile(r"SPEED = ([\d.]+)")
PHASE = re.compile(r"This is phase (\d+) of (\d+) of the search: (translation|optimization)")


class DeviceEvaluator(FakeEvaluator):
    """Stands in for a cluster evaluator in device mode: a kernel that says ``SPEED = X`` is
    correct and timed (speedup X, roofline fraction X / 5); any other is a compile error."""

    def resolve_mode(self, mode: str, target: str) -> str:
        return "device"

    def device_kind(self, target: str) -> str:
        return "TPU v6 lite"

    def slots(self, mode: str, target: str) -> int:
        return 1

    def evaluate(self, code, task_id, settings):  # noqa: ANN001, ANN201
        target, mode, size = settings.target or "tpu", settings.mode, settings.size
        self.calls += 1
        start = EvaluationResult.start(task_id, target, mode, size, code, versions=versions())
        match = SPEED.search(code)
        if match:
            speedup = float(match.group(1))
            return start.replace(status="correct", stage="time", speedup=speedup, t_ref_ms=1.0,
                                 t_kernel_ms=1 / speedup, roofline_fraction=speedup / 5,
                                 max_abs_err=1e-3)
        return start.replace(status="compile_error", stage="lower",
                             message="bad block shape (8, 100)\nTraceback: more lines")


def broken(tag: str) -> str:
    return f"```python\nimport jax\nTARGET = 'tpu'\n\ndef kernel(a, b):\n    return a  # {tag}\n```\n"


def timed_line(speed: float) -> str:
    return (f"Measured: status correct · {1 / speed:.4g} ms · speedup {speed:.3g}x over XLA · "
            f"{speed / 5:.0%} of roofline")


FAILED_LINE = "Measured: status compile_error (lower): bad block shape (8, 100)"


def run_method(tmp_path: Path, name: str, answers: list[str], evaluator, budget: int,
               seed: int | None = None, **options) -> RunDir:  # noqa: ANN001, ANN003
    run = RunDir.open(tmp_path / "run", {})
    sampling = Sampling(seed=seed) if seed is not None else None
    model = get_model(script(tmp_path / "answers", *answers), sampling=sampling)
    optimize(["8p_gemm"], get_method(name, **options), model, run, budget=budget, target="tpu",
             mode="auto", trials=1, workers=1, evaluator=evaluator)
    return run


def prompts_by_step(run: RunDir) -> dict[str, str]:
    return {c["step"]: c["prompt"] for c in events_of(run, "llm_call")}


# -- the measurement line -----------------------------------------------------------------------

def test_measurement_line_says_status_error_and_timing_in_one_line():
    timed = verdict("correct", mode="device", speedup=1.84, t_kernel_ms=0.412,
                    roofline_fraction=0.41)
    assert measurement_line(timed) == ("status correct · 0.412 ms · speedup 1.84x over XLA · "
                                       "41% of roofline")
    assert measurement_line(verdict("correct", mode="interpret", speedup=None)) == (
        "status correct · not timed (interpret mode)")
    wrong = verdict("incorrect", stage="correct", max_abs_err=0.031, tol_fraction=3.1,
                    message="output: 12 of 4096 elements (0.3%) exceed atol 0.001\nmore")
    assert measurement_line(wrong) == ("status incorrect (correct): output: 12 of 4096 elements "
                                       "(0.3%) exceed atol 0.001 · max abs err 0.031 "
                                       "(3.1x the tolerance)")
    long = verdict("compile_error", stage="lower", message="ValueError: " + "x" * 400)
    line = measurement_line(long)
    assert line.startswith("status compile_error (lower): ValueError: xxx") and line.endswith("...")
    assert len(line) < 200 and "\n" not in line


# -- every kernel shown carries its measurement -------------------------------------------------

def test_autocomp_ancestors_and_current_kernel_carry_their_measurements_on_a_device(tmp_path):
    # one plan, one implementation per round: plan, kernel, plan, kernel, ...
    answers = [plan(0), fast(1.2), plan(1), fast(1.5), plan(2), fast(1.1), plan(3), fast(2.0)]
    run = run_method(tmp_path, "autocomp", answers, DeviceEvaluator(), budget=4,
                     beam_width=1, plans=1, implementations=1)
    prompts = prompts_by_step(run)
    round2 = prompts["round2/p0/plan0"]
    history = round2.split("## History of this kernel")[1].split("## The plan that produced")[0]
    assert "PLAN-0" in history and timed_line(1.2) in history  # the ancestor, measured
    current = round2.split("## Current kernel")[1]
    assert "SPEED = 1.5" in current and timed_line(1.5) in current
    # the 1.1x child did not beat its 1.5x parent: round 3 still revises the 1.5x kernel
    round3 = prompts["round3/p0/plan0"]
    assert "SPEED = 1.5" in round3.split("## Current kernel")[1] and "SPEED = 1.1" not in round3
    impl = prompts["round1/p0/plan0/impl0"]
    assert "## Plan\nPLAN-1" in impl and timed_line(1.2) in impl
    assert events_of(run, "task_done")[0]["beam_ranking"] == BEAM_RANKING["device"]


def test_evolve_parent_partner_and_inspirations_carry_their_measurements(tmp_path):
    answers = [fast(1.0 + i / 10, str(i)) if i % 4 else broken(str(i)) for i in range(30)]
    run = run_method(tmp_path, "evolve", answers, DeviceEvaluator(), budget=16, islands=2,
                     children=2, seed_islands=0, patch_probabilities="0,1,1")
    prompts = list(prompts_by_step(run).values())
    inspired = [p for p in prompts if "### Inspiration" in p]
    assert inspired
    for prompt in inspired:
        shown = prompt.split("## Other kernels from the archive")[1].split("\n## ")[0]
        blocks = shown.split("### Inspiration")[1:]
        for block in blocks:
            speed = float(SPEED.search(block).group(1))
            assert timed_line(speed) in block
    shown_kernels = [p.split(f"## {title}")[1] for p in prompts
                     for title in ("Current kernel", "Kernel A", "Kernel B") if f"## {title}" in p]
    assert shown_kernels
    for section in shown_kernels:
        match = SPEED.search(section.split("```")[1])
        assert (timed_line(float(match.group(1))) if match else FAILED_LINE) in section


def test_iterative_shows_every_earlier_attempt_with_its_measurement(tmp_path):
    answers = [fast(1.2, "a"), broken("b"), fast(1.5, "c"), fast(1.1, "d"), broken("e")]
    run = run_method(tmp_path, "iterative", answers, DeviceEvaluator(), budget=5, chains=1)
    prompts = prompts_by_step(run)
    assert "earlier attempts" not in prompts["chain0/turn1"]  # only the previous one so far
    turn4 = prompts["chain0/turn4"]
    history = turn4.split("## Your earlier attempts in this chain (oldest first)\n")[1].split("\n\n")[0]
    assert history.splitlines() == [f"Attempt 1: {timed_line(1.2).removeprefix('Measured: ')}",
                                    f"Attempt 2: {FAILED_LINE.removeprefix('Measured: ')}",
                                    f"Attempt 3: {timed_line(1.5).removeprefix('Measured: ')}"]
    previous = turn4.split("## Your previous attempt (attempt 4)")[1]
    assert timed_line(1.1) in previous
    best = turn4.split("## Your best correct kernel so far")[1].split("## Your previous")[0]
    assert "SPEED = 1.5" in best and timed_line(1.5) in best


def test_untimed_kernels_say_so_in_interpret_mode(tmp_path):
    run = run_method(tmp_path, "iterative", kernels("tpu", 6), FakeEvaluator(), budget=4, chains=1)
    correct = [e for e in events_of(run, "evaluation") if e["status"] == "correct"]
    assert correct  # the fake passes every other kernel
    last = prompts_by_step(run)["chain0/turn3"]
    assert "status correct · not timed (interpret mode)" in last
    assert "speedup" not in last.split("## Your earlier attempts")[1]


# -- Autocomp's beam ----------------------------------------------------------------------------

def _node(step: str, status: str = "correct", speedup: float | None = None,
          structure: dict | None = None, parent: Node | None = None, key: str = "") -> Node:
    result = verdict(status, speedup=speedup, max_abs_err=0.0, structure=structure)
    return Node(Candidate(step, 0, f"code {step}", result), "plan", parent, key or step)


def test_autocomp_keeps_failing_kernels_out_of_the_beam_by_default(tmp_path):
    failing = _node("c", status="compile_error")
    assert Autocomp().select([None], [failing]) == [None]  # the reference stays
    assert not Autocomp().beats(_node("c", status="incorrect").candidate,
                                _node("p", status="compile_error"))
    legacy = Autocomp(translate_progress=True)
    assert legacy.select([None], [failing]) == [failing]
    answers = [plan(0), broken("a"), plan(1), broken("b"), plan(2), fast(1.0)]
    for progress in (False, True):
        run = run_method(tmp_path / str(progress), "autocomp", answers, DeviceEvaluator(),
                         budget=3, beam_width=1, plans=1, implementations=1,
                         translate_progress=progress)
        round1 = prompts_by_step(run)["round1/p0/plan0"]
        # by default round 1 starts again from the reference; the legacy rule revises the failure
        assert ("## Current kernel" in round1) is progress
        assert ("there is no kernel yet" in round1) is not progress
        assert events_of(run, "task_done")[0]["beam_rule"].startswith("correct kernels")


def test_autocomp_ranks_by_an_estimated_cost_without_timings():
    def structure(share: float, calls: int) -> dict:
        return {"kernel_calls": calls, "outside_flops": share * 100.0, "task_flops": 100.0}

    parent = _node("p", structure=structure(0.05, 2))
    kids = [_node("same", structure=structure(0.05, 2), parent=parent),
            _node("fused", structure=structure(0.05, 1), parent=parent),
            _node("inside", structure=structure(0.0, 3), parent=parent),
            _node("unknown", parent=parent)]
    method = Autocomp(beam_width=4)
    assert [method.beats(k.candidate, parent, timed=False) for k in kids] == [False, True, True, False]
    beam = method.select([parent], kids, timed=False)
    assert [n.candidate.step for n in beam] == ["inside", "fused", "p"]
    assert estimated_cost(kids[3].candidate) == (float("inf"), float("inf"))
    # while translating, any correct child may enter; the estimate still ranks them
    beam = method.select([parent], kids, timed=False, translating=True)
    assert [n.candidate.step for n in beam][:3] == ["inside", "fused", "same"]


def test_autocomp_records_the_beam_ranking_it_used(tmp_path):
    run = run_method(tmp_path, "autocomp", kernels("tpu", 6), FakeEvaluator(), budget=2, plans=1)
    done = events_of(run, "task_done")[0]
    assert done["beam_ranking"] == BEAM_RANKING["interpret"]
    assert "interpret mode" in done["beam_ranking"] and "outside kernels" in done["beam_ranking"]


# -- menu dropout, phases, the paper preset -----------------------------------------------------

def test_autocomp_menu_dropout_applies_to_optimization_planning_only(tmp_path):
    answers = [fast(1.0 + i / 100, str(i)) for i in range(60)]
    run = run_method(tmp_path, "autocomp", answers, DeviceEvaluator(), budget=16, beam_width=2,
                     plans=4, implementations=1, menu_dropout=0.6)
    every_option = TRANSLATION_MENU["tpu"] + OPTIMIZATION_MENU["tpu"]
    translation, optimization = [], []
    for call in events_of(run, "llm_call"):
        if call["kind"] == "kernel":  # implementation prompts carry no menu at all
            assert "## Strategies" not in call["prompt"]
            assert not any(option in call["prompt"] for option in every_option)
            continue
        section = call["prompt"].split("## Strategies\n")[1].split("\n\n")[0]
        options = tuple(line.split(". ", 1)[1] for line in section.splitlines())
        (translation if call["step"].startswith("round0/") else optimization).append(options)
    assert translation and all(m == TRANSLATION_MENU["tpu"] for m in translation)  # shown whole
    assert len(optimization) >= 4 and len(set(optimization)) > 1  # dropped at random, per plan
    assert all(set(m) <= set(OPTIMIZATION_MENU["tpu"]) for m in optimization)
    assert any(len(m) < len(OPTIMIZATION_MENU["tpu"]) for m in optimization)


def test_autocomp_prompts_say_which_phase_of_how_many(tmp_path):
    answers = [fast(1.0 + i / 10, str(i)) for i in range(40)]
    # budget 12 = round 0 (the reference: 2 plans x 2) + round 1 (2 entries x 2 plans x 2)
    run = run_method(tmp_path / "budget", "autocomp", answers, DeviceEvaluator(), budget=12,
                     beam_width=2, plans=2, implementations=2)
    seen = set()
    for step, prompt in prompts_by_step(run).items():
        number, count, kind = PHASE.search(prompt).groups()
        round_no = int(step.split("/")[0].removeprefix("round"))
        assert (int(number), int(count)) == (round_no + 1, 2)
        assert kind == ("translation" if round_no == 0 else "optimization")
        seen.add(round_no)
    assert seen == {0, 1}
    # fixed rounds: N is the rounds option, the first translate_rounds are translation
    run = run_method(tmp_path / "fixed", "autocomp", answers, DeviceEvaluator(), budget=40,
                     beam_width=1, plans=1, implementations=1, rounds=3, translate_rounds=2)
    phases = {step: PHASE.search(prompt).groups() for step, prompt in prompts_by_step(run).items()}
    assert sorted(phases) == [f"round{r}/p0/plan0{impl}" for r in range(3) for impl in ("", "/impl0")]
    assert {s: v for s, v in phases.items() if "impl" not in s} == {
        "round0/p0/plan0": ("1", "3", "translation"), "round1/p0/plan0": ("2", "3", "translation"),
        "round2/p0/plan0": ("3", "3", "optimization")}


def test_the_paper_preset_runs_four_translation_then_four_optimization_rounds(tmp_path):
    method = get_method("autocomp", preset="paper")
    assert {k: method.options[k] for k in PRESETS["paper"]} == {
        "beam_width": 4, "plans": 4, "implementations": 2, "rounds": 8, "translate_rounds": 4,
        "menu_dropout": 0.75, "translate_threshold": 15.0}
    assert get_method("autocomp", preset="paper", plans="1").plans == 1  # explicit options win
    with pytest.raises(ValueError, match="preset"):
        get_method("autocomp", preset="nope")
    run = run_method(tmp_path, "autocomp", kernels("tpu", 64), FakeEvaluator(), budget=400,
                     preset="paper")
    calls = events_of(run, "llm_call")
    rounds = sorted({int(c["step"].split("/")[0].removeprefix("round")) for c in calls})
    assert rounds == list(range(8))
    samples = [e for e in events_of(run, "evaluation") if e["sample"] is not None]
    assert len(samples) <= 8 + 7 * 32 < 400  # it stopped after 8 rounds, not for the budget
    for call in calls:
        if call["kind"] != "plan":
            continue
        round_no = int(call["step"].split("/")[0].removeprefix("round"))
        kind = "translation" if round_no < 4 else "optimization"
        assert PHASE.search(call["prompt"]).groups() == (str(round_no + 1), "8", kind)
        shown = call["prompt"].split("## Strategies\n")[1].split("\n\n")[0]
        options = {line.split(". ", 1)[1] for line in shown.splitlines()}
        if round_no < 4:  # every beam entry is translated, with the whole menu
            assert options == set(TRANSLATION_MENU["tpu"])
        else:  # the beam holds correct kernels only, optimized
            assert options <= set(OPTIMIZATION_MENU["tpu"])


def test_autocomp_resumes_to_the_same_search(tmp_path):
    answers = [fast(1.0 + i / 10, str(i)) if i % 3 else broken(str(i)) for i in range(24)]
    whole = run_method(tmp_path / "whole", "autocomp", answers, DeviceEvaluator(), budget=10,
                       seed=3, beam_width=2, plans=2, implementations=2, menu_dropout=0.5)
    directory = tmp_path / "killed-answers"
    spec = script(directory, *answers)
    run = RunDir.open(tmp_path / "killed", {})
    method = get_method("autocomp", beam_width=2, plans=2, implementations=2, menu_dropout=0.5)
    options = dict(budget=10, target="tpu", mode="auto", trials=1, workers=1)
    with pytest.raises(KeyboardInterrupt):
        optimize(["8p_gemm"], method, ModelClient(KilledAfter(directory, 7), spec, retries=0,
                                                  sampling=Sampling(seed=3)),
                 run, evaluator=DeviceEvaluator(), **options)
    optimize(["8p_gemm"], method, get_model(spec, sampling=Sampling(seed=3)),
             RunDir.open(tmp_path / "killed", {}), evaluator=DeviceEvaluator(), **options)
    again = RunDir.open(tmp_path / "killed", {})
    steps = [c["step"] for c in events_of(again, "llm_call")]
    assert len(steps) == len(set(steps))  # nothing asked twice
    assert prompts_by_step(again) == prompts_by_step(whole)

    def verdicts(r: RunDir) -> dict:
        return {e["step"]: (e["status"], e["speedup"]) for e in events_of(r, "evaluation")}

    assert verdicts(again) == verdicts(whole)
