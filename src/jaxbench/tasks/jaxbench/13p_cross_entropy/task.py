"""13p_cross_entropy: Llama-3.1-8B fused LM-head linear + cross-entropy loss.

``loss = mean_t( logsumexp(logits[t]) − logits[t, labels[t]] )`` with
``logits = hidden · weight`` (float32 accumulation, rounded to the input dtype as XLA
does, then taken to float32 for the softmax). hidden (T, Hd) bf16, weight (Hd, V) bf16,
labels (T,) int32 in [0, V). The output is a float32 scalar (a loss is reported in
float32 whatever the activation dtype). Full size T=8192, Hd=4096, V=128256; a fused
kernel never writes the (T, V) logits to HBM.
"""

import math

import jax
import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, randint


def reference(hidden, weight, labels):
    logits = ops.matmul(hidden, weight).astype(jnp.float32)
    lse = jax.nn.logsumexp(logits, axis=-1)
    picked = jnp.take_along_axis(logits, labels[:, None], axis=-1)[:, 0]
    return jnp.mean(lse - picked)


TASK = Task(
    "13p_cross_entropy",
    reference=reference,
    # small V = 1920 = 7.5 tiles of 256: keeps a ragged last vocab tile (full V = 501 x 256).
    sizes={"small": dict(T=256, Hd=256, V=1920), "full": dict(T=8192, Hd=4096, V=128256)},
    # weight ~ N(0, 16/Hd): logits have std 4 (a peaked softmax, as an LM head's are), so
    # the loss moves visibly with every input instead of sitting at log(V) + 1/2.
    inputs=lambda d: [normal("hidden", (d.T, d.Hd)),
                      normal("weight", (d.Hd, d.V), scale=4.0 / math.sqrt(d.Hd)),
                      randint("labels", (d.T,), 0, d.V)],
    flops=lambda d: 2 * d.T * d.Hd * d.V,
    # A scalar mean loss near log(V) + max-logit: rtol 1e-2 would allow ~0.15 of slack, more
    # than replacing any one input moves it. The bf16 baseline (bf16-rounded logits) stays
    # within ~1e-3 of the f32 truth, so the loss is checked to atol = rtol = 1e-3.
    atol=1e-3,
    rtol=1e-3,
    meta=dict(source="Llama-3.1-8B (fused linear + cross-entropy)", family="loss",
              level="production", output="float32 scalar"),
)
