"""11p_megablox_gmm through Tokamax's public API on a GPU: ``tokamax.ragged_dot(...,
implementation="triton")`` with the task's own ``group_sizes``. The kernel's store offsets and
masks come from the group sizes, an input of the task: the GPU race rule cannot decide them
before a trial, and decides them on each trial's inputs."""
import jax.numpy as jnp
import tokamax

TARGET = "gpu"


def kernel(lhs, rhs, group_sizes):
    out = tokamax.ragged_dot(lhs, rhs, group_sizes, preferred_element_type=jnp.float32,
                             implementation="triton")
    return out.astype(lhs.dtype)
