"""A kernel that passes interpret=True to its own pallas_call is never `correct`: on a device the
harness would time interpreter code. The tracer rejects it by name; and when a compromised
tracer skips that check and hands in the module such a kernel exports, the trusted judge's
rule (at least one Pallas kernel custom call in the target export) refuses it."""

import json
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp

from jaxbench.evaluator import Evaluator
from jaxbench.evaluator.pool import WorkerOutcome
from jaxbench.tasks import get_task

ROOT = Path(__file__).parents[1]
OWN_INTERPRET = ROOT / "tests/adversarial/kernels/interpret_true_itself.py"
TASK = get_task("8p_gemm")


def test_the_tracer_rejects_it_naming_the_rule(evaluator):
    result = evaluator.evaluate(OWN_INTERPRET, TASK.id, trials=1, tpu_interpret=False)
    assert (result["status"], result["stage"]) == ("rejected", "trace")
    assert "passes interpret=True to pallas_call itself: kernels never choose interpret mode" \
        in result["message"]


def _own_interpret_exports(directory: Path, job: dict) -> None:
    """What a compromised tracer hands in: the kernel's own module, exported as written (its
    pallas_call interpreted, i.e. plain XLA loops), and a 'traced' claim."""
    namespace: dict = {}
    exec(compile(OWN_INTERPRET.read_text(), str(OWN_INTERPRET), "exec"), namespace)  # noqa: S102
    specs = [jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in TASK.input_specs("small")]
    for name, platform in (("target.export", "tpu"), ("interpret.export", "cpu")):
        exported = jax.export.export(jax.jit(namespace["kernel"]), platforms=[platform])(*specs)
        (directory / name).write_bytes(exported.serialize())
    (directory / "status.json").write_text(json.dumps(
        {"status": "traced", "stages": {"trace": {"seconds": 0.1}, "lower": {"seconds": 0.1}},
         "nonce": job["nonce"]}))  # a fully compromised tracer has read its job's token


class _SkippingTracer:
    def run(self, job, timeout_s, memory_bytes):
        directory = Path(tempfile.mkdtemp(prefix="jaxbench-own-interpret-"))
        _own_interpret_exports(directory, job)
        return WorkerOutcome(0, False, False, 0.1, directory, "")

    def close(self):
        pass


def test_the_trusted_judge_refuses_it_when_the_tracer_does_not():
    with Evaluator(spares=0) as ev:
        ev.pool.close()
        ev.pool = _SkippingTracer()
        result = ev.evaluate(OWN_INTERPRET, TASK.id, trials=1, tpu_interpret=False)
    assert (result["status"], result["stage"]) == ("no_pallas", "lower"), result["message"]
    assert "no Pallas kernel custom call" in result["message"]
