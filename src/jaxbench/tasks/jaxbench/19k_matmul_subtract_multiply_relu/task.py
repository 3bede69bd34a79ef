"""19k_matmul_subtract_multiply_relu: KernelBench Level-2 #9 (Matmul_Subtract_Multiply_ReLU).

``out = relu((x · W + b − 2.0) · 1.5)`` with x (M, K), W (K, N), b (N,), all bf16;
the matmul accumulates in float32 and rounds to bf16 (XLA's default), the epilogue runs
in bf16 as the reference does. Output (M, N) bf16. Full size M=4096, K=8192, N=8192.
b is drawn N(0, 1) so that x·W + b ~ N(0, 2) clears the 2.0 threshold on ~8% of the
outputs (with PyTorch's default init almost no output would be nonzero).
"""

import jax

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w, b):
    y = ops.linear(x, w, b)
    return jax.nn.relu((y - 2.0) * 1.5)


TASK = Task(
    "19k_matmul_subtract_multiply_relu",
    reference=reference,
    sizes={"small": dict(M=256, K=1024, N=1024), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,))],
    flops=lambda d: 2 * d.M * d.K * d.N,
    # The bf16 baseline rounds x·W (|.| up to ~6) and x·W + b to bf16 before subtracting 2.0,
    # so outputs near the ReLU threshold carry up to 1.5·(ulp/2 + ulp/2) ≈ 0.035 of absolute
    # error (seen: 0.035-0.045 against the f32 truth); atol 1e-2 would reject XLA itself.
    atol=5e-2,
    meta=dict(source="KernelBench L2 #9", family="gemm_epilogue", level="kernelbench",
              kernelbench_id=9),
)
