"""The correctness rule: f32 ground truth, exact shape/dtype, no NaN, atol + rtol·|truth|."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbench.evaluator.judge.compare import GroundTruth, check_outputs, derive_keys, key_from_data
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
