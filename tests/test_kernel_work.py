"""The kernels' own work, counted on the traced jaxpr (``judge/kernel_work.py``): FLOPs per
program times the grid, live work only, bytes of the kernel's operands; and the data flow from
kernels to outputs."""

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl

from jaxbench.evaluator.judge import kernel_work


def _matmul(x_ref, w_ref, o_ref):
    o_ref[...] = jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)


def _tiled_matmul(x, w, bm=32):
    m, k = x.shape
    n = w.shape[1]
    return pl.pallas_call(
        _matmul, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // bm,),
        in_specs=[pl.BlockSpec((bm, k), lambda i: (i, 0)), pl.BlockSpec((k, n), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((bm, n), lambda i: (i, 0)))(x, w)


SPECS = (jax.ShapeDtypeStruct((128, 64), jnp.float32), jax.ShapeDtypeStruct((64, 32), jnp.float32))


def test_a_tiled_matmul_counts_2mkn_and_its_operands():
    work = kernel_work.count(jax.make_jaxpr(_tiled_matmul)(*SPECS))
    assert work.flops == 2 * 128 * 64 * 32  # 2 * bm*k*n per program, 4 programs
    assert work.bytes == 4 * (128 * 64 + 64 * 32 + 128 * 32)
    assert work.kernels[0]["programs"] == 4


def test_work_whose_result_is_dropped_is_not_counted():
    def padded(x_ref, w_ref, o_ref):
        jnp.dot(x_ref[...], w_ref[...]) * 3.0  # computed, never stored
        _matmul(x_ref, w_ref, o_ref)

    def fn(x, w):
        return pl.pallas_call(padded, out_shape=jax.ShapeDtypeStruct((128, 32), jnp.float32))(x, w)

    assert kernel_work.count(jax.make_jaxpr(fn)(*SPECS)).flops == 2 * 128 * 64 * 32


def test_a_kernel_in_a_scan_counts_once_per_step():
    def fn(x, w):
        def step(carry, _):
            return carry, _tiled_matmul(x, w)
        return jax.lax.scan(step, 0.0, None, length=3)[1]

    assert kernel_work.count(jax.make_jaxpr(fn)(*SPECS)).flops == 3 * 2 * 128 * 64 * 32


def test_outside_equations_are_priced_for_the_message():
    def fn(x, w):
        return _tiled_matmul(x, w) + jnp.dot(x, w)  # the second matmul in XLA

    work = kernel_work.count(jax.make_jaxpr(fn)(*SPECS))
    flops, name, _ = work.outside_eqns[0]
    assert (name, flops) == ("dot_general", 2 * 128 * 64 * 32)


@pytest.mark.parametrize("second,missing", [
    (lambda x, w, y: y * 2.0, []),  # made from a kernel's result
    (lambda x, w, y: x @ w, [(1, "dot_general")]),  # made by XLA alone
    (lambda x, w, y: x, [(1, "an input passed through")]),
])
def test_every_output_must_come_out_of_a_kernel(second, missing):
    def fn(x, w):
        y = _tiled_matmul(x, w)
        return y, second(x, w, y)

    closed = jax.make_jaxpr(fn)(*SPECS)
    found = kernel_work.outputs_without_kernel(closed)
    assert [(i, what) for i, what, _ in found] == missing
    assert [(i, what) for i, what, _ in kernel_work.count(closed).unreached] == missing


def test_a_kernel_inside_a_jit_reaches_its_outputs():
    found = kernel_work.outputs_without_kernel(jax.make_jaxpr(jax.jit(_tiled_matmul))(*SPECS))
    assert found == []
