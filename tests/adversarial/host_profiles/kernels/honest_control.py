"""Control (8p_gemm): the attacks' honest part alone, `correct` under every host profile."""
from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"


def kernel(a, b):
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
