"""1p_flash_attention: causal multi-head attention, the Pallas flash-attention configuration.

``out = softmax(q kᵀ / √D + causal mask) v`` per batch and head, with q, k, v of shape
(B, H, S, D) in bf16; scores and softmax in float32, output (B, H, S, D) in q's dtype.
Position i attends to positions j <= i. Full size B=4, H=64, S=4096, D=128 (plain MHA).
"""

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal


def reference(q, k, v):
    return ops.causal_attention(q, k, v)


TASK = Task(
    "1p_flash_attention",
    reference=reference,
    sizes={"small": dict(B=1, H=2, S=256, D=128), "full": dict(B=4, H=64, S=4096, D=128)},
    inputs=lambda d: [normal("q", (d.B, d.H, d.S, d.D)), normal("k", (d.B, d.H, d.S, d.D)),
                      normal("v", (d.B, d.H, d.S, d.D))],
    # q kᵀ and p v over the causal (lower) half of the S x S score matrix.
    flops=lambda d: 2 * d.B * d.H * d.S * d.S * d.D,
    batch="B",
    meta=dict(source="plain MHA, Pallas flash-attention config", family="attention",
              level="production", priority=True),
)
