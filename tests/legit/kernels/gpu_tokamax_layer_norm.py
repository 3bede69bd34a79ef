"""l1_layernorm (no affine parameters) through Tokamax's public API, as a user calls it:
``tokamax.layer_norm`` with ``implementation="triton"``. Tokamax checks that the default device
supports Triton (an NVIDIA GPU, from its platform and compute capability) before it traces
anything, and sizes its grid from the device's SM count: both must answer as the GPU the
kernel is judged for."""
import tokamax

TARGET = "gpu"


def kernel(x):
    return tokamax.layer_norm(x, None, None, epsilon=1e-5, implementation="triton")
