"""The GPU race rule decides by value (evaluator/judge/gpu/race.py): output index maps and
the kernel's own store indices and masks are evaluated for every grid program, so a grid axis
mentioned without effect (``kk * 0``, ``kk - kk``, ``(kk * 7) % 1``, a where/min), a grid
above the exhaustive limit (its first and last programs show the race), a whole-array store
whose location ignores the program id by value, or masks that overlap for some program ids
is `incorrect` at stage `lower`; honest splits, and programs storing disjoint masked rows of
one shared block (Tokamax's ragged dot), stay `correct`; what cannot be evaluated (offsets
read from data) is `unverified`, never `incorrect`."""

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

KERNELS = Path(__file__).parent
GEMM = "8p_gemm"
BLOCK = ["GPU race rule", "both write block (0, 0) of output 0", "(0, 0, 0) and (0, 0, 1)"]


@pytest.mark.parametrize("name,words", [
    ("axis_times_zero.py", BLOCK + ["elements [0:64, 0:64]", "grid (4, 8, 8)"]),
    ("axis_minus_itself.py", BLOCK + ["grid (4, 8, 8)"]),
    ("axis_through_modulo.py", BLOCK + ["grid (4, 8, 8)"]),
    ("axis_through_where_min.py", BLOCK + ["grid (4, 8, 8)"]),
    ("large_grid.py", BLOCK + ["elements [0:16, 0:16]", "grid (16, 32, 4100)"]),
    ("whole_store_ignores_pid.py",
     ["GPU race rule", "grid programs (0,) and (1,) both write elements [0:256, 0:512] of output 0",
      "whole-array output", "whole_store_ignores_pid.py:19", "or use atomics"]),
])
def test_race_by_value_is_incorrect_at_lower(evaluator, name, words):
    result = evaluator.evaluate(KERNELS / name, GEMM, trials=1, timeout_s=180, memory_gb=3)
    assert (result.status, result.stage) == ("incorrect", "lower"), result.message
    for word in words:
        assert word in result.message, result.message


def test_masks_that_overlap_by_value_are_incorrect_at_lower(evaluator):
    """The masks read as disjoint sub-groups; the offsets table built outside the kernel makes
    them overlap by 8 rows, which the interpreter's sequential order hides."""
    result = evaluator.evaluate(KERNELS / "masks_overlap_by_value.py", "14p_ragged_dot", trials=1,
                                timeout_s=180, memory_gb=3)
    assert (result.status, result.stage) == ("incorrect", "lower"), result.message
    for word in ["GPU race rule", "grid programs (2, 0, 0) and (3, 0, 0) both write block (0, 0)",
                 "elements [128:136, 0:128]", "grid (24, 2, 2)"]:
        assert word in result.message, result.message


def test_offsets_from_data_are_unverified_not_incorrect(evaluator):
    result = evaluator.evaluate(KERNELS / "honest_offsets_from_data.py", "14p_ragged_dot",
                                trials=1, timeout_s=180, memory_gb=3)
    assert (result.status, result.stage) == ("unverified", "lower"), result.message
    for word in ["GPU race rule", "cannot prove the GPU writes race-free",
                 "depends on a value the rule cannot evaluate", "honest_offsets_from_data.py:"]:
        assert word in result.message, result.message


@pytest.mark.parametrize("name", ["honest_split_two_axes.py", "honest_whole_array_by_pid.py"])
def test_honest_gpu_kernels_pass_the_rule(evaluator, name):
    result = evaluator.evaluate(KERNELS / name, GEMM, trials=1, timeout_s=180, memory_gb=3)
    assert result.status == "correct", f"{result.stage}: {result.message}"


# -- the rule itself, in process (trusted test code tracing its own kernels) ---------------------

def _rule(fn, *shapes):
    from jaxbench import compat
    from jaxbench.evaluator.judge.gpu import race

    with compat.abstract_device("cuda", "NVIDIA H200"):
        closed = jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes])
    return race.parallel_write_conflict(closed)


def _blocked(grid, block, index_map):
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plgpu

    def body(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    def fn(x):
        return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=grid,
                              in_specs=[pl.BlockSpec(block, index_map)],
                              out_specs=pl.BlockSpec(block, index_map),
                              compiler_params=plgpu.CompilerParams(num_warps=4))(x)
    return fn


def test_a_grid_of_2_to_the_24_programs_is_decided():
    """2^24 programs, each its own (1, 1) block: proved race-free in bounded time; the same grid
    with one axis folded away by value (``j % 1``) is caught."""
    t0 = time.perf_counter()
    assert _rule(_blocked((4096, 4096), (1, 1), lambda i, j: (i, j)), (4096, 4096)) == ""
    assert time.perf_counter() - t0 < 120
    racy = _rule(_blocked((4096, 4096), (1, 1), lambda i, j: (i, j % 1 + j * 0)), (4096, 4096))
    assert "(0, 0) and (0, 1) both write block (0, 0)" in racy


