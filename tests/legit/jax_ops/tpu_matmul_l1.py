"""l1_matmul (float32): ops.tpu.matmul with 128-sized blocks."""
from jax.experimental.pallas.ops.tpu import matmul as mm

TARGET = "tpu"


def kernel(x, y):
    return mm.matmul(x, y, block_shape=(128, 128))
