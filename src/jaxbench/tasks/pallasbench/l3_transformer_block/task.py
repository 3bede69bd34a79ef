"""l3_transformer_block (PallasBench #44): a pre-norm single-head transformer block.

    rms(a) = a · rsqrt(mean(a², axis=-1) + 1e-5)            (no weight)
    x̂ = rms(x)
    h = x + softmax((x̂ W_q)(x̂ W_k)ᵀ / 8) (x̂ W_v) W_o       (softmax over keys, no mask)
    y = h + relu(rms(h) W_ff)

The scale 1/8 is 1/sqrt(d_head) with d_head = 64.

x (S, D) = (128, 256) float32 ~ N(0, 1); W_q, W_k, W_v (D, 64), W_o (64, D) and
W_ff (D, D) float32 weights ~ N(0, 1/fan_in); output y (S, D) float32.
"""

import math

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal, weight

EPS = 1e-5


def _rms(a):
    return a * jax.lax.rsqrt(jnp.mean(a * a, axis=-1, keepdims=True) + EPS)


def reference(x, w_q, w_k, w_v, w_o, w_ff):
    xn = _rms(x)
    q, k, v = jnp.dot(xn, w_q), jnp.dot(xn, w_k), jnp.dot(xn, w_v)
    p = jax.nn.softmax(jnp.dot(q, k.T) / math.sqrt(w_q.shape[1]), axis=-1)
    h = x + jnp.dot(jnp.dot(p, v), w_o)
    return h + jax.nn.relu(jnp.dot(_rms(h), w_ff))


def _flops(d):
    proj = 3 * 2 * d.S * d.D * d.H + 2 * d.S * d.H * d.D + 2 * d.S * d.D * d.D  # qkv, W_o, W_ff
    attn = 4 * d.S * d.S * d.H + 5 * d.S * d.S                                 # QKᵀ, PV, softmax
    return proj + attn + 10 * d.S * d.D                                         # norms, residuals, relu


TASK = Task(
    "l3_transformer_block",
    reference=reference,
    sizes={"small": dict(S=128, D=256, H=64), "full": dict(S=128, D=256, H=64)},
    inputs=lambda d: [normal("x", (d.S, d.D), dtype="float32"),
                      weight("W_q", (d.D, d.H), fan_in=d.D, dtype="float32"),
                      weight("W_k", (d.D, d.H), fan_in=d.D, dtype="float32"),
                      weight("W_v", (d.D, d.H), fan_in=d.D, dtype="float32"),
                      weight("W_o", (d.H, d.D), fan_in=d.H, dtype="float32"),
                      weight("W_ff", (d.D, d.D), fan_in=d.D, dtype="float32")],
    flops=_flops,
    suite=SUITE,
    meta=meta(44, 3, "block"),
)
