"""Fits the chip, or says so (jaxbench.evaluator.judge.fitting), on the CPU: XLA's memory analysis
of the compiled reference and float32 truth against a chip memory the test sets.

A reference that does not fit is not timed and the kernel stays `correct` with the reason; the
truth is computed whole where it fits, in batch slices where only those fit, else on the host;
every task that declares a batch really is independent along it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbench.evaluator.judge import fitting
from jaxbench.tasks import get_task, list_tasks
from jaxbench.tasks.spec import Task, normal


def _attention(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k, preferred_element_type=jnp.float32)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1).astype(v.dtype), v)


def _batched_task(batch: str | None = "B") -> Task:
    return Task("t_fit_attention", reference=_attention,
                sizes={"small": dict(B=4, H=2, S=128, D=32), "full": dict(B=4, H=2, S=128, D=32)},
                inputs=lambda d: [normal("q", (d.B, d.H, d.S, d.D)),
                                  normal("k", (d.B, d.H, d.S, d.D)),
                                  normal("v", (d.B, d.H, d.S, d.D))],
                flops=lambda d: 4 * d.B * d.H * d.S * d.S * d.D, batch=batch)


def _needed(fn, specs) -> int:
    return fitting._needed(jax.jit(fn).lower(*specs).compile())


@pytest.fixture(autouse=True)
def _fresh():
    fitting._KEPT.clear()
    yield
    fitting._KEPT.clear()


def _inputs(task, size="small"):
    return task.make_inputs(jax.random.key(3), size)


def test_what_fits_is_timed_and_its_truth_is_whole(monkeypatch):
    task = _batched_task()
    monkeypatch.setattr(fitting, "chip_memory", lambda: 2**40)
    fit = fitting.check(task, "small")
    assert fit.reference is not None and fit.reason == "" and fit.truth_on == "chip"
    assert fit.record()["reference"] is True
    assert fitting.check(task, "small") is fit  # compiled once per owner


def test_a_reference_that_does_not_fit_is_not_timed_and_says_why(monkeypatch):
    task = _batched_task(batch=None)
    monkeypatch.setattr(fitting, "chip_memory", lambda: 4096)
    fit = fitting.check(task, "small")
    assert fit.reference is None
    assert "does not fit the chip" in fit.reason and "GiB" in fit.reason
    assert fit.record()["reference_bytes"] > fit.record()["available_bytes"]
    assert fit.truth_on == "host CPU"  # no batch to slice: the host computes it
    truth = fit.truth(_inputs(task))
    whole = jax.jit(fitting._float32_reference(task))(*_inputs(task))
    np.testing.assert_allclose(truth[0], np.asarray(whole, np.float32), rtol=1e-6)


def test_a_truth_too_big_whole_is_computed_in_batch_slices_and_equals_the_whole(monkeypatch):
    task = _batched_task()
    specs = [jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in task.input_specs("small")]
    whole = _needed(fitting._float32_reference(task), specs)
    # room for a quarter of the batch but not for half of it
    quarter = [jax.ShapeDtypeStruct((1, *s.shape[1:]), s.dtype) for s in specs]
    half = [jax.ShapeDtypeStruct((2, *s.shape[1:]), s.dtype) for s in specs]
    need_quarter = _needed(fitting._float32_reference(task), quarter)
    need_half = _needed(fitting._float32_reference(task), half)
    assert need_quarter < need_half < whole
    room = int((need_quarter + need_half) / 2 / fitting.HEADROOM)
    monkeypatch.setattr(fitting, "chip_memory", lambda: room)
    fit = fitting.check(task, "small")
    assert fit.truth_on == "chip, in slices of B=1"
    inputs = _inputs(task)
    with jax.default_matmul_precision("highest"):
        expected = np.asarray(jax.jit(fitting._float32_reference(task))(*inputs), np.float32)
    np.testing.assert_allclose(fit.truth(inputs)[0], expected, rtol=1e-5, atol=1e-6)


def test_an_out_of_memory_compile_is_read_as_not_fitting():
    said = fitting._out_of_memory(RuntimeError(
        "RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO "
        "temporaries (17.00G) exceeds available HBM (15.75G)."))
    assert said == (int(17.00 * 2**30), int(15.75 * 2**30))
    assert fitting._out_of_memory(ValueError("shapes do not match")) is None


@pytest.mark.parametrize("task_id", [t.id for t in list_tasks() if t.batch is not None])
def test_a_declared_batch_is_independent(task_id):
    """The reference on the whole batch equals its slices concatenated (at small dimensions
    with the batch grown to 3): the premise of a truth computed in slices."""
    task = get_task(task_id)
    dims = {**task.sizes["small"], task.batch: 3}
    specs, outs = task.shapes_at(dims)
    keys = jax.random.split(jax.random.key(0), len(specs))
    inputs = [s.draw(k) for s, k in zip(specs, keys, strict=True)]
    in_axes, out_axes = task.batch_axes("small")
    fn = jax.jit(fitting._float32_reference(task))
    with jax.default_matmul_precision("highest"):
        whole = [np.asarray(x) for x in jax.tree_util.tree_leaves(fn(*inputs))]
        parts = []
        for i in range(3):
            sliced = [x if a is None else jax.lax.slice_in_dim(x, i, i + 1, axis=a)
                      for x, a in zip(inputs, in_axes, strict=True)]
            parts.append([np.asarray(x) for x in jax.tree_util.tree_leaves(fn(*sliced))])
    for j, axis in enumerate(out_axes):
        np.testing.assert_allclose(np.concatenate([p[j] for p in parts], axis=axis), whole[j],
                                   rtol=2e-5, atol=2e-5)


def test_the_attention_tasks_declare_their_batch():
    assert {t.id for t in list_tasks() if t.batch} >= {
        "1p_flash_attention", "2p_gqa_attention", "3p_mla_attention", "4p_sparse_attention",
        "5p_flex_attention"}
    in_axes, out_axes = get_task("5p_flex_attention").batch_axes("full")
    assert in_axes == [0, 0, 0, None] and out_axes == [0]  # the bias is shared by the batch


def test_a_batch_that_is_not_a_dimension_is_refused():
    with pytest.raises(ValueError, match="not a dimension"):
        _batched_task(batch="Q")


def test_the_reference_and_its_truth_compile_side_by_side(monkeypatch):
    """The reference's compile and the truth's run at the same time (fitting.check's threads):
    each waits at a barrier for the other, which a one-after-the-other check never reaches."""
    import threading

    task = _batched_task()
    monkeypatch.setattr(fitting, "chip_memory", lambda: 2**40)
    both = threading.Barrier(2, timeout=60)
    compile_ = fitting._compile
    seen = []

    def met(fn, specs, available):
        if len(seen) < 2:  # the reference's first compile and the truth's
            seen.append(threading.current_thread().name)
            both.wait()
        return compile_(fn, specs, available)

    monkeypatch.setattr(fitting, "_compile", met)
    fit = fitting.check(task, "small")
    assert fit.reference is not None and fit.truth_on == "chip"
    assert len(set(seen)) == 2, seen
