"""A kernel that passes interpret=True to its own pallas_call is never `correct`: on a device the
harness would time interpreter code. The judge rejects it by name from the jaxpr it is handed,
whoever hands it over (a compromised tracer included)."""

import json
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp

from jaxbench.evaluator import Evaluator
from jaxbench.evaluator.parent.pool import TracerOutcome
from jaxbench.tasks import get_task

ROOT = Path(__file__).parents[1]
OWN_INTERPRET = ROOT / "tests/adversarial/kernels/interpret_true_itself.py"
TASK = get_task("8p_gemm")


def test_the_tracer_rejects_it_naming_the_rule(evaluator):
    result = evaluator.evaluate(OWN_INTERPRET, TASK.id, trials=1, tpu_interpret=False)
    assert (result.status, result.stage) == ("rejected", "trace")
    assert "passes interpret=True to pallas_call itself: kernels never choose interpret mode" \
        in result.message


def _own_interpret_handover(directory: Path, job: dict) -> None:
    """What a compromised tracer hands in: the kernel's own jaxprs, its pallas_call set to
    interpret, and a 'traced' claim."""
    from jaxbench.evaluator.sandbox import handover

    namespace: dict = {}
    exec(compile(OWN_INTERPRET.read_text(), str(OWN_INTERPRET), "exec"), namespace)  # noqa: S102
    traces = {size: jax.make_jaxpr(namespace["kernel"])(*[
        jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in TASK.input_specs(size)])
        for size in TASK.inputs}
    (directory / "jaxpr.pkl").write_bytes(handover.dumps(traces))
    (directory / "status.json").write_text(json.dumps(
        {"status": "traced", "stages": {"trace": {"seconds": 0.1}}}))


class _CompromisedTracer:
    def run(self, job, timeout_s, memory_bytes):
        directory = Path(tempfile.mkdtemp(prefix="jaxbench-own-interpret-"))
        _own_interpret_handover(directory, job)
        return TracerOutcome(0, False, False, 0.1, directory, "")

    def close(self):
        pass


def test_the_trusted_judge_refuses_it_whoever_hands_it_over():
    with Evaluator(spares=0) as ev:
        ev.pool.close()
        ev.pool = _CompromisedTracer()
        result = ev.evaluate(OWN_INTERPRET, TASK.id, trials=1, tpu_interpret=False)
    assert (result.status, result.stage) == ("rejected", "trace"), result.message
    assert "passes interpret=True to pallas_call itself" in result.message
