"""Expert kernel for 2p_gqa_attention on TPU: JAX's splash attention (forward only).

``splash_attention.make_splash_mha`` with one lazy ``CausalMask`` per query head
(a ``MultiHeadMask``). Splash's MHA path takes k/v with fewer heads than q and
maps query head ``h`` to kv head ``h // (H // KV)`` itself, so GQA needs no
repeat. The causal structure is precomputed into block-sparsity metadata:
fully masked (q, kv) blocks are neither fetched nor computed. Splash does not
scale the scores, so q is multiplied by 1/sqrt(D) first; the batch axis is
vmapped.
"""

import math

import jax
import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu import splash_attention as splash

TARGET = "tpu"


def _block(s, candidates):
    """The largest candidate block size that divides the sequence length."""
    return next((c for c in candidates if s % c == 0), s)


def kernel(q, k, v):
    b, h, s, d = q.shape
    mask = splash.MultiHeadMask(tuple(splash.CausalMask((s, s)) for _ in range(h)))
    block_kv = _block(s, (1024, 512, 256, 128))
    block_sizes = splash.BlockSizes(block_q=_block(s, (512, 256, 128)), block_kv=block_kv,
                                    block_kv_compute=min(block_kv, 512))
    attend = splash.make_splash_mha(mask, block_sizes=block_sizes, head_shards=1,
                                    q_seq_shards=1)
    q = (q.astype(jnp.float32) * (1.0 / math.sqrt(d))).astype(q.dtype)
    return jax.vmap(attend)(q, k, v)
