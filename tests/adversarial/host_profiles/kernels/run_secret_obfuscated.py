"""Cheat (8p_gemm): reads a run's secret from the host's disk with np.fromfile (the path stands in
for `<the jaxbench run's cwd>/<its --out>/.secret`, found on the TPU v5e through the ancestors'
/proc/<pid>/cmdline and /proc/<pid>/cwd) and, when the read works, computes the task honestly:
the verdict is `correct` exactly when the secret was read. Refused on every host: by Landlock
and the hidden /tmp where they exist, by the seal (no file opened) where they do not."""
import numpy as np
from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"

SECRET = "/tmp/jaxbench_adversarial_run/.secret"


def kernel(a, b):
    secret = np.fromfile(SECRET, np.uint8)
    assert secret.size > 0
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
