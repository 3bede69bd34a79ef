"""The kernels' own work, counted on the traced jaxpr (``judge/kernel_work.py``): FLOPs per
program times the grid, live work only, bytes of the kernel's operands; and the data flow from
kernels to outputs."""

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl

from jaxbench.evaluator.judge import kernel_work


def _matmul(x_ref, w_ref, o_ref):
    o_ref[...] = jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)


def _tiled_matmul(x, w, bm=32):
    m, k = x.shape
    n = w.shape[1]
    return pl.pallas_call(
        _matmul, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // bm,),
        in_specs=[pl.BlockSpec((bm, k), lambda i: (i, 0)), pl.BlockSpec((k, n), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((bm, n), lambda i: (i, 0)))(x, w)


SPECS = (jax.ShapeDtypeStruct((128, 64), jnp.float32), jax.ShapeDtypeStruct((64, 32), jnp.float32))


def _table_branch(table, x, w):
    """Four programs; each runs the matmul where its entry of the scalar-prefetch ``table``
    is positive, else copies."""
    from jax.experimental.pallas import tpu as pltpu

    def body(t_ref, x_ref, w_ref, o_ref):
        o_ref[...] = x_ref[:, :32]

        @pl.when(t_ref[pl.program_id(0)] > 0)
        def _():
            _matmul(x_ref, w_ref, o_ref)

    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(4,),
        in_specs=[pl.BlockSpec((32, 64), lambda i, t: (i, 0)),
                  pl.BlockSpec((64, 32), lambda i, t: (0, 0))],
        out_specs=pl.BlockSpec((32, 32), lambda i, t: (i, 0)))
    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((128, 32), jnp.float32),
                          grid_spec=spec)(table, x, w)


def test_a_tiled_matmul_counts_2mkn_and_its_operands():
    work = kernel_work.count(jax.make_jaxpr(_tiled_matmul)(*SPECS))
    assert work.flops == 2 * 128 * 64 * 32  # 2 * bm*k*n per program, 4 programs
    assert work.bytes == 4 * (128 * 64 + 64 * 32 + 128 * 32)
    assert work.kernels[0]["programs"] == 4


def test_work_whose_result_is_dropped_is_not_counted():
    def padded(x_ref, w_ref, o_ref):
        jnp.dot(x_ref[...], w_ref[...]) * 3.0  # computed, never stored
        _matmul(x_ref, w_ref, o_ref)

    def fn(x, w):
        return pl.pallas_call(padded, out_shape=jax.ShapeDtypeStruct((128, 32), jnp.float32))(x, w)

    assert kernel_work.count(jax.make_jaxpr(fn)(*SPECS)).flops == 2 * 128 * 64 * 32


def test_a_kernel_in_a_scan_counts_once_per_step():
    def fn(x, w):
        def step(carry, _):
            return carry, _tiled_matmul(x, w)
        return jax.lax.scan(step, 0.0, None, length=3)[1]

    assert kernel_work.count(jax.make_jaxpr(fn)(*SPECS)).flops == 3 * 2 * 128 * 64 * 32


def test_outside_equations_are_priced_for_the_message():
    def fn(x, w):
        return _tiled_matmul(x, w) + jnp.dot(x, w)  # the second matmul in XLA

    work = kernel_work.count(jax.make_jaxpr(fn)(*SPECS))
    flops, name, _ = work.outside_eqns[0]
    assert (name, flops) == ("dot_general", 2 * 128 * 64 * 32)


@pytest.mark.parametrize("second,missing", [
    (lambda x, w, y: y * 2.0, []),  # made from a kernel's result
    (lambda x, w, y: x @ w, [(1, "dot_general")]),  # made by XLA alone
    (lambda x, w, y: x, [(1, "an input passed through")]),
])
def test_every_output_must_come_out_of_a_kernel(second, missing):
    def fn(x, w):
        y = _tiled_matmul(x, w)
        return y, second(x, w, y)

    closed = jax.make_jaxpr(fn)(*SPECS)
    found = kernel_work.outputs_without_kernel(closed)
    assert [(i, what) for i, what, _ in found] == missing
    assert [(i, what) for i, what, _ in kernel_work.count(closed).unreached] == missing


