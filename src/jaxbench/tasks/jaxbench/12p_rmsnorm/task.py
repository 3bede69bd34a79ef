"""12p_rmsnorm: Llama-3.1-70B RMSNorm.

``y = (x · rsqrt(mean(x², axis=-1) + 1e-5))`` computed in float32, cast back to x's dtype,
then multiplied by ``scale``. x (B, S, H) bf16, scale (H,) bf16 drawn U[0.5, 1.5);
output (B, S, H) bf16. Full size B=8, S=4096, H=8192.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.spec import Task, normal, uniform

EPS = 1e-5


def reference(x, scale):
    xf = x.astype(jnp.float32)
    y = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + EPS)
    return y.astype(x.dtype) * scale


TASK = Task(
    "12p_rmsnorm",
    reference=reference,
    sizes={"small": dict(B=2, S=256, H=1024), "full": dict(B=8, S=4096, H=8192)},
    inputs=lambda d: [normal("x", (d.B, d.S, d.H)), uniform("scale", (d.H,), 0.5, 1.5)],
    # square, sum, normalise, scale: ~4 flops per element
    flops=lambda d: 4 * d.B * d.S * d.H,
    meta=dict(source="Llama-3.1-70B", family="norm", level="production"),
)
