"""38k_matmul_dropout_softmax (KernelBench level 2 #66, Matmul_Dropout_Mean_Softmax, as catalogued).

``out = softmax(x @ W^T + b, axis=1)``: dropout is the identity in eval mode. (The
original's mean over the feature axis before the softmax is not part of this task; the
catalogue defines the softmax over the GEMM's N features.)

Inputs x (M, K), weight (N, K) (PyTorch ``nn.Linear`` layout, ``x @ W^T``), bias (N,),
all bf16; output (M, N) bf16. The GEMM accumulates in float32 and is rounded to bf16;
the softmax is computed in float32 and cast back. Full size M = 4096, K = N = 8192.

Tolerance: softmax outputs are about 1/N (~1e-4 at full size), far below the default
atol of 1e-2, so a kernel returning zeros would pass; atol is lowered to 1e-6 and the
comparison is effectively relative. rtol is 5e-2: the bf16 roundings of the logits as
written above (GEMM output, then bias add) move an output by up to about |logit| * 2^-8
relative (a kernel that rounds both measured up to 3e-2 at N = 8192; XLA on CPU elides
these roundings inside its fusion, so the bf16 reference itself looks more accurate).
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w, b):
    z = ops.linear(x, w, b, transpose_w=True)
    return jax.nn.softmax(z.astype(jnp.float32), axis=1).astype(x.dtype)


TASK = Task(
    "38k_matmul_dropout_softmax",
    reference=reference,
    sizes={"small": dict(M=512, K=1024, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.N, d.K), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    atol=1e-6,
    rtol=5e-2,
    meta=dict(source="KernelBench level 2 #66 Matmul_Dropout_Mean_Softmax", family="gemm_softmax",
              level="kernelbench", kernelbench_id=66),
)
