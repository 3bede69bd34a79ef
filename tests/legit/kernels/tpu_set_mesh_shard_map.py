"""8p_gemm written against a mesh set once for the program, as pod code sets it: ``jax.set_mesh``
at import (outside any trace, as JAX requires) over a one-device ``jax.make_mesh`` with JAX's
default Explicit axes, the operands resharded onto it by ``PartitionSpec`` alone, and the Pallas
matmul inside a ``jax.shard_map`` that takes the mesh from the context. Plain JAX traces and runs
this file on any single device; so must the evaluator."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.sharding import PartitionSpec as P

TARGET = "tpu"

MESH = jax.make_mesh((1,), ("model",))
jax.set_mesh(MESH)


def _matmul(a_ref, b_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def _local(a, b):
    m, k = a.shape
    n = b.shape[1]
    bm, bn, bk = min(256, m), min(256, n), min(256, k)
    return pl.pallas_call(
        _matmul, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")))(a, b)


def kernel(a, b):
    a = jax.reshard(a, P("model"))
    b = jax.reshard(b, P())
    out = jax.shard_map(_local, in_specs=(P("model"), P()), out_specs=P("model"),
                        check_vma=False)(a, b)
    return jax.reshard(out, P())
