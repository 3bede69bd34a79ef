"""The kernels' work of a vmapped ``pallas_call`` (``judge/kernel_work.py``).

``jax.vmap`` of a ``pallas_call`` adds the batch as a grid dimension (the grid mapping's
``vmapped_dims``); the body's ``program_id(axis)`` and ``num_programs(axis)`` still name the
axis-th dimension of the *user's* grid, the others. Read against the whole grid, JAX's splash
attention (the 2p_gqa_attention expert, vmapped over the batch) read its block-sparsity tables
at the head index instead of the query block's, out of range, so every block's work counted as
its cheapest (empty) branch: 4.0e8 FLOPs of ~2.8e12, and the expert was refused (``no_pallas``)
for 40% of its work in XLA. The same misreading also counted work that does not run (a branch
on the user's program id read as one on the batch index)."""

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from jaxbench.evaluator.judge import kernel_work

ROOT = Path(__file__).resolve().parents[1]
EXPERT = ROOT / "src/jaxbench/tasks/jaxbench/2p_gqa_attention/expert_tpu.py"


def _expert():
    spec = importlib.util.spec_from_file_location("_splash_expert", EXPERT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_vmapped_splash_expert_counts_its_attention_at_full_size():
    from jaxbench.tasks import get_task

    task = get_task("2p_gqa_attention")
    b, h, kv, s, d = 4, 128, 8, 4096, 128  # the full size
    q = jax.ShapeDtypeStruct((b, h, s, d), jnp.bfloat16)
    k = jax.ShapeDtypeStruct((b, kv, s, d), jnp.bfloat16)
    work = kernel_work.count(jax.make_jaxpr(_expert().kernel)(q, k, k))
    causal = task.flops("full")  # the exact causal half: splash's blocks cover at least it
    assert causal <= work.flops <= 2 * causal
    outside = sum(f for f, _, _ in work.outside_eqns)  # the scaling of q, 2.7e8
    assert outside < 0.001 * work.flops

    # the batch is the grid's vmapped dimension: B times one batch element's work
    one = kernel_work.count(jax.make_jaxpr(
        lambda q, k, v: jax.vmap(_expert().kernel)(q, k, v))(
        *(jax.ShapeDtypeStruct((1, *x.shape), x.dtype) for x in (q, k, k))))
    assert one.flops == work.flops  # vmapped twice over: the same programs


DOT = 2 * 32 * 64 * 32  # one program's (32, 64) @ (64, 32)


def _branchy(x, w):
    """Eight programs of 32 rows; the matmul runs only in the user's first two programs, the
    others copy."""
    def body(x_ref, w_ref, o_ref):
        o_ref[...] = x_ref[:, :32]

        @pl.when(pl.program_id(0) < 2)
        def _():
            o_ref[...] = jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

    return pl.pallas_call(
        body, out_shape=jax.ShapeDtypeStruct((256, 32), jnp.float32), grid=(8,),
        in_specs=[pl.BlockSpec((32, 64), lambda i: (i, 0)),
                  pl.BlockSpec((64, 32), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((32, 32), lambda i: (i, 0)))(x, w)


def test_program_ids_of_a_vmapped_kernel_name_the_users_grid():
    x = jax.ShapeDtypeStruct((256, 64), jnp.float32)
    w = jax.ShapeDtypeStruct((64, 32), jnp.float32)
    assert kernel_work.count(jax.make_jaxpr(_branchy)(x, w)).flops == 2 * DOT
    batched = jax.make_jaxpr(jax.vmap(_branchy))(
        jax.ShapeDtypeStruct((2, 256, 64), jnp.float32), jax.ShapeDtypeStruct((2, 64, 32),
                                                                              jnp.float32))
    mapping = next(e for e in batched.jaxpr.eqns if e.primitive.name == "pallas_call"
                   ).params["grid_mapping"]
    assert mapping.grid == (2, 8) and mapping.vmapped_dims == (0,)
    # the first two programs of each of the 2 batch elements: 4 dots. Read against the whole
    # grid (program_id(0) the batch index, always < 2), all 16 programs would count one: work
    # that does not run.
    work = kernel_work.count(batched)
    assert work.flops == 4 * DOT
    assert work.kernels[0]["programs"] == 16
