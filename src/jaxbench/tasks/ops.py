"""Building blocks shared by task references (plain JAX, dtype-generic).

Each function computes in the dtype it is given, so the same reference yields
the bf16 XLA baseline on bf16 inputs and the float32 ground truth on upcast ones.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def matmul(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a @ b`` accumulated in float32, returned in ``a``'s dtype (XLA's default for bf16)."""
    return jnp.matmul(a, b, preferred_element_type=jnp.float32).astype(a.dtype)


def linear(x: jax.Array, w: jax.Array, b: jax.Array | None = None, transpose_w: bool = False) -> jax.Array:
    """``x @ W (+ b)``, or ``x @ Wᵀ (+ b)`` with ``transpose_w`` (PyTorch layout)."""
    y = matmul(x, w.T if transpose_w else w)
    return y if b is None else y + b


def gelu(x: jax.Array, approximate: bool = False) -> jax.Array:
    return jax.nn.gelu(x, approximate=approximate)


def mish(x: jax.Array) -> jax.Array:
    return x * jnp.tanh(jax.nn.softplus(x))


def swish(x: jax.Array) -> jax.Array:
    return x * jax.nn.sigmoid(x)


def hardswish(x: jax.Array) -> jax.Array:
    return x * jnp.clip(x + 3.0, 0.0, 6.0) / 6.0


def group_norm(x: jax.Array, groups: int, gamma: jax.Array, beta: jax.Array, eps: float = 1e-5,
               channel_axis: int = 1) -> jax.Array:
    """GroupNorm over ``groups`` groups of the channel axis (and all spatial axes), affine.

    Statistics are computed in float32 and the result cast back, as PyTorch does.
    """
    x = jnp.moveaxis(x, channel_axis, 1)
    n, c = x.shape[:2]
    xf = x.astype(jnp.float32).reshape(n, groups, -1)
    mean = xf.mean(axis=-1, keepdims=True)
    var = xf.var(axis=-1, keepdims=True)
    y = ((xf - mean) * jax.lax.rsqrt(var + eps)).reshape(x.shape).astype(x.dtype)
    bshape = (1, c) + (1,) * (x.ndim - 2)
    y = y * gamma.reshape(bshape) + beta.reshape(bshape)
    return jnp.moveaxis(y, 1, channel_axis)


def batch_norm_train(x: jax.Array, gamma: jax.Array, beta: jax.Array, eps: float = 1e-5,
                     axes: tuple[int, ...] = (0,)) -> jax.Array:
    """BatchNorm with batch statistics over ``axes`` (biased variance), affine on axis 1."""
    xf = x.astype(jnp.float32)
    mean = xf.mean(axis=axes, keepdims=True)
    var = xf.var(axis=axes, keepdims=True)
    y = ((xf - mean) * jax.lax.rsqrt(var + eps)).astype(x.dtype)
    bshape = [1] * x.ndim
    bshape[1] = x.shape[1]
    return y * gamma.reshape(bshape) + beta.reshape(bshape)


def batch_norm_eval(x: jax.Array, gamma: jax.Array, beta: jax.Array, mean: jax.Array,
                    var: jax.Array, eps: float = 1e-5) -> jax.Array:
    """BatchNorm with given running statistics, features on the last axis."""
    return (x - mean) * jax.lax.rsqrt(var + eps) * gamma + beta


def conv(x: jax.Array, w: jax.Array, stride: int = 1, padding: str | int = "VALID") -> jax.Array:
    """N-d convolution, NC(D)HW input and OI(D)HW weight, f32 accumulation."""
    nd = x.ndim - 2
    pad = padding if isinstance(padding, str) else [(padding, padding)] * nd
    spatial = "DHW"[-nd:]
    dn = jax.lax.conv_dimension_numbers(x.shape, w.shape, (f"NC{spatial}", f"OI{spatial}", f"NC{spatial}"))
    y = jax.lax.conv_general_dilated(x, w, (stride,) * nd, pad, dimension_numbers=dn,
                                     preferred_element_type=jnp.float32)
    return y.astype(x.dtype)


def causal_attention(q: jax.Array, k: jax.Array, v: jax.Array, bias: jax.Array | None = None) -> jax.Array:
    """Causal softmax(q kᵀ/√D + bias) v over (B, H, S, D); k/v may have fewer heads (GQA).

    Scores and softmax in float32; output in q's dtype.
    """
    b, h, s, d = q.shape
    kv_heads = k.shape[1]
    if kv_heads != h:
        k = jnp.repeat(k, h // kv_heads, axis=1)
        v = jnp.repeat(v, h // kv_heads, axis=1)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k, preferred_element_type=jnp.float32) / jnp.sqrt(
        jnp.float32(d))
    if bias is not None:
        scores = scores + bias.astype(jnp.float32)
    mask = jnp.tril(jnp.ones((s, k.shape[2]), bool))
    scores = jnp.where(mask, scores, -jnp.inf)
    p = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bhkd->bhqd", p.astype(v.dtype), v, preferred_element_type=jnp.float32)
    return out.astype(q.dtype)