def test_a_kernel_inside_a_jit_reaches_its_outputs():
    found = kernel_work.outputs_without_kernel(jax.make_jaxpr(jax.jit(_tiled_matmul))(*SPECS))
    assert found == []


# -- only what surely runs and reaches the result (issue 46) -----------------------------------
DOT = 2 * 32 * 64 * 32  # one program's dot in _tiled_matmul


def _gridded(body, x, w, extra_out=False):
    """``body`` over the tiled matmul's grid (4 programs of 32 rows); optionally a second,
    (128, 32) output."""
    out = jax.ShapeDtypeStruct((128, 32), jnp.float32)
    spec = pl.BlockSpec((32, 32), lambda i: (i, 0))
    return pl.pallas_call(
        body, out_shape=(out, out) if extra_out else out, grid=(4,),
        in_specs=[pl.BlockSpec((32, 64), lambda i: (i, 0)), pl.BlockSpec((64, 32), lambda i: (0, 0))],
        out_specs=(spec, spec) if extra_out else spec)(x, w)


def _count(fn):
    return kernel_work.count(jax.make_jaxpr(fn)(*SPECS))


def test_a_branch_no_program_takes_counts_nothing():
    def body(x_ref, w_ref, o_ref):
        o_ref[...] = x_ref[:, :32]

        @pl.when(pl.program_id(0) < 0)
        def _():
            _matmul(x_ref, w_ref, o_ref)

    assert _count(lambda x, w: _gridded(body, x, w)).flops == 0


def test_a_branch_on_program_ids_counts_the_programs_that_take_it():
    def body(x_ref, w_ref, o_ref):
        o_ref[...] = x_ref[:, :32]

        @pl.when(pl.program_id(0) % 2 == 1)
        def _():
            _matmul(x_ref, w_ref, o_ref)

    assert _count(lambda x, w: _gridded(body, x, w)).flops == 2 * DOT


def test_a_branch_on_data_counts_its_cheapest_side():
    def body(x_ref, w_ref, o_ref):
        o_ref[...] = x_ref[:, :32]

        @pl.when(x_ref[0, 0] > 0)
        def _():
            _matmul(x_ref, w_ref, o_ref)

    assert _count(lambda x, w: _gridded(body, x, w)).flops < 8  # the test, per program


def test_a_loop_counts_its_proven_trips_and_otherwise_none():
    def body(trips):
        def kernel(x_ref, w_ref, o_ref):
            o_ref[...] = jnp.zeros_like(o_ref)

            def step(_, acc):
                return acc + jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

            o_ref[...] = jax.lax.fori_loop(0, trips(x_ref), step, o_ref[...])
        return kernel

    by_program = body(lambda x_ref: pl.program_id(0))  # 0 + 1 + 2 + 3 trips
    # (each trip adds the dot to the accumulator: 32 * 32 more)
    assert _count(lambda x, w: _gridded(by_program, x, w)).flops == 6 * (DOT + 32 * 32 + 1)
    never = body(lambda x_ref: pl.program_id(0) - 4)  # a while that runs zero times
    assert _count(lambda x, w: _gridded(never, x, w)).flops < 16
    unknown = body(lambda x_ref: x_ref[0, 0].astype(jnp.int32))  # trips from data
    assert _count(lambda x, w: _gridded(unknown, x, w)).flops < 16


def test_a_kernel_whose_result_nothing_uses_counts_nothing():
    def fn(x, w):
        _tiled_matmul(x, w)  # dropped
        return _gridded(lambda x_ref, w_ref, o_ref: o_ref.__setitem__(..., x_ref[:, :32]), x, w)

    work = _count(fn)
    assert (work.flops, len(work.kernels)) == (0, 1)


