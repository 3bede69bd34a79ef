"""The kernel-work counter (``judge/kernel_work.py``) through every wrapper JAX offers, on the
trial's data, and with bytes counted as blocks move.

- **Wrappers**: a kernel inside ``jit``, ``checkpoint``, ``custom_jvp``/``custom_vjp``,
  ``shard_map`` (its body once per device of the mesh), ``vmap``, ``scan``, ``cond`` and
  ``fori_loop`` counts its work; one inside a higher-order primitive the counter does not read
  makes the count unreadable (the runner's `unverified`), never a count of nothing. The census
  walks JAX's registries of primitives with jaxpr rules and fails on one nobody decided about.
- **Data**: a loop bound each program loads from a blocked operand (JAX's GPU decode
  attention's kv_len) is read through the operand's index map once the trial's data is known.
- **Bytes**: a kernel moves the blocks its index maps place, not its operands in full.
"""

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from jaxbench.evaluator.judge import kernel_work

M, K, N, BM = 64, 32, 16, 16
MATMUL_FLOPS = 2 * M * K * N
X = jax.ShapeDtypeStruct((M, K), jnp.float32)
W = jax.ShapeDtypeStruct((K, N), jnp.float32)


def _matmul_body(x_ref, w_ref, o_ref):
    o_ref[...] = jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)


