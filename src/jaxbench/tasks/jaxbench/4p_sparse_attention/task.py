"""4p_sparse_attention: causal GQA attention (splash-attention task), Llama-3.1-70B shapes.

Inputs q (B, H, S, D), k and v (B, KV, S, D), bf16, all N(0, 1). Query head ``h``
attends with kv head ``h // (H // KV)`` (8 query heads per kv head at full size):

    out[b, h] = softmax(mask(q[b, h] @ k[b, h // G]^T / sqrt(D))) @ v[b, h // G]

with the causal mask (key position <= query position). Scores and softmax in
float32; output (B, H, S, D) bf16. Full size B=4, H=64, KV=8, S=4096, D=128.
The causal mask makes the score matrix block-sparse (about half of the
(q-block, kv-block) tiles are fully masked), which is what a splash-attention
kernel exploits.
"""

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal


def reference(q, k, v):
    return ops.causal_attention(q, k, v)


def _flops(d):
    # QK^T and PV over the causal half (the diagonal counted in full).
    return 2 * 2 * d.B * d.H * d.D * (d.S * (d.S + 1) // 2)


TASK = Task(
    "4p_sparse_attention",
    reference=reference,
    sizes={
        # small keeps GQA (2 query heads per kv head) and a 3x3 grid of 128-blocks,
        # 3 of them fully masked.
        "small": dict(B=1, H=4, KV=2, S=384, D=128),
        "full": dict(B=4, H=64, KV=8, S=4096, D=128),
    },
    inputs=lambda d: [
        normal("q", (d.B, d.H, d.S, d.D)),
        normal("k", (d.B, d.KV, d.S, d.D)),
        normal("v", (d.B, d.KV, d.S, d.D)),
    ],
    flops=_flops,
    batch="B",
    meta=dict(source="Llama-3.1-70B (splash attention)", family="attention", level="production"),
)
