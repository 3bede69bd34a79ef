"""15p_retnet_retention: RetNet-6.7B multi-scale retention (parallel form), bf16.

Inputs q, k, v (B, H, S, D). Per head h the decay is gamma_h = 1 - 2^(-5-h) and

    A[i, j]  = (q_i . k_j) * gamma_h^(i-j)   for i >= j, else 0
    out[i]   = (sum_j A[i, j] v_j) / max(sum_j |A[i, j]|, 1)

(no 1/sqrt(D) scale, as in the catalogue). Scores, decay and normaliser are float32;
gamma^(i-j) is computed as exp((i-j) * log1p(-2^(-5-h))) so it never overflows and
stays accurate for gamma close to 1. Output (B, H, S, D) in q's dtype.
Full size B=4, H=16, S=4096, D=256.

FLOPs count the causal half of both matmuls: 2 * (2 * B*H*S*S*D / 2).
"""

import jax.numpy as jnp

from jaxbench.tasks.spec import Task, normal


def log_gammas(num_heads):
    """log gamma_h for each head, float32."""
    h = jnp.arange(num_heads, dtype=jnp.float32)
    return jnp.log1p(-jnp.exp2(-5.0 - h))


def reference(q, k, v):
    _, num_heads, s, _ = q.shape
    scores = jnp.einsum("bhid,bhjd->bhij", q, k, preferred_element_type=jnp.float32)
    pos = jnp.arange(s, dtype=jnp.float32)
    dist = pos[:, None] - pos[None, :]
    decay = jnp.exp(dist[None] * log_gammas(num_heads)[:, None, None])
    decay = jnp.where(dist[None] >= 0, decay, 0.0)
    a = scores * decay[None]
    norm = jnp.maximum(jnp.sum(jnp.abs(a), axis=-1, keepdims=True), 1.0)
    a = (a / norm).astype(v.dtype)
    out = jnp.einsum("bhij,bhjd->bhid", a, v, preferred_element_type=jnp.float32)
    return out.astype(q.dtype)


TASK = Task(
    "15p_retnet_retention",
    reference=reference,
    sizes={"small": dict(B=1, H=4, S=512, D=128), "full": dict(B=4, H=16, S=4096, D=256)},
    inputs=lambda d: [normal(n, (d.B, d.H, d.S, d.D)) for n in ("q", "k", "v")],
    flops=lambda d: 2 * d.B * d.H * d.S * d.S * d.D,
    meta=dict(source="RetNet-6.7B", family="attention", level="production"),
)
