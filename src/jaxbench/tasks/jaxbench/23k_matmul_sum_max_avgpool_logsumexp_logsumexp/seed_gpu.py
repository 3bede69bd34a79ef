"""Seed kernel for 23k_matmul_sum_max_avgpool_logsumexp_logsumexp on NVIDIA GPUs (Triton).

``v = sum_j (x @ W^T + b)[:, j]``; the max, mean and two logsumexps that follow act on
a size-1 axis and are the identity, so out = v. Each program owns bm rows and loops
over all (N block, K slice) pairs, adding every tile product (and each bias tile once)
into one float32 (bm, bn) register accumulator; its lanes are then summed per row. The
(M,) result is reshaped to (M, 1) outside.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"

_NT = (((1,), (1,)), ((), ()))  # contract the K axis of x (bm, bk) with that of W (bn, bk)


def _kernel(x_ref, w_ref, b_ref, o_ref, *, bn, bk, num_n, num_k):
    def n_body(j, acc):
        def k_body(kk, acc):
            x = x_ref[:, pl.ds(kk * bk, bk)]
            w = w_ref[pl.ds(j * bn, bn), pl.ds(kk * bk, bk)]
            return acc + jax.lax.dot_general(x, w, _NT, preferred_element_type=jnp.float32)

        acc = acc + b_ref[pl.ds(j * bn, bn)].astype(jnp.float32)[None, :]
        return jax.lax.fori_loop(0, num_k, k_body, acc)

    acc = jax.lax.fori_loop(0, num_n, n_body, jnp.zeros((o_ref.shape[0], bn), jnp.float32))
    v = jnp.sum(acc, axis=1)
    # max / mean / logsumexp / logsumexp over a size-1 axis: identities.
    o_ref[...] = v.astype(o_ref.dtype)


def kernel(x, w, b):
    m, k = x.shape
    n = w.shape[0]
    bm, bn, bk = min(32, m), min(64, n), min(64, k)
    out = pl.pallas_call(
        functools.partial(_kernel, bn=bn, bk=bk, num_n=n // bn, num_k=k // bk),
        out_shape=jax.ShapeDtypeStruct((m,), x.dtype),
        grid=(m // bm,),
        in_specs=[
            pl.BlockSpec((bm, k), lambda i: (i, 0)),
            pl.BlockSpec((n, k), lambda i: (0, 0)),
            pl.BlockSpec((n,), lambda i: (0,)),
        ],
        out_specs=pl.BlockSpec((bm,), lambda i: (i,)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(x, w, b)
    return out.reshape(m, 1)
