"""21k_gemm_divide_sum_scaling as models wrote it: the module builds its parameters with
`jax.random.PRNGKey(0)` (`init_params`), and `kernel` starts from them, then uses the task's
weight; the key's ops are dead code in the traced module. One kernel does the GEMM, the
divide, the row sum (in float32) and the scaling: grid (row block, K block), a float32 VMEM accumulator."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"
SCALING = 1.5


def init_params(key, in_features, out_features):
    return {"weight": jax.random.normal(key, (out_features, in_features), jnp.bfloat16)
            * (1.0 / in_features ** 0.5)}


def _kernel(x_ref, w_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(1) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jax.lax.dot_general(x_ref[...], w_ref[...], (((1,), (1,)), ((), ())),
                                        preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(1) == pl.num_programs(1) - 1)
    def _():
        y = acc_ref[...] / 2  # the row sum in float32 (rounded to bfloat16 first it is
        # not within tolerance on a TPU v5e: 18 of 256 rows at up to 3.4x)
        o_ref[...] = (jnp.sum(y, axis=1, keepdims=True) * SCALING).astype(o_ref.dtype)


def kernel(x, weight):
    params = init_params(jax.random.PRNGKey(0), x.shape[1], weight.shape[0])
    params["weight"] = weight
    w = params["weight"]
    m, k = x.shape
    n = w.shape[0]
    bm, bk = min(128, m), min(256, k)
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, 1), x.dtype),
        grid=(m // bm, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, kk: (i, kk)),
                  pl.BlockSpec((n, bk), lambda i, kk: (0, kk))],
        out_specs=pl.BlockSpec((bm, 1), lambda i, kk: (i, 0)),
        scratch_shapes=[pltpu.VMEM((bm, n), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
    )(x, w)
