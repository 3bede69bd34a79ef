"""The inputs' drawing (tasks/spec.py): JAX's classic threefry, and inputs larger than a block
drawn a block of rows at a time so that drawing needs a block's scratch memory, not a whole
array's (5p_flex_attention's full drawing needed 8 GiB of scratch on a TPU v5e and its
evaluation ran out of chip memory)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxbench.tasks import get_task, spec
from jaxbench.tasks.spec import InputSpec


def _classic_jit(fn):
    def classic(k):
        with jax.threefry_partitionable(False):
            return fn(k)
    return jax.jit(classic)


def test_a_large_input_is_drawn_row_by_row_from_split_keys(monkeypatch):
    monkeypatch.setattr(spec, "DRAW_BLOCK", 10)
    x = InputSpec("x", (5, 3, 4), "float32", "normal", scale=2.0)
    key = jax.random.key(7)
    got = np.asarray(_classic_jit(x.draw)(key))

    def by_hand(k, shape):
        if math.prod(shape) <= 10 or len(shape) < 2:
            with jax.threefry_partitionable(False):
                return np.asarray(jax.random.normal(k, shape, jnp.float32) * 2.0)
        with jax.threefry_partitionable(False):
            keys = jax.random.split(k, shape[0])
        return np.stack([by_hand(kk, shape[1:]) for kk in keys])

    np.testing.assert_array_equal(got, by_hand(key, (5, 3, 4)))
    assert len(np.unique(got)) == got.size  # no row repeats another


def test_a_large_input_draws_within_a_block_of_scratch():
    # 256 Mi elements of bfloat16 (512 MiB): drawn whole, the classic threefry's bits alone
    # take 1 GiB of scratch; by blocks, a block's (about 64 MiB of bits and floats)
    x = InputSpec("x", (64, 2048, 2048), "bfloat16", "normal")
    compiled = _classic_jit(x.draw).lower(jax.random.key(0)).compile()
    scratch = compiled.memory_analysis().temp_size_in_bytes
    assert scratch <= 16 * spec.DRAW_BLOCK, scratch
    whole = _classic_jit(lambda k: x._draw(k, x.shape)).lower(jax.random.key(0)).compile()
    assert whole.memory_analysis().temp_size_in_bytes >= 2 * math.prod(x.shape)


def test_small_inputs_are_drawn_whole_and_the_task_draws_with_the_classic_threefry():
    task = get_task("12p_rmsnorm")
    key = jax.random.key(3)
    drawn = task.drawing("small")(key)
    classic = _classic_jit(task.drawing_fn("small"))(key)
    for a, b in zip(drawn, classic, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    x = task.input_specs("small")[0]
    assert math.prod(x.shape) <= spec.DRAW_BLOCK
    with jax.threefry_partitionable(False):
        whole = jax.random.normal(jax.random.split(key, len(task.input_specs("small")))[0],
                                  x.shape, jnp.float32) * x.scale
    np.testing.assert_array_equal(np.asarray(drawn[0]), np.asarray(whole.astype(x.dtype)))


def test_the_rows_drawn_at_once_divide_the_rows(monkeypatch):
    # 7 rows of 7 fit in a block of 50, but 16 rows in blocks of 7 leave 2 over (lax.map's
    # remainder, a second program: on a TPU v5e such drawings took up to 132 s to compile);
    # 4 rows at once leave none
    monkeypatch.setattr(spec, "DRAW_BLOCK", 50)
    x = InputSpec("x", (16, 7), "float32", "normal")
    jaxpr = str(jax.make_jaxpr(x.draw)(jax.random.key(0)))
    assert jaxpr.count("scan[") + jaxpr.count("scan(") >= 1
    assert "concatenate" not in jaxpr
    key = jax.random.key(1)
    got = np.asarray(_classic_jit(x.draw)(key))
    with jax.threefry_partitionable(False):
        rows = [np.asarray(jax.random.normal(k, (7,), jnp.float32))
                for k in jax.random.split(key, 16)]
    np.testing.assert_array_equal(got, np.stack(rows))
