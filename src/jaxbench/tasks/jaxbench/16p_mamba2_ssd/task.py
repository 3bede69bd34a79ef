"""16p_mamba2_ssd: Mamba-2-2.7B state-space duality, quadratic (attention-like) form.

Inputs C, B, x (b, h, S, n) bf16 and A_log (b, h, S) float32. With a = sigmoid(A_log)
and the segment products L[i, j] = prod_{k=j+1..i} a_k for i >= j (0 above the diagonal),

    M[i, j] = L[i, j] * (C_i . B_j)
    y[i]    = (sum_j M[i, j] x_j) / max(|sum_j M[i, j]|, 1)

i.e. each row of M is divided by the absolute value of its *signed* row sum, floored
at 1 (our reading of the catalogue's "rows normalised by max(|row sum|, 1)").
L is computed stably as exp(cs_i - cs_j) with cs = cumsum(log sigmoid(A_log)); scores,
L and the row sums are float32. Output (b, h, S, n) in x's dtype.
Full size b=4, h=64, S=4096, n=64.

Inputs: x ~ N(0, 1); C, B ~ 0.15 * N(0, 1); A_log ~ U[2, 8), so a lies in [0.88, 0.9997]
(decays of tens to thousands of tokens, like Mamba-2's learned dt*A; N(0, 1) would make
L nearly diagonal). The scale of C and B matters: the signed row sum of M is a sum of
random-sign terms, so the normalised row m_i = M_i / max(|sum M_i|, 1) has norm
~1/|z| for a standard normal z whenever the clamp is inactive, and bf16 rounding of m
then swamps the output. At scale 0.15 about a quarter of the rows are normalised
(|row sum| > 1), outputs are O(1) (mean |y| ~ 0.6), and the bf16 reference stays within
atol = rtol = 1e-2 of the float32 truth (worst 0.74 of the tolerance over 6 keys);
at unit scale it misses by 10x.

Tolerance atol = rtol = 2e-2: each output sums S = 4096 products of bf16-rounded weights, a
long reduction whose rounding tail grows with the 67M outputs at full size. The seed (f32
accumulation, one bf16 rounding of each weight, as the reference) exceeded 1e-2 at one
element of 67M by 1.006x on a TPU v5e (2026-12-06, results/tpu_v5e/): at 1e-2 an exact
kernel fails by the luck of the draw.

FLOPs count the causal half of both matmuls: 2 * (2 * b*h*S*S*n / 2).
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.spec import Task, normal, uniform


def reference(c, b, x, a_log):
    s = c.shape[2]
    cs = jnp.cumsum(jax.nn.log_sigmoid(a_log.astype(jnp.float32)), axis=-1)
    causal = jnp.tril(jnp.ones((s, s), bool))
    log_l = jnp.where(causal, cs[..., :, None] - cs[..., None, :], -jnp.inf)
    scores = jnp.einsum("bhin,bhjn->bhij", c, b, preferred_element_type=jnp.float32)
    m = jnp.exp(log_l) * scores
    norm = jnp.maximum(jnp.abs(jnp.sum(m, axis=-1, keepdims=True)), 1.0)
    m = (m / norm).astype(x.dtype)
    y = jnp.einsum("bhij,bhjn->bhin", m, x, preferred_element_type=jnp.float32)
    return y.astype(x.dtype)


TASK = Task(
    "16p_mamba2_ssd",
    reference=reference,
    sizes={"small": dict(b=1, h=4, S=512, n=64), "full": dict(b=4, h=64, S=4096, n=64)},
    inputs=lambda d: [
        normal("C", (d.b, d.h, d.S, d.n), scale=0.15),
        normal("B", (d.b, d.h, d.S, d.n), scale=0.15),
        normal("x", (d.b, d.h, d.S, d.n)),
        uniform("A_log", (d.b, d.h, d.S), 2.0, 8.0, dtype="float32"),
    ],
    flops=lambda d: 2 * d.b * d.h * d.S * d.S * d.n,
    batch="b",
    atol=2e-2,
    rtol=2e-2,
    meta=dict(source="Mamba-2-2.7B", family="ssm", level="production"),
)
