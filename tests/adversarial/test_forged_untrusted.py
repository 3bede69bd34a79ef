"""A fully compromised untrusted side: whatever files it leaves, the verdict holds.

Each scenario replaces the tracer process with a function that writes into the
tracer's directory what an attacker who controls that process could write
(forged status claims, exports of other computations, links, FIFOs, malformed
arrays). The parent must take only export bytes and failure text, and the judge
must check exactly the module it runs.
"""

import json
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl

from jaxbench.evaluator import Evaluator
from jaxbench.evaluator.arrays import pack
from jaxbench.evaluator.pool import WorkerOutcome
from jaxbench.evaluator.sandbox import exporting
from jaxbench.tasks import get_task

TASK = get_task("8p_gemm")
SPECS = [jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in TASK.input_specs("small")]


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def _pallas_copy(x):
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def _xla_matmul(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)


def _export(fn, platform="tpu", interpret=False):
    closed = jax.make_jaxpr(fn)(*SPECS)
    with_kernels = exporting.scan(closed).kernels
    if platform == "tpu" and with_kernels:
        from jaxbench import compat

        with compat.abstract_tpu(exporting.CROSS_LOWERING_TPU):
            closed = jax.make_jaxpr(fn)(*SPECS)
    return exporting.export(closed, SPECS, platform, interpret=interpret).serialize()


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
        return WorkerOutcome(0, False, False, 0.1, directory, "")

    def close(self):
        pass


def _honest_interpret():
    return _export(lambda a, b: _pallas_copy(_xla_matmul(a, b)) * 0 + _xla_matmul(a, b),
                   "cpu", True)


def _zeros_kernel(a, b):
    def body(a_ref, b_ref, o_ref):
        o_ref[...] = jnp.zeros(o_ref.shape, o_ref.dtype)

    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]),
                                                               a.dtype))(a, b)


def _correct_kernel(a, b):
    def body(a_ref, b_ref, o_ref):
        o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                             preferred_element_type=jnp.float32).astype(o_ref.dtype)

    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]),
                                                               a.dtype))(a, b)


def _link(directory, job):
    real = Path(tempfile.mkdtemp()) / "real.export"
    real.write_bytes(_export(_correct_kernel))
    os.symlink(real, directory / "target.export")
    _write(directory, {"status.json": _status(),
                       "interpret.export": _export(_correct_kernel, "cpu", True)})


def _fifo(directory, job):
    os.mkfifo(directory / "target.export")
    _write(directory, {"status.json": _status()})


def _malformed_probe(directory, job):
    data, layout = pack([("untrusted0", job["fallback_keys"][0], np.zeros((256, 512), np.float32))])
    layout[0]["leaves"][0]["dtype"] = "bfloat16"  # declared bf16, stored as f32
    _write(directory, {
        "status.json": _status(stages={"lower": {"seconds": 0.1, "interpret_export_error": "x"}},
                               probe=layout + [{"label": "untrusted1", "key": [0, 0], "leaves": []}]),
        "target.export": _export(_correct_kernel), "probe.npy": data})


