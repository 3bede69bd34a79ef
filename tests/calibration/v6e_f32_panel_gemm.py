"""8p_gemm as a model wrote it for a TPU v6e, where it ran correctly: float32 row and column
panels with K whole ((256, K) and (K, 256) blocks), default compiler params. At full size its
blocks count 32.5 MiB against the v6e's 32 MiB scoped default (docs/vmem-calibration.md)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _body(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)


def kernel(a, b):
    (m, k), n = a.shape, b.shape[1]
    bm, bn = min(256, m), min(256, n)
    out = pl.pallas_call(
        _body, grid=(m // bm, n // bn),
        in_specs=[pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, bn), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
    )(a.astype(jnp.float32), b.astype(jnp.float32))
    return out.astype(a.dtype)