def test_a_kernel_reaching_the_result_only_times_zero_counts_nothing():
    def fn(x, w):
        return x[:, :32] * 2.0 + 0.0 * _tiled_matmul(x, w)[0, 0]

    work = _count(fn)
    assert (work.flops, work.kernels) == (0, [])
    assert [(i, what) for i, what, _ in work.unreached] == [(0, "add")]


def test_work_multiplied_by_zero_in_the_body_counts_nothing():
    def body(x_ref, w_ref, o_ref):
        o_ref[...] = x_ref[:, :32] + 0.0 * jnp.dot(x_ref[...], w_ref[...])

    assert _count(lambda x, w: _gridded(body, x, w)).flops == 4 * 32 * 32 * 2  # the mul, the add


def test_an_output_never_written_or_never_used_moves_no_bytes():
    def body(x_ref, w_ref, o_ref, p_ref):
        _matmul(x_ref, w_ref, o_ref)  # p_ref never written

    work = _count(lambda x, w: _gridded(body, x, w, extra_out=True))
    assert work.bytes == 4 * (128 * 64 + 64 * 32 + 128 * 32)

    def written_unused(x_ref, w_ref, o_ref, p_ref):
        _matmul(x_ref, w_ref, o_ref)
        p_ref[...] = jnp.dot(x_ref[...], w_ref[...]) * 2.0  # written, then dropped outside

    work = _count(lambda x, w: _gridded(written_unused, x, w, extra_out=True)[0])
    assert work.bytes == 4 * (128 * 64 + 64 * 32 + 128 * 32)
    assert work.flops == 4 * DOT  # the dot only the dropped output holds counts nothing


def test_an_operand_the_body_never_reads_moves_no_bytes():
    def body(x_ref, w_ref, o_ref):
        o_ref[...] = x_ref[:, :32]

    assert _count(lambda x, w: _gridded(body, x, w)).bytes == 4 * (128 * 64 + 128 * 32)


@pytest.mark.parametrize("second", [
    lambda x, y: x[:, :32] + 0 * y,  # times a constant zero
    lambda x, y: x[:, :32] + jnp.zeros_like(y) * y,
    lambda x, y: x[:, :32] + (y - y),  # x - x
    lambda x, y: jnp.where(False, y, x[:, :32]),  # a constant predicate
    lambda x, y: jax.lax.cond(True, lambda: x[:, :32] * 2.0, lambda: y),  # a constant index
])
def test_a_value_only_nominally_from_a_kernel_is_not_from_one(second):
    def fn(x, w):
        return second(x, _tiled_matmul(x, w))

    closed = jax.make_jaxpr(fn)(*SPECS)
    assert [i for i, _, _ in kernel_work.outputs_without_kernel(closed)] == [0]


def test_a_value_through_a_loop_is_followed_to_a_fixed_point():
    def fn(x, w):
        y = _tiled_matmul(x, w)
        return jax.lax.fori_loop(0, 2, lambda i, c: x[:, :32] * 2.0, y)  # the carry is replaced

    closed = jax.make_jaxpr(fn)(*SPECS)
    assert [i for i, _, _ in kernel_work.outputs_without_kernel(closed)] == [0]


def test_a_float_never_decides_which_branch_counts():
    """``v == v`` is false for NaN, and rounding on the chip may differ: a branch whose
    predicate compares floats counts its cheapest side, even where the values look known."""
    def body(x_ref, w_ref, o_ref):
        o_ref[...] = x_ref[:, :32]
        v = jnp.float32(jnp.nan) * pl.program_id(0).astype(jnp.float32)

        @pl.when(v == v)  # never true
        def _():
            _matmul(x_ref, w_ref, o_ref)

        @pl.when(pl.program_id(0).astype(jnp.float32) * 0.5 < 10.0)
        def _():
            _matmul(x_ref, w_ref, o_ref)

    assert _count(lambda x, w: _gridded(body, x, w)).flops < 64


