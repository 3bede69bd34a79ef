"""1p_flash_attention through Tokamax's splash attention, the path MaxText's Tokamax backend
takes: ``tokamax._src.ops.experimental.tpu.splash_attention`` (a private module of an allowed
library that holds Pallas kernels). A causal mask, ``make_splash_mha`` with explicit block
sizes, queries scaled by 1/sqrt(D) beforehand (splash does not scale), mapped over the batch."""
import jax
import jax.numpy as jnp
from tokamax._src.ops.experimental.tpu.splash_attention import (
    splash_attention_kernel as splash_kernel,
)
from tokamax._src.ops.experimental.tpu.splash_attention import (
    splash_attention_mask as splash_mask,
)

TARGET = "tpu"


def kernel(q, k, v):
    _, _, s, d = q.shape
    block = min(512, s)
    config = splash_kernel.SplashConfig(block_q=block, block_kv=block, block_kv_compute=block)
    attend = splash_kernel.make_splash_mha(mask=splash_mask.CausalMask(shape=(s, s)),
                                           config=config, q_seq_shards=1)
    scaled = (q.astype(jnp.float32) / d ** 0.5).astype(q.dtype)
    return jax.vmap(attend)(scaled, k, v).astype(q.dtype)
