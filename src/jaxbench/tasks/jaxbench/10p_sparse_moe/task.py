"""10p_sparse_moe: Mixtral-8x7B sparse mixture-of-experts layer (top-2 routing), bf16.

Inputs x (B, S, D); router (D, E); gate_k, up_k (E, D, F); down_k (E, F, D); E = 8.
For every token x_t (float32 router logits):

    logits = x_t @ router                        (E,)
    top-2 experts e1, e2 by logit; (w1, w2) = softmax(logits[e1], logits[e2])
    out_t  = sum_{i=1,2} w_i * (silu(x_t @ gate_k[e_i]) * (x_t @ up_k[e_i])) @ down_k[e_i]

Output (B, S, D) in x's dtype. Full size B=2, S=4096, D=4096, F=14336.
The reference routes like a production layer: token-expert pairs sorted by expert and
three grouped matmuls (jax.lax.ragged_dot), then a weighted scatter-add back to tokens.

FLOPs count the routed work only (what a sparse kernel must do): each token goes
through 2 experts of 3 D x F matmuls, 12*T*D*F with T = B*S, plus the router's 2*T*D*E.
A dense kernel that runs all 8 experts does 4x this.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.spec import Task, normal, weight

TOP_K = 2


def reference(x, router, gate_k, up_k, down_k):
    b, s, d = x.shape
    num_experts = router.shape[1]
    tokens = x.reshape(b * s, d)
    logits = jnp.matmul(tokens, router, preferred_element_type=jnp.float32)
    top_logits, top_experts = jax.lax.top_k(logits, TOP_K)
    weights = jax.nn.softmax(top_logits, axis=-1).reshape(-1)
    experts = top_experts.reshape(-1)
    order = jnp.argsort(experts, stable=True)
    token_of_pair = order // TOP_K
    group_sizes = jnp.bincount(experts, length=num_experts).astype(jnp.int32)
    xs = tokens[token_of_pair]
    gate = jax.lax.ragged_dot(xs, gate_k, group_sizes, preferred_element_type=jnp.float32)
    up = jax.lax.ragged_dot(xs, up_k, group_sizes, preferred_element_type=jnp.float32)
    h = (jax.nn.silu(gate) * up).astype(x.dtype)
    y = jax.lax.ragged_dot(h, down_k, group_sizes, preferred_element_type=jnp.float32)
    y = y * weights[order][:, None]
    out = jnp.zeros((b * s, d), jnp.float32).at[token_of_pair].add(y)
    return out.astype(x.dtype).reshape(b, s, d)


TASK = Task(
    "10p_sparse_moe",
    reference=reference,
    sizes={"small": dict(B=2, S=128, D=256, F=512, E=8),
           "full": dict(B=2, S=4096, D=4096, F=14336, E=8)},
    inputs=lambda d: [
        normal("x", (d.B, d.S, d.D)),
        weight("router", (d.D, d.E), fan_in=d.D),
        weight("gate_k", (d.E, d.D, d.F), fan_in=d.D),
        weight("up_k", (d.E, d.D, d.F), fan_in=d.D),
        weight("down_k", (d.E, d.F, d.D), fan_in=d.F),
    ],
    flops=lambda d: 12 * d.B * d.S * d.D * d.F + 2 * d.B * d.S * d.D * d.E,
    meta=dict(source="Mixtral-8x7B", family="moe", level="production"),
)
