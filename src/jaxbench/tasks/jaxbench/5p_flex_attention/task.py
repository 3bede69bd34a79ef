"""5p_flex_attention: causal attention with a per-head additive score bias (Llama-3.1-70B).

Inputs q, k, v (B, H, S, D) bf16, N(0, 1), and rel_pos_bias (H, S, S) bf16,
N(0, 1), shared over the batch. In flex-attention terms the score_mod is
``score + rel_pos_bias[h, q_idx, kv_idx]`` and the mask_mod is causal:

    out[b, h] = softmax(mask(q[b, h] @ k[b, h]^T / sqrt(D) + rel_pos_bias[h])) @ v[b, h]

(the bias is added after the 1/sqrt(D) scaling and before the causal mask and the
softmax). Scores and softmax in float32; output (B, H, S, D) bf16. Full size
B=4, H=64, S=4096, D=128.
"""

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal


def reference(q, k, v, rel_pos_bias):
    return ops.causal_attention(q, k, v, bias=rel_pos_bias[None])


def _flops(d):
    # QK^T and PV over the causal half (the diagonal counted in full), plus the bias add.
    causal = d.S * (d.S + 1) // 2
    return 2 * 2 * d.B * d.H * d.D * causal + d.B * d.H * causal


TASK = Task(
    "5p_flex_attention",
    reference=reference,
    sizes={
        "small": dict(B=1, H=4, S=256, D=128),
        "full": dict(B=4, H=64, S=4096, D=128),
    },
    inputs=lambda d: [
        normal("q", (d.B, d.H, d.S, d.D)),
        normal("k", (d.B, d.H, d.S, d.D)),
        normal("v", (d.B, d.H, d.S, d.D)),
        normal("rel_pos_bias", (d.H, d.S, d.S)),
    ],
    flops=_flops,
    batch="B",
    meta=dict(source="Llama-3.1-70B", family="attention", level="production"),
)
