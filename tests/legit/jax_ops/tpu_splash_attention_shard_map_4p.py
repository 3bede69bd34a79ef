"""4p_sparse_attention written as diffusion models' TPU attention is (a ``jax.shard_map`` over
the device mesh around JAX's splash attention, the query scaled outside it): on one chip the
mesh has one device. The kernel's work inside the shard_map runs once per device of the mesh;
before the kernel-work counter read shard_map, none of it counted, the q scaling outside was
100 % of the work, and the file was refused (``no_pallas``)."""
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_kernel as sk
from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_mask as sm
from jax.sharding import PartitionSpec as P

TARGET = "tpu"


def kernel(q, k, v):
    _, h, s, d = q.shape
    group = h // k.shape[1]
    k, v = (jnp.repeat(t, group, axis=1) for t in (k, v))
    q = q * np.asarray(1.0 / math.sqrt(d), q.dtype)  # outside the shard_map, as such code does
    mesh = jax.make_mesh((1,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))

    def local(q, k, v):
        mask = sm.MultiHeadMask([sm.CausalMask((s, s)) for _ in range(h)])
        sizes = sk.BlockSizes(block_q=128, block_kv=128, block_kv_compute=128)
        attend = sk.make_splash_mha(mask, head_shards=1, q_seq_shards=1, block_sizes=sizes)
        return jax.vmap(attend)(q, k, v)

    spec = P("data")
    return jax.shard_map(local, mesh=mesh, in_specs=(spec, spec, spec), out_specs=spec,
                         check_vma=False)(q, k, v)