def test_a_grid_too_large_to_check_is_a_failure_not_a_pass():
    message = _rule(_blocked((8192, 16384), (1, 1), lambda i, j: (i, j)), (8192, 16384))
    assert "cannot prove the GPU writes race-free" in message
    assert "grid too large to check" in message


def test_above_the_limit_the_first_and_last_programs_decide_a_race_only():
    """2^25 programs: past the exhaustive limit. The first and last programs along each axis
    show the race of a folded axis (a race, `incorrect`); without one they prove nothing
    (unknown, never a pass and never a race)."""
    from jaxbench.evaluator.judge.gpu import race

    def verdict(fn, shape):
        from jaxbench import compat

        with compat.abstract_device("cuda", "NVIDIA H200"):
            closed = jax.make_jaxpr(fn)(jax.ShapeDtypeStruct(shape, jnp.float32))
        return race.race_verdict(closed)

    assert race.MAX_STEPS < 2 ** 25
    t0 = time.perf_counter()
    racy = verdict(_blocked((2048, 16384), (1, 16), lambda i, j: (i, j // 2)), (2048, 262144))
    assert "(0, 0) and (0, 1) both write block (0, 0)" in racy.race, racy
    honest = verdict(_blocked((2048, 16384), (1, 16), lambda i, j: (i, j)), (2048, 262144))
    assert honest.race == "" and "grid too large to check" in honest.unknown, honest
    assert "write disjoint elements" in honest.unknown
    assert time.perf_counter() - t0 < 60


def test_a_store_at_an_index_read_from_a_ref_cannot_be_proved():
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plgpu

    def body(x_ref, o_ref):
        row = x_ref[0, 0].astype(jnp.int32)  # data: the rule cannot evaluate it
        plgpu.store(o_ref.at[pl.ds(row, 16), :], jnp.ones((16, 16), jnp.float32))

    def fn(x):
        return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((64, 16), jnp.float32),
                              grid=(4,), in_specs=[pl.BlockSpec((16, 16), lambda i: (i, 0))],
                              out_specs=pl.BlockSpec((64, 16), lambda i: (0, 0)),
                              compiler_params=plgpu.CompilerParams(num_warps=4))(x)

    message = _rule(fn, (64, 16))
    assert "cannot prove the GPU writes race-free" in message
    assert "depends on a value the rule cannot evaluate" in message


def test_a_guarded_store_is_counted_only_where_its_condition_holds():
    """``pl.when(i == 0)`` around a store of row 0: one program writes it, no race; without the
    guard every program writes row 0."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plgpu

    def make(guarded):
        def body(x_ref, o_ref):
            def write():
                plgpu.store(o_ref.at[pl.ds(0, 16), :], x_ref[...])
            if guarded:
                pl.when(pl.program_id(0) == 0)(write)
            else:
                write()

        def fn(x):
            return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((64, 16), jnp.float32),
                                  grid=(4,), in_specs=[pl.BlockSpec((16, 16), lambda i: (i, 0))],
                                  out_specs=pl.BlockSpec((64, 16), lambda i: (0, 0)),
                                  compiler_params=plgpu.CompilerParams(num_warps=4))(x)
        return fn

    assert _rule(make(True), (64, 16)) == ""
    assert "grid programs (0,) and (1,) both write elements [0:16, 0:16]" in \
        _rule(make(False), (64, 16))


def _shared_block(keep, guard=None, grid=(4,)):
    """Triton, Tokamax's pattern: every program holds the whole (64, 16) output and stores
    rows 0:64 of it masked by ``keep(rows, i, x_ref)`` (under ``pl.when(guard(...))``)."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plgpu

    def body(x_ref, o_ref):
        rows = jnp.arange(64)

        def write():
            plgpu.store(o_ref.at[pl.ds(0, 64), :], jnp.ones((64, 16), jnp.float32),
                        mask=keep(rows, pl.program_id(0), x_ref)[:, None])
        if guard is None:
            write()
        else:
            pl.when(guard(pl.program_id(0), x_ref))(write)

    def fn(x):
        return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((64, 16), jnp.float32),
                              grid=grid, in_specs=[pl.BlockSpec((16, 16), lambda i: (0, 0))],
                              out_specs=pl.BlockSpec((64, 16), lambda i: (0, 0)),
                              compiler_params=plgpu.CompilerParams(num_warps=4))(x)
    return fn


def _verdict(fn, *shapes):
    from jaxbench import compat
    from jaxbench.evaluator.judge.gpu import race

    with compat.abstract_device("cuda", "NVIDIA H200"):
        closed = jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes])
    return race.race_verdict(closed)


