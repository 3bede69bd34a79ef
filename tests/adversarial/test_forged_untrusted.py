"""A fully compromised untrusted side: whatever it leaves, the verdict holds.

Each scenario replaces the tracer process with a function that writes into the tracer's
directory what an attacker who controls that process could write (the memory-read forgery of
issue 35 could write anything): forged status claims, hand-overs of other computations,
forged exports and probe outputs of the old design, links, FIFOs, hostile pickles. The parent
takes only the hand-over (``jaxpr.pkl``) and failure text; the judge derives every module,
check and output from the jaxprs in it, so a forgery can only be judged on its own merits.
"""

import json
import os
import pickle
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl

from jaxbench.evaluator import Evaluator
from jaxbench.evaluator.parent.pool import TracerOutcome
from jaxbench.evaluator.sandbox import handover
from jaxbench.evaluator.sandbox.chip import as_chip
from jaxbench.tasks import get_task

TASK = get_task("8p_gemm")


def _specs(size):
    return [jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in TASK.input_specs(size)]


def _handover(fn) -> bytes:
    """What an honest tracer would hand over for ``fn`` (traced as for a TPU v6e)."""
    with as_chip("tpu", "TPU v6 lite"):
        traces = {size: jax.make_jaxpr(fn)(*_specs(size)) for size in TASK.inputs}
    return handover.dumps(traces)


def _status(**fields):
    return json.dumps({"status": "traced", "stages": {"trace": {"seconds": 0.1}},
                       "isolation": "forged", **fields}).encode()


def _write(directory: Path, files: dict) -> None:
    for name, data in files.items():
        (directory / name).write_bytes(data)


class _CompromisedPool:
    """Stands in for the tracer pool: the 'tracer' is an attacker's function."""

    def __init__(self, scenario):
        self.scenario = scenario
        self.jobs = []

    def run(self, job, timeout_s, memory_bytes):
        self.jobs.append(job)
        directory = Path(tempfile.mkdtemp(prefix="jaxbench-forged-"))
        self.scenario(directory, job)
        return TracerOutcome(0, False, False, 0.1, directory, "")

    def close(self):
        pass


def _tiled(body):
    def kernel(a, b):
        (m, k), n = a.shape, b.shape[1]
        return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
                              grid=(m // 256, n // 512),
                              in_specs=[pl.BlockSpec((256, k), lambda i, j: (i, 0)),
                                        pl.BlockSpec((k, 512), lambda i, j: (0, j))],
                              out_specs=pl.BlockSpec((256, 512), lambda i, j: (i, j)))(a, b)

    return kernel


def _dot_body(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def _zeros_body(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.zeros(o_ref.shape, o_ref.dtype)


_correct_kernel, _zeros_kernel = _tiled(_dot_body), _tiled(_zeros_body)


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def _xla_matmul_then_copy(a, b):
    c = jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(c.shape, c.dtype))(c)


def _plain_xla(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)


_CACHE: dict = {}


def _cached(name, fn):
    if name not in _CACHE:
        _CACHE[name] = _handover(fn)
    return _CACHE[name]


def _link(directory, job):
    target = directory.parent / f"{directory.name}-elsewhere.pkl"
    target.write_bytes(_cached("correct", _correct_kernel))
    os.symlink(target, directory / "jaxpr.pkl")
    _write(directory, {"status.json": _status()})


def _fifo(directory, job):
    os.mkfifo(directory / "jaxpr.pkl")
    _write(directory, {"status.json": _status()})


class _Makedirs:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.makedirs, (self.path,))


MARKER = "/tmp/jaxbench_forged_handover_marker"


def _hostile_pickle(directory, job):
    _write(directory, {"status.json": _status(), "jaxpr.pkl": pickle.dumps(
        {"format": "jaxbench-jaxpr/1", "traces": {"small": _Makedirs(MARKER)}, "lines": {}})})


