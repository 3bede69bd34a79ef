"""50k_matmul_gelu_softmax: KernelBench Level-2 #99 (Matmul_GELU_Softmax).

``out = softmax(gelu(x · W + b), axis=1)`` with exact (erf) GELU; x (M, K), W (K, N),
b (N,), all bf16; the matmul accumulates in float32 and rounds to bf16 (XLA's default).
Output (M, N) bf16, each row a probability distribution over all N features.
Full size M=4096, K=8192, N=8192.
"""

import jax

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w, b):
    return jax.nn.softmax(ops.gelu(ops.linear(x, w, b)), axis=1)


TASK = Task(
    "50k_matmul_gelu_softmax",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=1024), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    # Outputs are probabilities of ~1/N (5e-5 .. 2e-2 at full size): atol 1e-2 would accept a
    # constant 1/N. The check is therefore relative: atol 1e-6 (~2% of the smallest entry at
    # full size) and rtol 5e-2, because the bf16 baseline's bf16 rounding of x·W + b and of
    # gelu(.) (|.| up to ~6) moves exp(.) by up to ~3.5% (worst seen 0.0353 at N = 8192).
    atol=1e-6,
    rtol=5e-2,
    meta=dict(source="KernelBench L2 #99", family="gemm_epilogue", level="kernelbench",
              kernelbench_id=99),
)
