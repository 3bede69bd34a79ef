"""Expert kernel for 8p_gemm on TPU: JAX's Pallas TPU matmul kernel.

Wraps ``jax.experimental.pallas.ops.tpu.matmul.matmul`` (grid (M/bm, N/bn, K/bk),
float32 VMEM accumulator) with 512 x 1024 output tiles and a K step of 1024,
capped by the operand sizes (~10 MiB of double-buffered VMEM).
"""

from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"


def kernel(a, b):
    m, k = a.shape
    n = b.shape[1]
    return pallas_matmul.matmul(a, b, block_shape=(min(512, m), min(1024, n)),
                                block_k=min(1024, k))