SCENARIOS = [
    # name, scenario, status, stage, words in the message
    ("claims_correct_without_a_handover", lambda d, j: _write(d, {"status.json": json.dumps(
        {"status": "correct", "speedup": 99.0}).encode()}), "crashed", "lower",
     "handed over no traced jaxpr"),
    ("traced_without_a_handover", lambda d, j: _write(d, {"status.json": _status()}),
     "crashed", "lower", "handed over no traced jaxpr"),
    # the forgery of issue 35: a kernel whose Pallas part writes zeros, the rest plain XLA, and
    # the old design's files (exports, probe outputs, a "ran" claim) beside it
    ("zeros_kernel_with_forged_exports_and_claims", lambda d, j: _write(d, {
        "status.json": _status(tpu_interpreter="unsupported: forged", probe=[]),
        "jaxpr.pkl": _cached("zeros", _zeros_kernel),
        "target.export": b"forged", "interpret.export": b"forged", "probe.npy": b"forged"}),
     "incorrect", "correct", "x its tolerance"),
    ("plain_xla_handover", lambda d, j: _write(d, {
        "status.json": _status(), "jaxpr.pkl": _cached("xla", _plain_xla)}),
     "no_pallas", "trace", "no pallas_call"),
    ("kernel_copies_xla_result", lambda d, j: _write(d, {
        "status.json": _status(), "jaxpr.pkl": _cached("copy", _xla_matmul_then_copy)}),
     "no_pallas", "lower", "work outside pallas_call"),
    ("symlinked_handover", _link, "crashed", "lower", "handed over no traced jaxpr"),
    ("fifo_handover", _fifo, "crashed", "lower", "handed over no traced jaxpr"),
    ("hostile_pickle", _hostile_pickle, "rejected", "trace", "makedirs"),
    ("garbage_handover", lambda d, j: _write(d, {
        "status.json": _status(), "jaxpr.pkl": os.urandom(1 << 16)}),
     "rejected", "trace", "hand-over"),
    ("oversized_status", lambda d, j: _write(d, {
        "status.json": b" " * (2 << 20), "jaxpr.pkl": _cached("correct", _correct_kernel)}),
     "correct", "correct", ""),
    ("failure_claim_is_believed", lambda d, j: _write(d, {"status.json": json.dumps(
        {"status": "compile_error", "stage": "trace", "message": "forged failure"}).encode(),
        "jaxpr.pkl": _cached("correct", _correct_kernel)}),
     "compile_error", "trace", "forged failure"),
    ("deeply_nested_status", lambda d, j: _write(d, {
        "status.json": b"[" * 200_000, "jaxpr.pkl": _cached("correct", _correct_kernel)}),
     "correct", "correct", ""),
]


@pytest.mark.parametrize("name,scenario,status,stage,words", SCENARIOS,
                         ids=[s[0] for s in SCENARIOS])
def test_forged_untrusted_side_gets_its_verdict(name, scenario, status, stage, words):
    with Evaluator(spares=0) as ev:
        ev.pool.close()
        ev.pool = _CompromisedPool(scenario)
        result = ev.evaluate(TASK.folder / "seed_tpu.py", TASK.id, trials=2, tpu_interpret=False)
    assert (result.status, result.stage) == (status, stage), result.message
    assert words in result.message, result.message
    assert result.speedup is None
    assert not os.path.lexists(MARKER)