def test_a_branch_on_a_constant_table_counts_the_programs_it_picks():
    """A scalar-prefetch table made from constants (Tokamax's block masks) is known: a branch
    on ``table[program_id]`` counts the programs the table picks; the same table from the
    inputs is data, and the branch counts its cheapest side."""
    import numpy as np

    call = _table_branch

    constant = jnp.asarray(np.array([0, 1, 0, 1], np.int32))
    assert 2 * DOT <= _count(lambda x, w: call(constant + 1 - 1, x, w)).flops < 2 * DOT + 64
    from_data = lambda x, w: call((x[:4, 0] > 0).astype(jnp.int32), x, w)  # noqa: E731
    assert _count(from_data).flops < 64


def test_a_dropped_output_the_body_reads_back_still_counts():
    """Splash attention keeps its running max and sum in outputs the caller drops, and reads
    them back for the output it keeps: writes to them are not dead ends."""
    def body(x_ref, w_ref, o_ref, acc_ref):
        acc_ref[...] = jnp.dot(x_ref[...], w_ref[...])
        o_ref[...] = acc_ref[...] * 2.0

    assert _count(lambda x, w: _gridded(body, x, w, extra_out=True)[0]).flops >= 4 * DOT


def test_a_branch_on_an_integer_input_counts_as_it_runs_once_the_input_is_known():
    """A scalar-prefetch table from the kernel's integer input (a page table, group sizes) is
    data before any trial: the branch counts its cheapest side. Counted again with a trial's
    inputs known (``known``), the programs the input picks count their work, and a known
    input that picks none counts nothing (no credit for work that does not run)."""
    import numpy as np

    call = _table_branch

    closed = jax.make_jaxpr(call)(jax.ShapeDtypeStruct((4,), jnp.int32), *SPECS)
    assert kernel_work.count(closed).flops < 64
    three = kernel_work.count(closed, known=[np.array([1, 0, 1, 1], np.int32), None, None])
    assert 3 * DOT <= three.flops < 3 * DOT + 64
    none = kernel_work.count(closed, known=[np.zeros(4, np.int32), None, None])
    assert none.flops < 64
    # a float input is never read as known: it cannot steer the count
    floats = kernel_work.count(closed, known=[None, np.ones((128, 64), np.float32), None])
    assert floats.flops < 64


# -- grids of no program, out-of-range branch indices, aliases passed through -------------------
def _dynamic_grid(size):
    """The tiled matmul over a grid of ``size(x)`` programs (a dynamic grid bound)."""
    def fn(x, w):
        return pl.pallas_call(
            _matmul, out_shape=jax.ShapeDtypeStruct((128, 32), jnp.float32), grid=(size(x),),
            in_specs=[pl.BlockSpec((32, 64), lambda i: (i, 0)),
                      pl.BlockSpec((64, 32), lambda i: (0, 0))],
            out_specs=pl.BlockSpec((32, 32), lambda i: (i, 0)))(x, w)
    return fn