def _matmul(x, w):
    m = x.shape[0]
    return pl.pallas_call(
        _matmul_body, out_shape=jax.ShapeDtypeStruct((m, w.shape[1]), jnp.float32),
        grid=(m // BM,),
        in_specs=[pl.BlockSpec((BM, x.shape[1]), lambda i: (i, 0)),
                  pl.BlockSpec(w.shape, lambda i: (0, 0))],
        out_specs=pl.BlockSpec((BM, w.shape[1]), lambda i: (i, 0)))(x, w)


@jax.custom_jvp
def _jvp_wrapped(x, w):
    return _matmul(x, w)


_jvp_wrapped.defjvp(lambda p, t: (_jvp_wrapped(*p), _jvp_wrapped(t[0], p[1])))


@jax.custom_vjp
def _vjp_wrapped(x, w):
    return _matmul(x, w)


_vjp_wrapped.defvjp(lambda x, w: (_matmul(x, w), (x, w)), lambda r, g: (g @ r[1].T, r[0].T @ g))


def _one_device_mesh():
    return Mesh(np.array(jax.devices()[:1]), ("d",))


WRAPPERS = {
    "jit": lambda x, w: jax.jit(_matmul)(x, w),
    "checkpoint": lambda x, w: jax.checkpoint(_matmul)(x, w),
    "custom_jvp": _jvp_wrapped,
    "custom_vjp": _vjp_wrapped,
    "shard_map": lambda x, w: jax.shard_map(_matmul, mesh=_one_device_mesh(),
                                            in_specs=(P("d"), P()), out_specs=P("d"),
                                            check_vma=False)(x, w),
    "vmap": lambda x, w: jax.vmap(_matmul, in_axes=(0, None))(x.reshape(2, M // 2, K), w)
    .reshape(M, N),
    "scan": lambda x, w: jax.lax.scan(lambda c, _: (c, _matmul(x, w)), 0, length=1)[1][0],
    "cond": lambda x, w: jax.lax.cond(True, _matmul, lambda a, b: a[:, :N], x, w),
    "fori_loop": lambda x, w: jax.lax.fori_loop(0, 1, lambda i, o: _matmul(x, w), jnp.zeros(
        (M, N), jnp.float32)),
}


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_a_kernel_inside_each_wrapper_counts_its_work(name):
    work = kernel_work.count(jax.make_jaxpr(WRAPPERS[name])(X, W))
    assert work.flops == MATMUL_FLOPS, (name, work.flops)


def test_shard_map_counts_its_body_once_per_device_of_its_mesh():
    class _Mesh:  # a stand-in for a mesh of 4 devices on this 1-device host
        size = 4

    closed = jax.make_jaxpr(WRAPPERS["shard_map"])(X, W)
    eqn = next(e for e in closed.jaxpr.eqns if e.primitive.name == "shard_map")
    eqn.params["mesh"] = _Mesh()  # (params is a plain dict on the equation)
    assert kernel_work.count(closed).flops == 4 * MATMUL_FLOPS


def test_a_kernel_inside_a_wrapper_the_counter_does_not_read_is_unreadable():
    def solve(x, w):  # custom_linear_solve: a higher-order primitive the counter does not read
        b = jnp.ones((M, N), jnp.float32)
        return jax.lax.custom_linear_solve(lambda v: _matmul(x, w) * 0 + v, b,
                                           solve=lambda mv, v: v)

    closed = jax.make_jaxpr(solve)(X, W)
    assert "custom_linear_solve" in {e.primitive.name for e in closed.jaxpr.eqns}
    with pytest.raises(kernel_work.Unreadable, match="custom_linear_solve"):
        kernel_work.count(closed)


# Primitives with rules on jaxprs in JAX's registries that hold no nested program the
# kernels' work could hide in (they read, write or allocate refs, or print), and those that
# nest kernels themselves (counted as kernels).
FIRST_ORDER = {"addupdate", "get", "swap", "new_ref", "free_ref", "debug_callback",
               "debug_print",
               # JAX's hijax state (boxes, logs, variables): classes of their own, no program
               "box_get", "box_set", "new_box", "log_extend", "new_log", "log_read",
               "get_variable", "set_variable", "new_variable"}
KERNELS = {"pallas_call", "core_map", "mpmd_map"}
# Higher-order primitives the counter deliberately does not read: a kernel inside one makes
# the count unreadable (the test above shows the mechanism on custom_linear_solve).
NOT_READ = {"call_hi_primitive", "call_hi_primitive_linearized", "remat_opt",
            "custom_linear_solve", "custom_lin", "custom_transpose_call", "linear_call",
            "checkify"}


def _registered_higher_order():
    from jax._src.interpreters import partial_eval as pe

    names = set()
    for registry in (pe.dce_rules, pe.partial_eval_jaxpr_custom_rules):
        names |= {getattr(p, "name", str(p)) for p in registry}
    return names


def test_census_every_registered_higher_order_primitive_is_decided():
    """JAX's registries of primitives with rules over their jaxprs (dead-code elimination and
    partial evaluation, which every primitive nesting a program needs): every one is read by
    the counter, a kernel, first-order, or deliberately not read (then it raises). A JAX
    release that adds one fails here until someone decides which."""
    from jax.experimental.pallas import tpu  # noqa: F401 - registers Pallas' TPU primitives

    known = kernel_work.READ_HIGHER_ORDER | KERNELS | FIRST_ORDER | NOT_READ
    found = _registered_higher_order()
    assert found & kernel_work.READ_HIGHER_ORDER  # the registries were read at all
    undecided = sorted(found - known)
    assert not undecided, f"higher-order primitives nobody decided about: {undecided}"


def _primitives_of_their_own():
    """Every primitive alive once JAX, Pallas (both targets), shard_map and Tokamax (where
    installed) are imported, found by the garbage collector rather than by a registry, that
    is of a class of its own or binds sub-functions (``get_bind_params``): where a primitive
    that nests a program without registering rules for it would stand out."""
    import gc

    from jax._src import core
    from jax.experimental.pallas import tpu  # noqa: F401
    with contextlib.suppress(ImportError):
        from jax.experimental.pallas import triton  # noqa: F401
    with contextlib.suppress(ImportError):
        import tokamax  # noqa: F401

    base = core.Primitive.get_bind_params
    return {p.name for p in gc.get_objects() if isinstance(p, core.Primitive)
            and (type(p) is not core.Primitive or type(p).get_bind_params is not base)}


def test_census_primitives_found_outside_the_registries_are_decided():
    """The census above reads JAX's registries; this one walks every primitive object there
    is, so one that nests a program without registering a rule fails here too."""
    known = kernel_work.READ_HIGHER_ORDER | KERNELS | FIRST_ORDER | NOT_READ
    found = _primitives_of_their_own()
    assert found & kernel_work.READ_HIGHER_ORDER  # the walk found wrappers the counter reads
    undecided = sorted(found - known)
    assert not undecided, f"primitives of a class of their own nobody decided about: {undecided}"


# -- the trial's data ----------------------------------------------------------------------------
def _bounded_rows(x, lengths):
    """One program per row block; each loads its length from a blocked operand and sums that
    many columns of its block (a loop bound from data, as JAX's GPU decode attention's)."""
    rows, cols = x.shape

    def body(x_ref, n_ref, o_ref):
        def step(j, acc):
            return acc + x_ref[:, pl.ds(j, 1)] * 2.0

        o_ref[...] = jax.lax.fori_loop(0, n_ref[0], step, jnp.zeros((BM, 1), jnp.float32))

    return pl.pallas_call(
        body, out_shape=jax.ShapeDtypeStruct((rows, 1), jnp.float32), grid=(rows // BM,),
        in_specs=[pl.BlockSpec((BM, cols), lambda i: (i, 0)),
                  pl.BlockSpec((1,), lambda i: (i,))],
        out_specs=pl.BlockSpec((BM, 1), lambda i: (i, 0)))(x, lengths)


def test_a_loop_bound_loaded_from_a_blocked_operand_counts_as_it_runs_on_the_data():
    closed = jax.make_jaxpr(_bounded_rows)(X, jax.ShapeDtypeStruct((M // BM,), jnp.int32))
    assert kernel_work.count(closed).flops == 0  # unknown lengths: no trip is sure to run
    lengths = np.array([1, 0, 3, 32], np.int32)
    work = kernel_work.count(closed, known=[None, lengths])
    # each trip: a multiply and an add on a (BM, 1) column, and the loop counter's step
    assert work.flops == (2 * BM + 1) * int(lengths.sum())


def test_a_block_past_the_operand_edge_is_not_read_as_data():
    """A length block that reads past the end of the lengths (padding, undefined) counts no
    trip: the judge cannot know what the program loads there."""
    def past(x, lengths):
        rows, cols = x.shape

        def body(x_ref, n_ref, o_ref):
            o_ref[...] = jax.lax.fori_loop(0, n_ref[1], lambda j, acc: acc + x_ref[:, pl.ds(j, 1)],
                                           jnp.zeros((BM, 1), jnp.float32))

        return pl.pallas_call(
            body, out_shape=jax.ShapeDtypeStruct((rows, 1), jnp.float32), grid=(rows // BM,),
            in_specs=[pl.BlockSpec((BM, cols), lambda i: (i, 0)),
                      pl.BlockSpec((2,), lambda i: (i,))],
            out_specs=pl.BlockSpec((BM, 1), lambda i: (i, 0)))(x, lengths)

    closed = jax.make_jaxpr(past)(X, jax.ShapeDtypeStruct((5,), jnp.int32))
    assert kernel_work.count(closed, known=[None, np.full(5, 4, np.int32)]).flops == 0


# -- bytes as moved ------------------------------------------------------------------------------
def test_a_kernel_moves_the_blocks_it_places_not_its_operands_in_full():
    table = jax.ShapeDtypeStruct((1024, 128), jnp.float32)
    rows = jax.ShapeDtypeStruct((8, 128), jnp.float32)

    def one_block(t, r):
        def body(t_ref, r_ref, o_ref):
            block = t_ref[...]
            o_ref[...] = jnp.where(block == block, r_ref[...], block)

        return pl.pallas_call(
            body, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32), grid=(1,),
            in_specs=[pl.BlockSpec((8, 128), lambda i: (0, 0)),
                      pl.BlockSpec((8, 128), lambda i: (0, 0))],
            out_specs=pl.BlockSpec((8, 128), lambda i: (0, 0)))(t, r)

    work = kernel_work.count(jax.make_jaxpr(one_block)(table, rows))
    assert work.bytes == 3 * 8 * 128 * 4  # one block of the table, the rows, the output


def test_a_block_read_by_every_program_crosses_hbm_once():
    work = kernel_work.count(jax.make_jaxpr(_matmul)(X, W))
    assert work.bytes == 4 * (M * K + K * N + M * N)  # W's one block is not counted per program


def _precision_flag(x, w):
    """An attack on counting with data: a table that is 1 where a block's f32 matmul equals the
    same matmul at the highest precision. On the host's CPU the two are equal, so every block
    "routes" to the kernel's matmul; a TPU's default float32 matmul precision is lower, so
    there the flags may be 0 and the kernel only copy (the work left to XLA)."""
    lo = jnp.dot(x, w)
    hi = jnp.dot(x, w, precision=jax.lax.Precision.HIGHEST)
    table = jnp.all((lo == hi).reshape(4, -1), axis=1).astype(jnp.int32)
    return _routed_by(table, x, w)


def test_floats_decide_only_where_the_host_runs_the_trial():
    """A table derived from floats (a router's logits, a precision test) is computed on the
    host only where the host runs the trial (interpret mode: ``floats=True``), and there it
    is what the trial computes: every block routes to the matmul. Elsewhere (a chip, which
    may round otherwise) it stays unknown and the cheapest side counts."""
    closed = jax.make_jaxpr(_precision_flag)(X, W)
    x, w = np.ones((M, K), np.float32), np.ones((K, N), np.float32)
    work = kernel_work.count(closed, known=[x, w])
    assert work.flops < MATMUL_FLOPS / 4 and work.wants_data
    on_this_host = kernel_work.count(closed, known=[x, w], floats=True)
    assert MATMUL_FLOPS <= on_this_host.flops < MATMUL_FLOPS + 64


def _sorted_groups(ids, x, w):
    """A table computed from an integer input by integer work the trace alone cannot fold
    (a count of each block's ids through a scatter-add, then a comparison)."""
    counts = jnp.zeros(4, jnp.int32).at[jnp.sort(ids)].add(1)  # (sort: never folded)
    return _routed_by((counts > 0).astype(jnp.int32), x, w)


def test_a_table_computed_from_integer_data_is_computed_on_the_trial():
    """Integer work on a trial's integer inputs runs on the host: the blocks the ids name count
    their matmul, the others nothing."""
    ids = jax.ShapeDtypeStruct((6,), jnp.int32)
    closed = jax.make_jaxpr(_sorted_groups)(ids, X, W)
    assert kernel_work.count(closed).flops < MATMUL_FLOPS / 4  # unknown ids: the cheapest side
    named = np.array([0, 0, 2, 3, 3, 3], np.int32)  # blocks 0, 2, 3
    on_trial = kernel_work.count(closed, known=[named, None, None])
    per_block = MATMUL_FLOPS / 4
    assert 3 * per_block <= on_trial.flops < 3 * per_block + 64


def test_a_loop_on_the_trial_data_is_never_run_on_the_host():
    """The host computes what the kernels' integer operands depend on, but never a loop: its
    trips are the data's (a kernel file's ``while`` on its inputs may never end; the trusted
    runner must not run it). The table behind a loop stays unknown: the cheapest side counts."""
    def looped(ids, x, w):
        table = (jnp.zeros(4, jnp.int32).at[ids].add(1) > 0).astype(jnp.int32)
        _, table = jax.lax.while_loop(  # (the body changes the table: JAX cannot forward it)
            lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + (c[0] > 100).astype(jnp.int32)),
            (0, table))
        return _routed_by(table, x, w)

    closed = jax.make_jaxpr(looped)(jax.ShapeDtypeStruct((6,), jnp.int32), X, W)
    work = kernel_work.count(closed, known=[np.array([0, 1, 2, 3, 0, 1], np.int32), None, None])
    assert work.flops < MATMUL_FLOPS / 4 and work.wants_data


def _routed_by(table, x, w):
    from jax.experimental.pallas import tpu as pltpu

    def body(t_ref, x_ref, w_ref, o_ref):
        o_ref[...] = x_ref[:, :N]

        @pl.when(t_ref[pl.program_id(0)] > 0)
        def _():
            _matmul_body(x_ref, w_ref, o_ref)

    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(4,),
        in_specs=[pl.BlockSpec((BM, K), lambda i, t: (i, 0)),
                  pl.BlockSpec((K, N), lambda i, t: (0, 0))],
        out_specs=pl.BlockSpec((BM, N), lambda i, t: (i, 0)))
    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
                          grid_spec=spec)(table, x, w)


def _dma_rows(table, copies=1):
    """A kernel that DMAs rows 8-15 of a table in ``ANY`` memory ``copies`` times into VMEM and
    writes them out."""
    from jax.experimental.pallas import tpu as pltpu

    def body(t_ref, o_ref, buf, sem):
        for _ in range(copies):
            copy = pltpu.make_async_copy(t_ref.at[pl.ds(8, 8), :], buf, sem)
            copy.start()
            copy.wait()
        o_ref[...] = buf[...]

    return pl.pallas_call(
        body, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32), grid=(1,),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((8, 128), lambda i: (0, 0)),
        scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA(())])(table)


def test_an_operand_the_kernel_moves_by_dma_counts_the_bytes_its_dmas_move():
    """A table in ANY memory of which the kernel DMAs one (8, 128) block moved that block, not
    the table; a DMA repeated moves no more than the table (no credit for copying again)."""
    table = jax.ShapeDtypeStruct((1024, 128), jnp.float32)
    block = 8 * 128 * 4
    once = kernel_work.count(jax.make_jaxpr(_dma_rows)(table))
    assert once.bytes == block + block  # the DMA'd block, and the output block
    small = jax.ShapeDtypeStruct((16, 128), jnp.float32)
    many = kernel_work.count(jax.make_jaxpr(lambda t: _dma_rows(t, copies=8))(small))
    assert many.bytes == 16 * 128 * 4 + block  # capped at the table, plus the output
