"""The correctness rule: f32 ground truth, exact shape/dtype, no NaN, atol + rtol·|truth|."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbench.evaluator.parent.compare import GroundTruth, check_outputs, derive_keys, key_from_data
from jaxbench.tasks import get_task

pytestmark = pytest.mark.quick  # the quick tier (`pytest -m quick`): the whole module


def _setup():
    task = get_task("8p_gemm")
    key = derive_keys(b"secret", task.id, "small", 1, "trial")[0]
    inputs = task.make_inputs(key_from_data(key), "small")
    return task, key, inputs, GroundTruth()(task, "small", key), task.output_shapes("small")


def test_cached_truth_owns_its_memory():
    # Views of XLA buffers would keep them alive with the cache and free them from
    # whichever thread drops the cache last, at interpreter exit too (jaxlib aborts there).
    *_, truth, _ = _setup()
    assert all(t.flags.owndata and t.dtype == np.float32 for t in truth)


def test_bf16_xla_reference_passes_against_f32_truth():
    task, _, inputs, truth, expected = _setup()
    out = np.asarray(jax.jit(task.reference)(*inputs))
    assert check_outputs([out], expected, truth, task.atol, task.rtol).ok


def test_more_precise_f32_accumulating_kernel_passes():
    task, _, (a, b), truth, expected = _setup()
    out = jnp.matmul(a.astype(jnp.float32), b.astype(jnp.float32),
                     precision="highest").astype(jnp.bfloat16)
    assert check_outputs([np.asarray(out)], expected, truth, task.atol, task.rtol).ok


def test_bf16_accumulation_in_chunks_is_not_what_truth_means():
    # A kernel that rounds its partial sums to bf16 after every 8-wide chunk drifts from the
    # f32 truth; the rule must notice a real precision downgrade like this one.
    task, _, (a, b), truth, expected = _setup()
    acc = jnp.zeros((a.shape[0], b.shape[1]), jnp.bfloat16)
    for k in range(0, a.shape[1], 8):
        acc = (acc + jnp.matmul(a[:, k:k + 8], b[k:k + 8], preferred_element_type=jnp.float32)
               ).astype(jnp.bfloat16)
    verdict = check_outputs([np.asarray(acc)], expected, truth, task.atol, task.rtol)
    assert not verdict.ok and "exceed" in verdict.message


def test_keys_depend_on_the_secret():
    assert derive_keys(b"a", "t", "small", 2, "trial") != derive_keys(b"b", "t", "small", 2, "trial")
    assert derive_keys(b"a", "t", "small", 2, "trial") == derive_keys(b"a", "t", "small", 2, "trial")
    k0, k1 = derive_keys(b"a", "t", "small", 2, "trial")
    assert k0 != k1


def test_nan_and_shape_mismatch_fail():
    task, _, _, truth, expected = _setup()
    bad = np.asarray(truth[0], np.float32).astype(jnp.bfloat16)
    bad[0, 0] = np.nan
    assert "NaN" in check_outputs([bad], expected, truth, 1e-2, 1e-2).message
    assert "shape" in check_outputs([bad[:, :8]], expected, truth, 1e-2, 1e-2).message


def test_a_mismatch_message_says_where_and_by_how_much_never_a_value():
    """Issue 46: the message reaches callers who resubmit (serve, optimize's model); it names
    where, how many elements and the error against the tolerance, never the output's or the
    truth's values (a kernel that outputs an input element learnt the truth from "got X, truth
    Y")."""
    truth = np.full((4, 16), 7.3125, np.float32)
    truth[2, 5] = 11.640625
    got = truth.copy()
    got[2, 5] = -3.359375
    spec = [np.zeros((4, 16), np.float32)]
    verdict = check_outputs([got], spec, [truth], 1e-3, 1e-3)
    assert not verdict.ok and "1 of 64 elements" in verdict.message
    assert "worst at (2, 5)" in verdict.message and "x its tolerance" in verdict.message
    for value in (11.640625, -3.359375, 7.3125):
        for shown in (f"{value:.5g}", f"{value:g}", f"{value}", str(abs(value))[:5]):
            assert shown not in verdict.message, (shown, verdict.message)
    assert "got" not in verdict.message and "truth " not in verdict.message
    fraction = 15.0 / (1e-3 + 1e-3 * 11.640625)
    assert f"{fraction:.3g}x its tolerance" in verdict.message
    scalar = check_outputs([np.float32(3.5)], [np.float32(0)], [np.float32(9.25)], 1e-3, 1e-3)
    assert "3.5" not in scalar.message and "9.25" not in scalar.message
    assert scalar.message.startswith("output: 1 of 1 elements") and ", ;" not in scalar.message


def test_fresh_keys_are_new_for_every_evaluation_and_re_derivable():
    """``Settings.fresh_keys``: each evaluation's keys derive from the run's secret and a nonce
    of its own (recorded as ``trial_nonce``), so they differ between evaluations and an audit
    that knows the secret re-derives them; without it, the run's secret as before."""
    from jaxbench.evaluator.parent.compare import FreshTruth, evaluation_inputs, nonce_secret

    secret, shared = b"s" * 32, GroundTruth()
    assert evaluation_inputs(secret, shared, False) == (None, secret, shared)
    (n1, s1, t1), (n2, s2, _) = (evaluation_inputs(secret, shared, True) for _ in range(2))
    assert isinstance(t1, FreshTruth)
    assert n1 != n2 and len(n1) == 32 and s1 != s2 and secret not in (s1, s2)
    assert nonce_secret(secret, n1) == s1 and nonce_secret(b"t" * 32, n1) != s1
    k1, k2 = (derive_keys(s, "8p_gemm", "small", 3, "trial") for s in (s1, s2))
    assert k1 != k2 and k1 != derive_keys(secret, "8p_gemm", "small", 3, "trial")
    # a fresh key's truth is the same truth, but not kept in the evaluator's cache
    task = get_task("8p_gemm")
    fresh = t1(task, "small", k1[0])
    assert shared._cache == {}
    np.testing.assert_array_equal(fresh[0], GroundTruth()(task, "small", k1[0])[0])