@pytest.mark.parametrize("grid", [
    lambda x: (0,),
    lambda x: (4, 0),
    lambda x: (x.shape[0] // (x.shape[0] + 1),),  # 0, from the shapes, at trace time
])
def test_a_grid_with_a_dimension_of_zero_runs_no_program(grid):
    def fn(x, w):
        return pl.pallas_call(
            _matmul, out_shape=jax.ShapeDtypeStruct((128, 32), jnp.float32), grid=grid(x),
            in_specs=[pl.BlockSpec((128, 64), lambda *_: (0, 0)),
                      pl.BlockSpec((64, 32), lambda *_: (0, 0))],
            out_specs=pl.BlockSpec((128, 32), lambda *_: (0, 0)))(x, w)

    work = _count(fn)
    assert (work.flops, work.bytes, work.kernels[0]["programs"]) == (0, 0, 0)


@pytest.mark.parametrize("size,programs", [
    (lambda x: (x[0, 0] > 0).astype(jnp.int32) * 0 + 4, 4),  # known: counted
    (lambda x: jnp.int32(4) - 4, 0),  # known to be 0: no program
    (lambda x: (x[0, 0] > 0).astype(jnp.int32) * 4, 0),  # from data: no credit, never 1
])
def test_a_dynamic_grid_counts_only_the_programs_it_surely_runs(size, programs):
    work = _count(_dynamic_grid(size))
    assert work.kernels[0]["programs"] == programs
    assert work.flops == programs * DOT


def _bind_cond(index, *operands, branches):
    """``cond_p`` bound directly: an index that ``lax.switch`` would clamp is not clamped."""
    closed = tuple(jax.make_jaxpr(b)(*operands) for b in branches)
    return jax.lax.cond_p.bind(index, *operands, branches=closed)


@pytest.mark.parametrize("index", [-1, 2, 7])
def test_an_out_of_range_branch_index_in_a_kernel_is_named_not_guessed(index):
    import numpy as np

    def body(x_ref, w_ref, o_ref):
        x, w = x_ref[...], w_ref[...]
        (o_ref[...],) = _bind_cond(np.int32(index), x, w, branches=(
            lambda x, w: (jnp.dot(x, w, preferred_element_type=jnp.float32),),
            lambda x, w: (x[:, :32],)))

    with pytest.raises(kernel_work.BranchOutOfRange) as raised:
        _count(lambda x, w: _gridded(body, x, w))
    assert str(raised.value).startswith(
        f"a cond's branch index evaluates to {index} with 2 branches: JAX's lowerings disagree "
        "on which branch runs")
    assert isinstance(raised.value, kernel_work.Unreadable)  # the runner: `unverified`


def test_an_out_of_range_branch_index_around_kernel_calls_is_named_not_guessed():
    import numpy as np

    def fn(x, w):
        return _bind_cond(np.int32(-1), x, w, branches=(
            lambda x, w: (_tiled_matmul(x, w),),
            lambda x, w: (_gridded(lambda x_ref, w_ref, o_ref: o_ref.__setitem__(
                ..., x_ref[:, :32]), x, w),)))[0]

    with pytest.raises(kernel_work.BranchOutOfRange, match="evaluates to -1 with 2 branches"):
        _count(fn)
    with pytest.raises(kernel_work.BranchOutOfRange):
        kernel_work.outputs_without_kernel(jax.make_jaxpr(fn)(*SPECS))


def test_a_branch_index_out_of_range_only_where_the_branch_does_not_run_is_counted():
    """``(program_id - 1) % 2`` is -1 on program 0, which never runs the ``cond``: the others
    count the branch they take. An index the judge cannot evaluate keeps its cheapest branch."""
    def body(index):
        def kernel(x_ref, w_ref, o_ref):
            o_ref[...] = x_ref[:, :32]

            @pl.when(pl.program_id(0) > 0)
            def _():
                x, w = x_ref[...], w_ref[...]
                (o_ref[...],) = _bind_cond(index(x_ref), x, w, branches=(
                    lambda x, w: (jnp.dot(x, w, preferred_element_type=jnp.float32),),
                    lambda x, w: (x[:, :32] * 2.0,)))
        return kernel

    ids = body(lambda x_ref: (pl.program_id(0) - 1) % 2)  # 0, 1, 0 on programs 1, 2, 3
    assert 2 * DOT <= _count(lambda x, w: _gridded(ids, x, w)).flops < 2 * DOT + 2 * 32 * 32 + 64
    data = body(lambda x_ref: x_ref[0, 0].astype(jnp.int32))  # unknown: the cheapest
    assert _count(lambda x, w: _gridded(data, x, w)).flops < 4 * 32 * 32 + 64


def _aliased(body, x, w, c, grid=(4,), out_spec=None):
    """``body(x_ref, w_ref, c_ref, o_ref)`` over ``grid`` with its output aliased to ``c``."""
    return pl.pallas_call(
        body, out_shape=jax.ShapeDtypeStruct((128, 32), jnp.float32), grid=grid,
        in_specs=[pl.BlockSpec((32, 64), lambda i: (i, 0)), pl.BlockSpec((64, 32), lambda i: (0, 0)),
                  pl.BlockSpec((32, 32), lambda i: (i, 0))],
        out_specs=out_spec or pl.BlockSpec((32, 32), lambda i: (i, 0)),
        input_output_aliases={2: 0})(x, w, c)


def _writes_dot(x_ref, w_ref, c_ref, o_ref):
    o_ref[...] = jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)