def test_store_masks_decide_a_shared_block():
    """Program i stores the rows ``rows // 16 == i`` of a block all four share: disjoint by
    value, proved; ``rows // 16 <= i + (i == 2)`` reads alike but programs 2 and 3 both store
    rows 48:64."""
    honest = _verdict(_shared_block(lambda rows, i, _: rows // 16 == i), (16, 16))
    assert honest.race == "" and honest.unknown == "", honest
    racy = _verdict(_shared_block(lambda rows, i, _: (rows // 16 >= i)
                                  & (rows // 16 <= i + (i == 2))), (16, 16))
    assert "grid programs (2,) and (3,) both write elements [48:64, 0:16] of output 0" in \
        racy.race, racy


def test_a_mask_or_guard_read_from_data_is_unknown_never_a_race():
    """A mask or a ``pl.when`` the rule cannot evaluate: the store counts as if it wrote
    everything, and an overlap that needs it is "unknown" with the reason, not a race; where
    even that superset is disjoint, it is proved."""
    data_mask = _verdict(_shared_block(lambda rows, i, x: (rows // 16 == i) & (x[0, 0] > 0)
                                       | (x[0, 1] > 0)), (16, 16))
    assert data_mask.race == "" and "may both write" in data_mask.unknown, data_mask
    assert "its mask (line test_gpu_race_by_value.py:" in data_mask.unknown
    data_guard = _verdict(_shared_block(lambda rows, i, _: rows // 16 == i,
                                        guard=lambda i, x: x[0, 0] > 0), (16, 16))
    assert (data_guard.race, data_guard.unknown) == ("", ""), data_guard  # disjoint even so
    overlapping = _verdict(_shared_block(lambda rows, i, _: rows < 64,
                                         guard=lambda i, x: x[i, 0] > 0), (16, 16))
    assert overlapping.race == "" and "guarded by a condition (line" in overlapping.unknown


def test_offsets_computed_outside_the_kernel_are_evaluated():
    """Tokamax builds each group's first and last row outside the kernel (``cumsum`` of group
    sizes) and reads them from refs inside it: the rule computes them and decides by their
    values; offsets from the function's inputs are unknown."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plgpu

    def make(sizes):
        def body(lo_ref, hi_ref, o_ref):
            lo, hi = lo_ref[...], hi_ref[...]
            rows = lo + jnp.arange(32)
            plgpu.store(o_ref.at[pl.ds(lo, 32), :], jnp.ones((32, 16), jnp.float32),
                        mask=(rows < hi)[:, None])

        def fn(x):
            counts = sizes(x)
            ends = jnp.cumsum(counts)
            return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((96, 16), jnp.float32),
                                  grid=(4,), in_specs=[pl.BlockSpec((None,), lambda e: (e,))] * 2,
                                  out_specs=pl.BlockSpec((96, 16), lambda e: (0, 0)),
                                  compiler_params=plgpu.CompilerParams(num_warps=4)
                                  )(ends - counts, ends)
        return fn

    uneven = _verdict(make(lambda x: jnp.array([30, 2, 32, 20], jnp.int32)), (4,))
    assert uneven.race == "" and uneven.unknown == "", uneven
    too_long = _verdict(make(lambda x: jnp.array([30, 2, 33, 20], jnp.int32)), (4,))
    assert too_long.race == "", too_long  # 33 rows from a 32-row store: still disjoint
    overlap = _verdict(make(lambda x: jnp.array([30, -2, 32, 20], jnp.int32)), (4,))
    assert "grid programs (0,) and (2,) both write elements [28:30, 0:16]" in overlap.race, \
        overlap
    from_data = _verdict(make(lambda x: x.astype(jnp.int32)), (4,))
    assert from_data.race == "" and "depends on a value the rule cannot evaluate" in \
        from_data.unknown, from_data


def test_an_operand_the_kernel_overwrites_is_not_believed():
    """The offsets table as computed outside the kernel says disjoint, but each program first
    overwrites its own entry (``lo_ref[...] = 0``) and then stores at it: every program
    writes rows 0:32. The rule must not evaluate the stale table: the location is unknown."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plgpu

    def body(lo_ref, o_ref):
        lo_ref[...] = jnp.zeros((), jnp.int32)
        plgpu.store(o_ref.at[pl.ds(lo_ref[...], 32), :], jnp.ones((32, 16), jnp.float32))

    def fn(x):
        lo = jnp.arange(4, dtype=jnp.int32) * 32
        return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((128, 16), jnp.float32),
                              grid=(4,), in_specs=[pl.BlockSpec((None,), lambda e: (e,))],
                              out_specs=pl.BlockSpec((128, 16), lambda e: (0, 0)),
                              compiler_params=plgpu.CompilerParams(num_warps=4))(lo)

    verdict = _verdict(fn, (4,))
    assert verdict.race == "" and "depends on a value the rule cannot evaluate" in \
        verdict.unknown, verdict