SCENARIOS = [
    # name, scenario, status, stage, words
    ("claims_correct", lambda d, j: _write(d, {"status.json": json.dumps(
        {"status": "correct", "speedup": 99.0}).encode()}), "crashed", "trace",
     "before reporting a verdict"),
    ("traced_without_exports", lambda d, j: _write(d, {"status.json": _status()}),
     "crashed", "lower", "no target export"),
    ("plain_xla_export", lambda d, j: _write(d, {
        "status.json": _status(), "target.export": _export(_xla_matmul),
        "interpret.export": _export(_xla_matmul, "cpu")}),
     "no_pallas", "lower", "no Pallas kernel custom call"),
    ("kernel_copies_xla_result", lambda d, j: _write(d, {
        "status.json": _status(),
        "target.export": _export(lambda a, b: _pallas_copy(_xla_matmul(a, b))),
        "interpret.export": _export(lambda a, b: _pallas_copy(_xla_matmul(a, b)), "cpu", True)}),
     "rejected", "lower", "work outside pallas_call"),
    ("swapped_interpret_export", lambda d, j: _write(d, {
        "status.json": _status(), "target.export": _export(_zeros_kernel),
        "interpret.export": _export(_xla_matmul, "cpu")}),
     "rejected", "lower", "must come from one trace"),
    ("interpret_export_from_other_kernel_plus_xla", lambda d, j: _write(d, {
        "status.json": _status(), "target.export": _export(_zeros_kernel),
        "interpret.export": _honest_interpret()}),
     "rejected", "lower", "must come from one trace"),
    ("target_export_for_cpu", lambda d, j: _write(d, {
        "status.json": _status(), "target.export": _export(_correct_kernel, "cpu", True),
        "interpret.export": _export(_correct_kernel, "cpu", True)}),
     "rejected", "lower", "export is for ('cpu',)"),
    ("symlinked_export", _link, "crashed", "lower", "no target export"),
    ("fifo_export", _fifo, "crashed", "lower", "no target export"),
    ("oversized_status", lambda d, j: _write(d, {
        "status.json": b" " * (2 << 20) + _status(), "target.export": _export(_correct_kernel)}),
     "crashed", "trace", "before reporting a verdict"),
    ("malformed_untrusted_outputs", _malformed_probe, "rejected", "correct",
     "do not match their layout"),
    ("failure_claim_is_believed", lambda d, j: _write(d, {"status.json": json.dumps(
        {"status": "runtime_error", "stage": "correct", "message": "m"}).encode()}),
     "runtime_error", "correct", "m"),
]


@pytest.mark.parametrize("name,scenario,status,stage,words", SCENARIOS,
                         ids=[s[0] for s in SCENARIOS])
def test_forged_untrusted_side_gets_its_verdict(name, scenario, status, stage, words):
    with Evaluator(spares=0) as ev:
        ev.pool.close()
        ev.pool = _CompromisedPool(scenario)
        result = ev.evaluate(TASK.folder / "seed_tpu.py", TASK.id, trials=2, tpu_interpret=False)
    assert (result["status"], result["stage"]) == (status, stage), result["message"]
    assert words in result["message"], result["message"]
    assert result["speedup"] is None


def test_forged_figures_are_ignored():
    """An honest pair of exports with forged claims beside them: the parent takes the exports,
    computes the figures itself, and keeps none of the claimed ones."""
    def scenario(d, j):
        _write(d, {"status.json": _status(speedup=50.0, trials=[], stages={
            "trace": {"seconds": 0.1}, "time": {"speedup": 50.0}, "correct": {"forged": True}}),
            "target.export": _export(_correct_kernel),
            "interpret.export": _export(_correct_kernel, "cpu", True)})

    with Evaluator(spares=0) as ev:
        ev.pool.close()
        ev.pool = pool = _CompromisedPool(scenario)
        result = ev.evaluate(TASK.folder / "seed_tpu.py", TASK.id, trials=2, tpu_interpret=False)
    assert result["status"] == "correct", result["message"]
    assert result["judged_on"] == "trusted_export" and result["trials"] == 2
    assert result["speedup"] is None and "time" not in result["stages"]
    assert "forged" not in result["stages"].get("correct", {})
    # the untrusted side never saw the trial keys
    assert "trial_keys" not in pool.jobs[0] and "recheck_keys" not in pool.jobs[0]


def test_untrusted_fallback_verdicts_are_marked():
    """A tracer that claims its kernel has no exportable interpret lowering is judged on its
    own outputs (forgeable): the verdict says so."""
    def scenario(d, j):
        runs = []
        for i, key in enumerate(j["fallback_keys"]):
            inputs = TASK.make_inputs(jax.random.wrap_key_data(np.asarray(key, np.uint32)), "small")
            runs.append((f"untrusted{i}", key, TASK.reference(*inputs)))
        data, layout = pack(runs)
        _write(d, {"status.json": _status(
            stages={"lower": {"seconds": 0.1, "interpret_export_error": "claimed"}}, probe=layout),
            "target.export": _export(_correct_kernel), "probe.npy": data})

    with Evaluator(spares=0) as ev:
        ev.pool.close()
        ev.pool = _CompromisedPool(scenario)
        result = ev.evaluate(TASK.folder / "seed_tpu.py", TASK.id, trials=2, tpu_interpret=False)
    assert result["judged_on"] == "untrusted_interpreter"
    assert any("judged on the untrusted side" in w for w in result.get("warnings", []))
