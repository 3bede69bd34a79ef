"""Nothing learnt from one verdict applies to the next (issue 46, item 3): an adaptive caller of
``jaxbench serve`` that submits, reads what the service answers and resubmits never reaches
``correct`` without computing the task.

The attacker has read the source. Its kernel computes no cross entropy: one Pallas call reads
one input element as a fingerprint and answers from a table of (fingerprint, loss) pairs it
learnt from earlier verdicts, else the fingerprint itself. From each ``incorrect`` verdict it
learns the failing trial's pair, from whatever the service says: the message's values where
there are any ("got X, truth Y"), else ``max_abs_err`` (``|fp - loss|``) and ``tol_fraction``
(``|fp - loss| / (atol + rtol·|loss|)``), which together give both. Were the trial inputs the
same for every evaluation (one secret for the service's life, as before issue 46), the table
would cover the three trials and the interpreter's run by the fifth submission and the kernel
would be ``correct``; with fresh keys per evaluation every pair it learns is of inputs that
never come again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from serve_helpers import Server, events  # noqa: E402

from jaxbench.contract import EvaluationResult  # noqa: E402

TASK = "13p_cross_entropy"
ATOL = RTOL = 1e-3  # the task's (checked below against the service's own tolerance)
STEPS = 8
TOKEN = "oracle-token-0123456789abcdef"

_TEMPLATE = '''
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"

# (fingerprint, loss) pairs learnt from earlier verdicts; submission {step}
TABLE = {table!r}


def _body(h_ref, o_ref):
    fp = h_ref[0:1, 0:1].astype(jnp.float32)
    out = fp
    for f, loss in TABLE:
        out = jnp.where(jnp.abs(fp - f) <= 1e-4 * max(1.0, abs(f)), jnp.float32(loss), out)
    o_ref[...] = jnp.broadcast_to(out, o_ref.shape)


def kernel(hidden, weight, labels):
    out = pl.pallas_call(
        _body, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32), grid=(1,),
        in_specs=[pl.BlockSpec((8, 128), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((8, 128), lambda i: (0, 0)))(hidden)
    return out[0, 0]
'''


def attacker_source(table: list[tuple[float, float]], step: int = 0) -> str:
    return _TEMPLATE.format(table=[(float(f), float(y)) for f, y in table], step=step)


def learn(message: str, result: EvaluationResult) -> tuple[float, float] | None:
    """The failing trial's (fingerprint, loss) from a verdict: the kernel output its
    fingerprint, so "got" is the fingerprint and "truth" the loss; without values in the
    message, from the error and its fraction of the tolerance (the loss is positive, above any
    fingerprint of a standard normal input)."""
    found = re.search(r"got (-?[\d.e+-]+), truth (-?[\d.e+-]+)", message)
    if found:
        return float(found.group(1)), float(found.group(2))
    err, fraction = result.max_abs_err, result.tol_fraction
    if not err or not fraction:
        return None
    loss = (err / fraction - ATOL) / RTOL  # err = fraction * (atol + rtol * loss)
    return loss - err, loss


def test_learn_recovers_a_pair_from_the_error_figures():
    """The learning step the loop relies on is exact enough to make a kernel pass where the
    inputs repeat (so the loop below fails if they do)."""
    fp, loss = 0.7109375, 9.8765
    err = loss - fp
    verdict = EvaluationResult(task=TASK, target="tpu", mode="interpret", size="small",
                               status="incorrect")
    pair = learn("output: 1 of 1 elements exceed ...", verdict.replace(
        max_abs_err=err, tol_fraction=round(err / (ATOL + RTOL * loss), 4)))
    assert pair is not None and abs(pair[0] - fp) < 1e-5 and abs(pair[1] - loss) < 1e-5
    assert learn("worst at (): got 0.5, truth 7.25", verdict) == (0.5, 7.25)


def test_an_adaptive_oracle_over_serve_never_becomes_correct(tmp_path):
    from jaxbench.serve import Client
    from jaxbench.tasks import get_task

    task = get_task(TASK)
    assert (task.atol, task.rtol) == (ATOL, RTOL)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"oracle:{TOKEN}\n")
    service = Server(tmp_path / "run", "--workers", "1", "--tokens", str(tokens))
    table: list[tuple[float, float]] = []
    views = []
    try:
        with Client(service.url, token=TOKEN, retries=0) as client:
            for step in range(STEPS):
                view = client.evaluate(attacker_source(table, step), TASK, timeout_s=600)
                views.append(view)
                assert view.state == "done", view
                assert view.status != "correct", (
                    f"submission {step + 1} was correct from {len(table)} learnt pairs: the "
                    f"trial inputs repeat between evaluations\n{view}")
                assert view.status == "incorrect", view  # judged, and wrong: it learns
                message = view.message or ""
                assert not re.search(r"\bgot\b|\btruth -?\d", message), message
                pair = learn(message, view.result)
                assert pair is not None, view
                table.append(pair)
    finally:
        assert service.stop() in (0, -15), service.log()
    # Every evaluation drew its own keys, recorded in its event (an audit re-derives them
    # from the secret a run reveals and this nonce).
    nonces = [e.get("trial_nonce") for e in events(service.out) if e.get("type") == "evaluation"]
    assert len(nonces) == STEPS and all(nonces) and len(set(nonces)) == STEPS, nonces
    # new inputs every time: a new truth (a bf16 fingerprint alone repeats now and then)
    assert len({loss for _, loss in table}) == STEPS, table


def test_fresh_keys_draw_new_inputs_and_keep_no_truth_behind():
    """Two evaluations of an honest kernel with fresh keys: both `correct`, each with its own
    ``trial_nonce``, and the evaluator keeps none of their truths (a long service would
    otherwise hold every evaluation's: 8 MiB each for 12p at size small)."""
    from jaxbench.evaluator import Evaluator

    seed = (Path(__file__).parents[1] / "src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_tpu.py")
    with Evaluator(spares=0) as evaluator:
        results = [evaluator.evaluate(seed.read_text() + f"\n# {i}\n", "12p_rmsnorm",
                                      mode="interpret", trials=2, fresh_keys=True)
                   for i in range(2)]
        kept = dict(evaluator.truth._cache)
    assert [r.status for r in results] == ["correct", "correct"], results
    assert results[0].trial_nonce != results[1].trial_nonce
    assert kept == {}
