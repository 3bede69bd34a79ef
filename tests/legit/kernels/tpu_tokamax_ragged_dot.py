"""11p_megablox_gmm through Tokamax's public API, as a user calls it: ``tokamax.ragged_dot``
with ``implementation="mosaic"``. Tokamax picks its Mosaic TPU kernel from the default device's
kind and checks ``supported_on`` (a TPU of generation 5 or newer, from ``pltpu.get_tpu_info``)
before it traces anything: both must answer as the TPU the kernel is judged for."""
import jax.numpy as jnp
import tokamax

TARGET = "tpu"


def kernel(lhs, rhs, group_sizes):
    out = tokamax.ragged_dot(lhs, rhs, group_sizes, preferred_element_type=jnp.float32,
                             implementation="mosaic")
    return out.astype(lhs.dtype)
