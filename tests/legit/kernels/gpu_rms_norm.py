"""Legit (12p_rmsnorm): JAX's Pallas GPU RMS norm (jax.experimental.pallas.ops.gpu.rms_norm),
weight = scale and a zero bias."""
import jax.numpy as jnp
from jax.experimental.pallas.ops.gpu import rms_norm as pallas_rms_norm

TARGET = "gpu"


def kernel(x, scale):
    return pallas_rms_norm.rms_norm(x, scale, jnp.zeros_like(scale), eps=1e-5)