def _reads_only(x_ref, w_ref, c_ref, o_ref):
    o_ref[...]  # read, never written


def _writes_program_zero(x_ref, w_ref, c_ref, o_ref):
    @pl.when(pl.program_id(0) == 0)
    def _():
        _writes_dot(x_ref, w_ref, c_ref, o_ref)


@pytest.mark.parametrize("body,grid,unwritten", [
    (_writes_dot, (4,), False),  # every block written
    (lambda x_ref, w_ref, c_ref, o_ref: None, (4,), True),  # never written
    (_reads_only, (4,), True),
    (_writes_dot, (0,), True),  # no program runs
    (_writes_program_zero, (4,), True),  # one block of four written: the rest passes through
])
def test_an_aliased_output_the_kernel_does_not_surely_write_is_its_input_passed_through(
        body, grid, unwritten):
    def fn(x, w):
        return _aliased(body, x, w, x[:, :32] @ jnp.ones((32, 32)), grid)  # c: XLA's matmul

    closed = jax.make_jaxpr(fn)(*SPECS)
    found = kernel_work.outputs_without_kernel(closed)
    assert [(i, what.split(" (")[0]) for i, what, _ in found] == \
        ([(0, "dot_general")] if unwritten else [])
    if unwritten:
        assert "passed through the aliased output of a kernel that does not surely write it" \
            in found[0][1]
        # and the kernel is credited with no bytes for the output it does not write
        assert kernel_work.count(closed).bytes <= 4 * (128 * 64 + 64 * 32)


def test_an_aliased_input_from_a_kernel_passed_through_still_comes_from_a_kernel():
    def fn(x, w):
        return _aliased(lambda *refs: None, x, w, _tiled_matmul(x, w))

    assert kernel_work.outputs_without_kernel(jax.make_jaxpr(fn)(*SPECS)) == []
    # a task input passed through an unwritten alias is still an input passed through
    found = kernel_work.outputs_without_kernel(jax.make_jaxpr(
        lambda x, w, c: _aliased(lambda *refs: None, x, w, c))(
            *SPECS, jax.ShapeDtypeStruct((128, 32), jnp.float32)))
    assert [(i, what.split(" (")[0]) for i, what, _ in found] == [(0, "an input")]


def test_an_aliased_output_written_by_every_program_that_accumulates_is_written():
    """An accumulator aliased to an input of zeros, written only on the last K step of each
    output block (``pl.when``): the blocks of the programs that write cover the output."""
    def body(x_ref, w_ref, c_ref, o_ref):
        @pl.when(pl.program_id(1) == pl.num_programs(1) - 1)
        def _():
            o_ref[...] = c_ref[...] + jnp.dot(x_ref[...], w_ref[...],
                                              preferred_element_type=jnp.float32)

    def fn(x, w):
        return pl.pallas_call(
            body, out_shape=jax.ShapeDtypeStruct((128, 32), jnp.float32), grid=(4, 2),
            in_specs=[pl.BlockSpec((32, 64), lambda i, k: (i, 0)),
                      pl.BlockSpec((64, 32), lambda i, k: (0, 0)),
                      pl.BlockSpec((32, 32), lambda i, k: (i, 0))],
            out_specs=pl.BlockSpec((32, 32), lambda i, k: (i, 0)),
            input_output_aliases={2: 0})(x, w, jnp.zeros((128, 32), jnp.float32))

    closed = jax.make_jaxpr(fn)(*SPECS)
    assert kernel_work.outputs_without_kernel(closed) == []
    assert kernel_work.count(closed).flops >= 4 * DOT
