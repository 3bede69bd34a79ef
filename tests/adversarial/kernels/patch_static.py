"""Cheat (8p_gemm): monkeypatches jax.block_until_ready so the harness's timer stops early."""
import jax

TARGET = "tpu"

jax.block_until_ready = lambda x: x


def kernel(a, b):
    return a @ b
