"""The trusted runner's device path (timing, recheck, on-device truth), exercised on the CPU.

No accelerator here: the request names platform `cpu`, so the runner lowers the handed-over
jaxpr as the CPU interpreter runs it, with the kernel-presence rule relaxed for this test
only.
"""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbench.evaluator.common.arrays import unpack
from jaxbench.evaluator.judge import rules, runner
from jaxbench.evaluator.parent.compare import GroundTruth, check_outputs, derive_keys
from jaxbench.evaluator.parent.figures import summarize
from jaxbench.evaluator.sandbox import handover
from jaxbench.tasks import get_task


def _device_request(tmp_path, monkeypatch, task):
    source = (task.folder / "seed_gpu.py").read_text()
    namespace: dict = {}
    exec(compile(source, "seed_gpu.py", "exec"), namespace)  # a trusted, shipped seed
    traces = {size: jax.make_jaxpr(namespace["kernel"])(*[
        jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in task.input_specs(size)])
        for size in task.inputs}
    (tmp_path / "jaxpr.pkl").write_bytes(handover.dumps(traces))
    check_target = rules.check_target
    monkeypatch.setattr(rules, "check_target", lambda report, flops, frac, *rest: check_target(
        report.__class__(**{**report.__dict__, "kernel_calls": 1, "kernel_regions": []}), flops,
        1e9))
    keys = derive_keys(b"s", task.id, "small", 2, "trial")
    request = {"dir": str(tmp_path), "task": task.id, "size": "small", "platform": "cpu",
               "target": "gpu",
               "mode": "device", "trial_keys": keys,
               "recheck_keys": derive_keys(b"s", task.id, "small", 1, "recheck"),
               "timing_keys": derive_keys(b"s", task.id, "small", 2, "timing"),
               "timing": {"warmup": 1, "min_reps": 4, "max_reps": 6, "budget_s": 0.1,
                          "device_reps": 4}}
    return request


@pytest.mark.parametrize("on_chip", [True, False], ids=["compared_on_chip", "sent_to_parent"])
def test_device_path_runs_times_rechecks_and_returns_truth(tmp_path, monkeypatch, on_chip):
    """The device path (the CPU standing in for the chip): the trials and the recheck run,
    are timed and compared with their float32 truth on the chip; clear passes send their
    figures only (``verdicts``), and where nothing is a clear pass (the margin at 0) the
    outputs and the truths go to the parent, which finds the same."""
    from jaxbench.evaluator.judge import chip_verdict

    if not on_chip:
        monkeypatch.setattr(chip_verdict, "MARGIN", 0.0)
    task = get_task("12p_rmsnorm")
    request = _device_request(tmp_path, monkeypatch, task)
    response = json.loads(json.dumps(runner.judge(request).to_dict(), default=str))
    assert not response["budget_problem"], response["budget_problem"]
    figures = summarize(response["timing"])
    assert figures["reps"] >= 4 and figures["input_sets"] == 3 and figures["speedup"] > 0
    # device time from the profiler's trace (XLA's CPU thunks here), the wall clock beside it
    assert figures["timing_method"] == "device_trace", figures.get("device_error")
    assert figures["device"]["reps"] == 4 and figures["device"]["source"] == "host_hlo_ops"
    assert figures["wall"]["reps"] >= 4 and figures["wall"]["t_kernel_ms"] > 0
    labels = ["trial0", "trial1", "recheck0"]
    host = GroundTruth()
    if on_chip:
        assert list(response["verdicts"]) == labels and response["trials"] == []
        for label, said in response["verdicts"].items():
            assert 0 < said["tol_fraction"] <= chip_verdict.MARGIN, (label, said)
    else:
        assert response["verdicts"] == {}
        assert [t["label"] for t in response["trials"]] == labels
        outputs = unpack((tmp_path / "outputs.npy").read_bytes(), response["trials"])
        truths = unpack((tmp_path / "truth.npy").read_bytes(), response["truth"])
        for trial in response["trials"]:
            np.testing.assert_allclose(truths[trial["label"]][0],
                                       host(task, "small", trial["key"])[0], rtol=1e-5, atol=1e-5)
            verdict = check_outputs(outputs[trial["label"]], task.output_shapes("small"),
                                    truths[trial["label"]], task.atol, task.rtol)
            assert verdict.ok, verdict.message
    # what fits the (stand-in) chip was decided before the trials, and the spans say where the
    # device work went: each key's inputs drawn once, the truth beside each trial
    assert response["fits"]["reference"] is True and response["fits"]["truth_on"] == "chip"
    # (the reference's compile is kept per owner: a second test in this process finds it)
    assert response["spans"]["reference_compile"] >= 0
    for name in ("inputs", "kernel_compile", "trials", "truth", "time",
                 "compare_on_chip" if on_chip else "outputs"):
        assert response["spans"][name] > 0, name


def test_a_truth_that_cannot_be_computed_is_unverified_not_the_kernels_error(tmp_path,
                                                                              monkeypatch):
    from jaxbench.contract import Rule, StageFailure, Status
    from jaxbench.evaluator.judge import fitting

    task = get_task("12p_rmsnorm")
    request = _device_request(tmp_path, monkeypatch, task)

    def no_room(self, inputs, host=True):
        raise RuntimeError("RESOURCE_EXHAUSTED: out of memory computing the truth")

    monkeypatch.setattr(fitting.Fit, "truth", no_room)
    with pytest.raises(StageFailure) as failed:
        runner.judge(request)
    assert failed.value.status == Status.UNVERIFIED and failed.value.rule == Rule.NO_TRUTH
    assert "float32 truth could not be computed" in failed.value.message
    # the failure's response, assembled where the judge stopped: what it found by then rides
    # along as record fields (the fits, the spans), the same record a success answers with
    said = failed.value.response
    assert (said.status, said.rule, said.message) == (Status.UNVERIFIED, Rule.NO_TRUTH,
                                                      failed.value.message)
    assert said.fits and said.fits["truth_on"] and said.spans["reference_compile"] >= 0
    answered = runner._answer(request, lambda kind: None)
    assert answered.status == Status.UNVERIFIED and answered.fits == said.fits
