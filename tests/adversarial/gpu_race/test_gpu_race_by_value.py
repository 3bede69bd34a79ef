"""The GPU race rule decides by value (evaluator/judge/gpu_rules.py): output index maps and
the kernel's own store indices are evaluated for every grid program, so a grid axis mentioned
without effect (``kk * 0``, ``kk - kk``, ``(kk * 7) % 1``, a where/min), a grid above the old
2^20-program limit, or a whole-array store whose location ignores the program id by value is
`incorrect` at stage `lower`; honest splits stay `correct`; what cannot be evaluated fails."""

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
    assert (result["status"], result["stage"]) == ("incorrect", "lower"), result["message"]
    for word in words:
        assert word in result["message"], result["message"]


@pytest.mark.parametrize("name", ["honest_split_two_axes.py", "honest_whole_array_by_pid.py"])
def test_honest_gpu_kernels_pass_the_rule(evaluator, name):
    result = evaluator.evaluate(KERNELS / name, GEMM, trials=1, timeout_s=180, memory_gb=3)
    assert result["status"] == "correct", f"{result['stage']}: {result['message']}"


# -- the rule itself, in process (trusted test code tracing its own kernels) ---------------------

def _rule(fn, *shapes):
    from jaxbench import compat
    from jaxbench.evaluator.judge import gpu_rules

    with compat.abstract_device("cuda", "NVIDIA H200"):
        closed = jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes])
    return gpu_rules.parallel_write_conflict(closed)


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