def test_forged_figures_are_ignored():
    """An honest hand-over with forged claims beside it: the parent takes the hand-over,
    computes the figures itself, and keeps none of the claimed ones."""
    def scenario(d, j):
        _write(d, {"status.json": _status(speedup=50.0, trials=[], stages={
            "trace": {"seconds": 0.1}, "time": {"speedup": 50.0}, "correct": {"forged": True}}),
            "jaxpr.pkl": _cached("correct", _correct_kernel)})

    with Evaluator(spares=0) as ev:
        ev.pool.close()
        ev.pool = pool = _CompromisedPool(scenario)
        result = ev.evaluate(TASK.folder / "seed_tpu.py", TASK.id, trials=2, tpu_interpret=False)
    assert result.status == "correct", result.message
    assert result.judged_on == "trusted_export" and result.trials == 2
    assert result.isolation != "forged"  # what the parent set up, not the tracer's word
    assert result.speedup is None and "time" not in result.stages
    assert "forged" not in result.stages.get("correct", {})
    # the untrusted side never saw any key, nor the trusted side's settings
    assert not any("key" in name and pool.jobs[0][name] for name in pool.jobs[0]), pool.jobs[0]


def test_the_tpu_interpreter_check_runs_on_the_trusted_side():
    """No report from the tracer is needed (or read) for the TPU interpreter's check: the judge
    runs it from the hand-over and says so."""
    def scenario(d, j):
        _write(d, {"status.json": _status(), "jaxpr.pkl": _cached("correct", _correct_kernel)})

    with Evaluator(spares=0) as ev:
        ev.pool.close()
        ev.pool = _CompromisedPool(scenario)
        result = ev.evaluate(TASK.folder / "seed_tpu.py", TASK.id, trials=1, tpu_interpret=True)
    assert result.status == "correct", result.message
    assert result.stages["correct"]["tpu_interpreter"] == "ran"


def _deep_directories(directory, job, depth=20_000):
    """A directory chain deeper than any recursive removal goes, beside an honest hand-over."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    _write(directory, {"status.json": _status(), "jaxpr.pkl": _cached("correct", _correct_kernel)})


def _evaluate_forged(scenario, **options):
    with Evaluator(spares=0) as ev:
        ev.pool.close()
        ev.pool = _CompromisedPool(scenario)
        return ev.evaluate(TASK.folder / "seed_tpu.py", TASK.id, trials=2, **options)


def test_deep_directory_chain_is_removed_and_the_parent_survives():
    made = []

    def scenario(d, j):
        made.append(d)
        _deep_directories(d, j)

    result = _evaluate_forged(scenario, tpu_interpret=False)
    assert result.status == "correct", result.message
    assert made and not os.path.lexists(made[0])


def test_an_evaluator_error_is_a_crashed_verdict(monkeypatch):
    """Anything that goes wrong inside one evaluation ends that evaluation as `crashed`, with
    a message, instead of escaping to the caller (a run goes on)."""
    def broken(self, *args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    from jaxbench.evaluator.parent.evaluation import Evaluation

    monkeypatch.setattr(Evaluation, "phase_judge", broken)
    result = _evaluate_forged(lambda d, j: _write(d, {
        "status.json": _status(), "jaxpr.pkl": _cached("correct", _correct_kernel)}),
        tpu_interpret=False)
    assert (result.status, result.stage) == ("crashed", "lower"), result.message
    assert "the evaluator failed on this kernel: RecursionError" in result.message


@pytest.mark.parametrize("claimed, believed", [("trace_error", "trace_error"),
                                               ("outside_flops", None), ("made_up", None)])
def test_a_tracers_rule_code_is_believed_only_among_its_own(claimed, believed):
    """A failure the tracer claims is believed (it can only hurt the kernel), but its rule code
    only when it is one the tracer can give: a forged judge's code (a policy refusal, say)
    would move the failure into another report category."""
    scenario = (lambda d, j: _write(d, {"status.json": json.dumps(
        {"status": "compile_error", "stage": "trace", "message": "forged", "rule": claimed})
        .encode(), "jaxpr.pkl": _cached("correct", _correct_kernel)}))
    with Evaluator(spares=0) as ev:
        ev.pool.close()
        ev.pool = _CompromisedPool(scenario)
        result = ev.evaluate(TASK.folder / "seed_tpu.py", TASK.id, trials=1, tpu_interpret=False)
    assert (result.status, result.stage, result.rule) == ("compile_error", "trace", believed)
