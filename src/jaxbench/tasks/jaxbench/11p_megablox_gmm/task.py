"""11p_megablox_gmm: Qwen3-235B-A22B MoE grouped matmul (megablox ``gmm``).

Inputs lhs (M, K) bf16, the tokens sorted by expert; rhs (E, K, N) bf16, one
matrix per expert; group_sizes (E,) int32, the number of consecutive lhs rows
of each expert. Output (M, N) bf16, accumulated in float32:

    out[r] = lhs[r] @ rhs[e]   for offsets[e] <= r < offsets[e] + group_sizes[e],

offsets = exclusive cumsum of group_sizes. The group sizes are UNEVEN: random
shares of M (some experts get several times the tokens of others) with about
one expert in eight receiving no tokens at all; they always sum exactly to M,
so every row belongs to one group. Full size M = 4096 tokens x top-8 = 32768,
K = 4096 (d_model), E = 128 experts, N = 1536 (expert FFN hidden).
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.spec import Task, custom, normal, weight


def reference(lhs, rhs, group_sizes):
    out = jax.lax.ragged_dot(lhs, rhs, group_sizes, preferred_element_type=jnp.float32)
    return out.astype(lhs.dtype)


def _group_sizes(key, m, e):
    """Random uneven sizes summing to m; ~1/8 of the groups empty (never all)."""
    k_w, k_z = jax.random.split(key)
    w = jax.random.uniform(k_w, (e,), jnp.float32, 0.1, 1.0) ** 2
    empty = jax.random.bernoulli(k_z, 0.125, (e,)).at[0].set(False)
    w = jnp.where(empty, 0.0, w)
    sizes = jnp.floor(m * w / jnp.sum(w)).astype(jnp.int32)
    rest = m - jnp.sum(sizes)  # 0 <= rest < e: one extra row to the first `rest` non-empty groups
    rank = jnp.cumsum(~empty) - 1
    sizes = sizes + ((~empty) & (rank < rest)).astype(jnp.int32)
    return sizes


def make_inputs(key, d):
    k_l, k_r, k_g = jax.random.split(key, 3)
    lhs = normal("lhs", (d.M, d.K)).draw(k_l)
    rhs = weight("rhs", (d.E, d.K, d.N), fan_in=d.K).draw(k_r)
    return lhs, rhs, _group_sizes(k_g, d.M, d.E)


TASK = Task(
    "11p_megablox_gmm",
    reference=reference,
    sizes={"small": dict(M=512, K=256, E=8, N=256),
           "full": dict(M=32768, K=4096, E=128, N=1536)},
    inputs=lambda d: [normal("lhs", (d.M, d.K)),
                      weight("rhs", (d.E, d.K, d.N), fan_in=d.K),
                      custom("group_sizes", (d.E,), "int32")],
    make_inputs=make_inputs,
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="Qwen3-235B-A22B MoE (megablox gmm)", family="moe", level="production",
              priority=True),
)
