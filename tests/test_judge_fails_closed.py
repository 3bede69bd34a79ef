"""Issue 46, items 2, 7 and 8 on the trusted side without a tracer: the judge fails closed (a
counter or rule that raises makes the verdict `unverified`, naming the step, never skipping a
rule), a policy refusal is `no_pallas` and earns what `no_pallas` earns, and the
uninitialised-memory verdict names where the two fills differ and what the grid never writes."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl

from jaxbench.contract import (
    POLICY_RULES,
    Category,
    EvaluationResult,
    Rule,
    StageFailure,
    Status,
    category_of,
)
from jaxbench.evaluator.judge import coverage, kernel_work, rules, runner
from jaxbench.serve.rewards import RewardTable, reward


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def _blocked_copy(x, rows=32):
    """A copy over ``x.shape[0] // rows`` blocks of ``rows``: a remainder is never written."""
    return pl.pallas_call(
        _copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(x.shape[0] // rows,),
        in_specs=[pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0)))(x)


def _judging(traced):
    """What ``structure_rules`` reads of a request's state: a copy task of 100 x 128."""
    task = SimpleNamespace(flops=lambda size: 0.0, work="bytes")
    request = SimpleNamespace(max_outside_flops_fraction=0.1)
    judging = SimpleNamespace(size="small", lowered=SimpleNamespace(traces={"small": traced}),
                              payload={"lines": {}}, platform="tpu", task=task, request=request,
                              in_types=[((100, 128), "float32")],
                              out_types=[((100, 128), "float32")])
    return judging


SPEC = jax.ShapeDtypeStruct((100, 128), jnp.float32)


def test_a_counter_that_raises_makes_the_verdict_unverified(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("counter broke")

    monkeypatch.setattr(kernel_work, "count", broken)
    judging = _judging(jax.make_jaxpr(_blocked_copy)(SPEC))
    with pytest.raises(StageFailure) as failure:
        runner._structure_rules(judging, target=None)
    assert (failure.value.status, failure.value.rule) == (Status.UNVERIFIED,
                                                          Rule.KERNEL_WORK_FAULT)
    assert "counter broke" in failure.value.message


def test_a_rule_that_raises_makes_the_verdict_unverified(monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("rule broke")

    monkeypatch.setattr(runner, "_structure", lambda target, platform: object())
    monkeypatch.setattr(rules, "check_target", broken)
    judging = _judging(jax.make_jaxpr(_blocked_copy)(SPEC))
    with pytest.raises(StageFailure) as failure:
        runner._structure_rules(judging, target=None)
    assert (failure.value.status, failure.value.rule) == (Status.UNVERIFIED,
                                                          Rule.STRUCTURE_RULE_FAULT)


def test_a_jaxpr_nested_past_the_counters_depth_raises_rather_than_guessing(monkeypatch):
    fn = _blocked_copy
    for _ in range(5):
        fn = jax.jit(fn)
    traced = jax.make_jaxpr(fn)(SPEC)
    assert kernel_work.count(traced).kernels  # read at the depth allowed
    monkeypatch.setattr(kernel_work, "MAX_DEPTH", 3)
    with pytest.raises(kernel_work.Unreadable):
        kernel_work.count(traced)


def test_the_fault_codes_are_unverified_in_the_taxonomy():
    for rule in (Rule.KERNEL_WORK_FAULT, Rule.STRUCTURE_RULE_FAULT):
        assert category_of(Status.UNVERIFIED, "lower", rule) == Category.UNVERIFIED


# -- item 7: too much work in XLA is no_pallas, never rejected -----------------------------------
def _result(status, rule, mode="interpret"):
    return EvaluationResult(task="8p_gemm", target="tpu", mode=mode, size="small", status=status,
                            rule=rule)


def test_a_policy_refusal_earns_what_no_pallas_earns_never_less():
    plain = reward(_result("no_pallas", "no_kernel"))["value"]
    for rule in POLICY_RULES:
        now = reward(_result("no_pallas", rule))["value"]
        # an older run's record, as its events hold it
        before = reward({"status": "rejected", "rule": rule, "mode": "interpret"})["value"]
        assert now == before == plain, rule  # an older run's record reads the same
    # a table that changes no_pallas carries the policy refusals with it
    table = RewardTable.from_dict({"statuses": {"no_pallas": -0.1}})
    assert reward({"status": "rejected", "rule": "outside_flops"}, table)["value"] == -0.1
    # gaming keeps rejected's reward
    assert reward(_result("rejected", "sandbox", mode=""))["value"] == -1.0


# -- item 8: where the outputs depend on uninitialised memory ------------------------------------
def test_the_grid_that_does_not_divide_an_output_is_named_with_its_uncovered_range():
    found = coverage.uncovered(jax.make_jaxpr(_blocked_copy)(SPEC))
    assert [(e["output"], e["axis"], e["gaps"], e["block"], e["grid"]) for e in found] == [
        (0, 0, [(96, 100)], (32, 128), (3,))]
    assert "never write indices 96:100 of dimension 0" in coverage.describe(found)


def test_a_grid_that_covers_its_output_names_nothing():
    cdiv = lambda x: pl.pallas_call(  # noqa: E731 - a ceiling grid: the edge block is masked
        _copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(pl.cdiv(x.shape[0], 32),),
        in_specs=[pl.BlockSpec((32, 128), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((32, 128), lambda i: (i, 0)))(x)
    assert coverage.uncovered(jax.make_jaxpr(cdiv)(SPEC)) == []
    assert coverage.uncovered(jax.make_jaxpr(_blocked_copy)(
        jax.ShapeDtypeStruct((96, 128), jnp.float32))) == []


def test_the_uninitialised_verdict_says_where_and_never_a_value():
    first = np.arange(100 * 128, dtype=np.float32).reshape(100, 128) + 12345.5
    second = first.copy()
    second[96:100] = -7.25  # what the other fill left there
    traced = jax.make_jaxpr(_blocked_copy)(SPEC)
    with pytest.raises(StageFailure) as failure:
        runner._same_outputs([first], [second], traced)
    message = failure.value.message
    assert (failure.value.status, failure.value.rule) == (Status.INCORRECT, Rule.UNINITIALISED)
    assert "differs in 512 of 12800 elements at [96:100, :]" in message, message
    assert "blocks (32, 128) over the grid (3,) never write indices 96:100" in message, message
    assert "12345" not in message and "7.25" not in message
    assert category_of(Status.INCORRECT, "correct", Rule.UNINITIALISED) == Category.UNINITIALISED
    runner._same_outputs([first], [first.copy()], traced)  # the same bits: no verdict
