"""Cheat (8p_gemm): has XLA's C++ compiler write dump files outside the private directory
(`compile({"xla_dump_to": ...})`): no Python open(), so no audit event sees the writes. The
directory stands in for any place the host reads (a run directory, a cache). Refused where
Landlock holds writes to the private directory, and by the seal (no file created) everywhere."""
import jax
from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"

DUMP = "/tmp/jaxbench_adversarial_xla_dump"


def kernel(a, b):
    jax.jit(lambda x: x * 2).lower(a[:8, :8]).compile({"xla_dump_to": DUMP})
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
