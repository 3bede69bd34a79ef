"""12p_rmsnorm written as pod code is written, run on one chip: a mesh over the chip's devices
(``jax.make_mesh``), the input constrained to a ``NamedSharding`` over it, and the Pallas kernel
inside a ``jax.shard_map`` over the one-device mesh. Plain JAX traces and runs this file on any
single device; so must the evaluator. (``check_vma=False``: JAX's own interpret mode cannot run a
kernel under the default varying-axes check, on any host.)"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

TARGET = "tpu"
EPS = 1e-5


def _rmsnorm(x_ref, w_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    o_ref[...] = (x * jax.lax.rsqrt(ms + EPS) * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def _local(x, w):
    rows, d = x.shape
    block = min(rows, 128)
    return pl.pallas_call(
        _rmsnorm, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(rows // block,),
        in_specs=[pl.BlockSpec((block, d), lambda i: (i, 0)),
                  pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block, d), lambda i: (i, 0)))(x, w.reshape(1, d))


def kernel(x, w):
    mesh = jax.make_mesh((1,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    shape = x.shape
    x = jax.lax.with_sharding_constraint(x.reshape(-1, shape[-1]), NamedSharding(mesh, P("data")))
    out = jax.shard_map(_local, mesh=mesh, in_specs=(P("data"), P()), out_specs=P("data"),
                        check_vma=False)(x, w)
    return out.reshape(shape)
