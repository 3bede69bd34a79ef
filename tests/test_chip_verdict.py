"""The device owner's comparison on the chip (judge/chip_verdict.py), run here on the CPU: it
may only decide a clear pass, with the parent's figures; every other case goes to the parent's
comparison (parent/compare.py), which describes it."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxbench.evaluator.judge.chip_verdict import MARGIN, clear_pass, prepare
from jaxbench.evaluator.parent.compare import check_outputs

ATOL = RTOL = 1e-2
SHAPE = (64, 96)


def _case(seed=0, scale=0.003):
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=SHAPE).astype(np.float32)
    out = (truth + rng.normal(scale=scale, size=SHAPE)).astype(jnp.bfloat16)
    return out, truth


def _parent(out, truth):
    return check_outputs([np.asarray(out)], [jnp.zeros(SHAPE, jnp.bfloat16)], [truth], ATOL, RTOL)


@pytest.mark.parametrize("seed", range(4))
def test_a_clear_pass_has_the_parents_figures(seed):
    out, truth = _case(seed)
    figures = clear_pass([jnp.asarray(out)], [(SHAPE, "bfloat16")], [jnp.asarray(truth)],
                         ATOL, RTOL)
    parent = _parent(out, truth)
    assert parent.ok and figures is not None
    assert figures["max_abs_err"] == pytest.approx(parent.max_abs_err, rel=1e-6)
    assert figures["rel_err"] == pytest.approx(parent.rel_err, rel=1e-4)
    assert figures["tol_fraction"] == pytest.approx(parent.tol_fraction, rel=1e-5)


def test_the_comparison_compiled_ahead_gives_the_same_figures_and_is_used(monkeypatch):
    """The owner compiles the comparison before it holds the chip (``prepare``): the same
    figures as compiling it on use, and ``clear_pass`` calls the prepared one for its type."""
    out, truth = _case(1)
    ready = prepare([(SHAPE, "bfloat16"), (SHAPE, "bfloat16")], ATOL, RTOL)
    assert list(ready) == [(SHAPE, "bfloat16", "float32")]
    args = ([jnp.asarray(out)], [(SHAPE, "bfloat16")], [jnp.asarray(truth)], ATOL, RTOL)
    assert clear_pass(*args, ready) == clear_pass(*args)
    used = []
    compiled = ready[(SHAPE, "bfloat16", "float32")]
    ready[(SHAPE, "bfloat16", "float32")] = lambda *a: used.append(1) or compiled(*a)
    assert clear_pass(*args, ready) is not None and used == [1]
    other = clear_pass([jnp.asarray(out, jnp.float32)], [(SHAPE, "float32")],
                       [jnp.asarray(truth)], ATOL, RTOL, ready)  # no prepared one: on use
    assert other is not None and used == [1]


def _one_element(fraction):
    """A pass everywhere but one element, at ``fraction`` of its tolerance."""
    truth = np.ones(SHAPE, np.float32)
    out = np.ones(SHAPE, np.float32)
    out[3, 5] += fraction * (ATOL + RTOL * 1.0)
    return out, truth


@pytest.mark.parametrize("fraction", [MARGIN + 0.005, 1.2, 40.0])
def test_near_or_over_the_bound_the_parent_decides(fraction):
    out, truth = _one_element(fraction)
    assert clear_pass([jnp.asarray(out)], [(SHAPE, "float32")], [jnp.asarray(truth)],
                      ATOL, RTOL) is None


def test_inside_the_margin_the_chip_decides():
    out, truth = _one_element(0.5)
    figures = clear_pass([jnp.asarray(out)], [(SHAPE, "float32")], [jnp.asarray(truth)],
                         ATOL, RTOL)
    assert figures is not None and figures["tol_fraction"] == pytest.approx(0.5, rel=1e-4)


@pytest.mark.parametrize("bad", ["nan_out", "inf_out", "nan_truth", "shape", "dtype", "count"])
def test_nothing_but_a_clear_pass_is_decided_on_the_chip(bad):
    out, truth = _case()
    out, truth = np.asarray(out), np.asarray(truth)
    outputs, expected, truths = [out], [(SHAPE, "bfloat16")], [truth]
    if bad == "nan_out":
        out[0, 0] = np.nan
    elif bad == "inf_out":
        out[1, 1] = np.inf
    elif bad == "nan_truth":
        truth[2, 2] = np.nan
    elif bad == "shape":
        outputs = [out[:, :-1]]
    elif bad == "dtype":
        outputs = [out.astype(np.float32)]
    else:
        outputs = [out, out]
    assert clear_pass([jnp.asarray(x) for x in outputs], expected,
                      [jnp.asarray(x) for x in truths], ATOL, RTOL) is None


def test_a_zero_tolerance_element_with_an_error_is_never_a_pass():
    out = np.zeros(SHAPE, np.float32)
    out[0, 0] = 1e-6
    assert clear_pass([jnp.asarray(out)], [(SHAPE, "float32")],
                      [jnp.zeros(SHAPE, jnp.float32)], 0.0, 0.0) is None


class _Fit:
    truth_on = "chip"

    def __init__(self, truth):
        self._truth = truth

    def truth(self, inputs, host=True):
        return [np.asarray(self._truth)] if host else [jnp.asarray(self._truth)]


def _judging(truth):
    from types import SimpleNamespace

    from jaxbench.contract import JudgeResponse
    from jaxbench.tasks import get_task

    task = get_task("12p_rmsnorm")
    judging = SimpleNamespace(fit=_Fit(truth), out_types=[(SHAPE, "bfloat16")], task=task,
                              response=JudgeResponse(), truths=[],
                              comparisons=prepare([(SHAPE, "bfloat16")], task.atol, task.rtol))
    judging.span = lambda name, t0: judging.response.spans.setdefault(name, 0.0)
    return judging


def test_the_owner_sends_figures_for_a_clear_pass_and_arrays_otherwise():
    """The runner's device trial (judge/runner.py ``_on_chip``): a clear pass leaves no arrays
    to send; a mismatch sends the outputs and the truth for the parent to compare."""
    from jaxbench.evaluator.judge.runner import _on_chip

    out, truth = _case()
    judging = _judging(truth)
    label, key, sent = _on_chip(judging, "trial0", [1, 2], (), [jnp.asarray(out)])
    assert sent is None and judging.truths == []
    assert set(judging.response.verdicts["trial0"]) == {"max_abs_err", "rel_err",
                                                          "tol_fraction", "key"}
    wrong = np.asarray(out).copy()
    wrong[0, 0] = 10.0
    label, key, sent = _on_chip(judging, "trial1", [3, 4], (), [jnp.asarray(wrong)])
    assert "trial1" not in judging.response.verdicts
    assert np.array_equal(sent[0], wrong) and judging.truths[0][0] == "trial1"
    assert not _parent(sent[0], judging.truths[0][2][0]).ok
