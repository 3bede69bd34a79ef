"""The judge's structural analysis of exported StableHLO: kernels, and the work done outside them."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export
from jax.experimental import pallas as pl

from jaxbench import compat
from jaxbench.evaluator.judge import loops, pricing
from jaxbench.evaluator.judge.structure import analyze, is_kernel_region_name, is_kernel_target

pytestmark = pytest.mark.quick  # the quick tier (`pytest -m quick`): the whole module

S = jax.ShapeDtypeStruct
f32, bf16, i32, c64 = jnp.float32, jnp.bfloat16, jnp.int32, jnp.complex64


def _export(f, *args, platform="cpu", **kw):
    return export.export(jax.jit(f), platforms=[platform], **kw)(*args).mlir_module()


def _export_tpu(f, *args):
    with compat.abstract_device("tpu", "TPU v6 lite"):
        return _export(f, *args, platform="tpu")


def _double_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


def jaxbench_kernel_0(x, interpret=False):
    return pl.pallas_call(_double_kernel, out_shape=S(x.shape, x.dtype), interpret=interpret)(x)


def _with_kernel(interpret):
    kernel = jax.jit(jaxbench_kernel_0, static_argnames="interpret")

    def f(x):
        y = kernel(x.reshape(8, 128), interpret=interpret)
        return y.T.reshape(1024)

    return f


# --- FLOPs outside kernels ------------------------------------------------------------------


def test_matmul_flops_exact():
    r = analyze(_export(lambda a, b: a @ b, S((64, 128), f32), S((128, 32), f32)), "cpu")
    assert r.outside_flops == 2 * 64 * 32 * 128
    assert r.outside_ops == {"stablehlo.dot_general": 2 * 64 * 32 * 128}
    assert r.kernel_calls == 0 and r.heavy == {} and r.kernel_regions == []
    assert r.main_signature == (["tensor<64x128xf32>", "tensor<128x32xf32>"], ["tensor<64x32xf32>"])


def test_batched_matmul_and_convolution():
    r = analyze(_export(lambda x: jnp.einsum("bij,bjk->bik", x, x), S((3, 8, 8), f32)), "cpu")
    assert r.outside_flops == 2 * 3 * 8 * 8 * 8

    def conv(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    r = analyze(_export(conv, S((2, 16, 16, 4), f32), S((3, 3, 4, 8), f32)), "cpu")
    assert r.outside_flops == 2 * (2 * 16 * 16 * 8) * (3 * 3 * 4)


@pytest.mark.parametrize("dtype, per_element", [(i32, 1), (bf16, 1), (f32, 1), (c64, 2)])
def test_elementwise_add_of_any_dtype_counts(dtype, per_element):
    r = analyze(_export(lambda a, b: a + b, S((8, 16), dtype), S((8, 16), dtype)), "cpu")
    assert r.outside_flops == per_element * 8 * 16
    assert r.outside_ops == {"stablehlo.add": per_element * 8 * 16}


def test_complex_multiply_counts_six():
    r = analyze(_export(lambda a, b: a * b, S((4, 4), c64), S((4, 4), c64)), "cpu")
    assert r.outside_flops == 6 * 16


def test_reduce_sum():
    r = analyze(_export(jnp.sum, S((64, 128), f32)), "cpu")
    assert r.outside_flops == 64 * 128
    assert r.outside_ops == {"stablehlo.reduce": 64 * 128}


def test_glue_is_free():
    def glue(x):
        y = jnp.transpose(x.reshape(16, 8, 4), (2, 0, 1))
        y = jnp.pad(y, ((0, 1), (2, 0), (0, 0))).astype(bf16)
        return jnp.concatenate([y, y], axis=0)[:, ::2].astype(jnp.int32)

    r = analyze(_export(glue, S((512,), f32)), "cpu")
    assert r.outside_flops == 0 and r.outside_ops == {} and r.heavy == {}
    assert r.outside_op_counts["stablehlo.transpose"] == 1


def test_fori_loop_multiplies_by_trip_count():
    # JAX 0.10 emits: counter starting at constant 0, `compare LT, %iterArg, %c7` in cond (the 7
    # captured from outside), `add %iterArg, %c1` in the body. Counter bookkeeping is free.
    r = analyze(_export(lambda x: jax.lax.fori_loop(0, 7, lambda i, a: a @ x, x), S((16, 16), f32)), "cpu")
    assert r.outside_flops == 7 * 2 * 16**3
    assert r.heavy == {}


def test_scan_multiplies_by_length():
    def f(xs):
        return jax.lax.scan(lambda c, y: (c @ y, None), xs[0], xs)[0]

    r = analyze(_export(f, S((5, 16, 16), f32)), "cpu")
    assert r.outside_flops == 5 * 2 * 16**3 and r.heavy == {}


def test_data_dependent_while_is_heavy():
    f = lambda x: jax.lax.while_loop(lambda a: a.sum() < 100.0, lambda a: a @ x, x)
    r = analyze(_export(f, S((16, 16), f32)), "cpu")
    assert r.heavy == {loops.WHILE_HEAVY: 1}
    assert r.outside_flops == 0


def test_cond_counts_the_costlier_branch():
    f = lambda p, x: jax.lax.cond(p, lambda x: x @ x, lambda x: x + 1.0, x)
    r = analyze(_export(f, S((), jnp.bool_), S((16, 16), f32)), "cpu")
    assert r.outside_flops == 2 * 16**3
    assert r.outside_op_counts["stablehlo.case"] == 1


def test_linear_algebra_library_calls_are_heavy_on_cpu():
    r = analyze(_export(jnp.linalg.solve, S((8, 8), f32), S((8, 4), f32)), "cpu")
    assert r.heavy and all(k.startswith("custom_call:lapack_") for k in r.heavy)
    f = lambda a, b: jax.lax.linalg.triangular_solve(a, b, left_side=True, lower=True)
    r = analyze(_export(f, S((8, 8), f32), S((8, 4), f32)), "cpu")
    assert r.heavy == {"custom_call:lapack_strsm_ffi": 1} and r.outside_flops == 0


def test_triangular_solve_is_counted_on_tpu():
    f = lambda a, b: jax.lax.linalg.triangular_solve(a, b, left_side=True, lower=True)
    r = analyze(_export_tpu(f, S((3, 8, 8), f32), S((3, 8, 4), f32)), "tpu")
    assert r.heavy == {}
    assert r.outside_flops == 3 * 8**2 * 4  # batch * m^2 * n


# --- kernels --------------------------------------------------------------------------------


def test_tpu_pallas_kernel_region():
    r = analyze(_export_tpu(_with_kernel(False), S((1024,), f32)), "tpu")
    assert r.kernel_calls == 1 and r.kernel_calls_outside_regions == 0
    assert r.custom_call_targets == {"tpu_custom_call": 1}
    assert r.outside_flops == 0 and r.heavy == {}
    [region] = r.kernel_regions
    assert region.name == "jaxbench_kernel_0"
    assert region.kernel_calls == 1 and region.flops == 0 and region.heavy == {}
    assert region.call_sites == 1
    assert region.arg_types == ["tensor<8x128xf32>"] and region.result_types == ["tensor<8x128xf32>"]
    # The same module judged as a CPU export: the custom call is no kernel there.
    r = analyze(_export_tpu(_with_kernel(False), S((1024,), f32)), "cpu")
    assert r.kernel_calls == 0 and r.kernel_regions[0].heavy == {"custom_call:tpu_custom_call": 1}


def test_interpret_export_agrees_outside_kernels():
    tpu = analyze(_export_tpu(_with_kernel(False), S((1024,), f32)), "tpu")
    cpu = analyze(_export(_with_kernel(True), S((1024,), f32)), "cpu")
    assert cpu.kernel_calls == 0
    [region] = cpu.kernel_regions
    assert region.kernel_calls == 0
    assert region.ops["stablehlo.multiply"] == 8 * 128  # the interpreted kernel (and its index math)
    assert cpu.outside_op_counts == tpu.outside_op_counts
    assert cpu.outside_op_list == tpu.outside_op_list and len(tpu.outside_op_list) > 5
    assert cpu.main_signature == tpu.main_signature


def test_distinct_kernels_sharing_a_name_get_suffixes():
    kernel = jax.jit(jaxbench_kernel_0, static_argnames="interpret")

    def f(x):
        y = kernel(x.reshape(8, 128))
        z = kernel(kernel(y).reshape(16, 64))
        return z.reshape(1024) + 1.0

    r = analyze(_export_tpu(f, S((1024,), f32)), "tpu")
    names = sorted(g.name for g in r.kernel_regions)
    assert names[0] == "jaxbench_kernel_0" and names[1].startswith("jaxbench_kernel_0") and len(names) == 2
    assert r.kernel_calls == 3
    assert sum(g.call_sites for g in r.kernel_regions) == 3
    assert r.outside_flops == 1024 and r.outside_ops == {"stablehlo.add": 1024}


def test_triton_kernel_for_cuda():
    from jax.experimental.pallas import triton as plgpu

    def jaxbench_kernel_1(x):
        params = plgpu.CompilerParams(num_warps=4)
        return pl.pallas_call(_double_kernel, out_shape=S(x.shape, x.dtype), compiler_params=params)(x)

    checks = [export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")]
    with compat.abstract_device("cuda", "NVIDIA H200"):  # JAX >= 0.11 asks for the GPU
        text = _export(lambda x: jax.jit(jaxbench_kernel_1)(x), S((8, 128), f32),
                       platform="cuda", disabled_checks=checks)
    r = analyze(text, "cuda")
    assert r.kernel_calls == 1 and r.custom_call_targets == {"__gpu$xla.gpu.triton": 1}
    assert [g.name for g in r.kernel_regions] == ["jaxbench_kernel_1"]
    assert r.outside_flops == 0 and r.heavy == {}
    assert is_kernel_target("__gpu$xla.gpu.triton", "cuda")
    assert not is_kernel_target("tpu_custom_call", "cuda")


# --- hand-written modules -------------------------------------------------------------------

_HANDWRITTEN = """
module @m {
  func.func public @main(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.custom_call @tpu_custom_call(%arg0) {backend_config = "BACKEND"}
        : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = stablehlo.custom_call @my_library_call(%0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = "foo.mystery"(%1) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = stablehlo.custom_call @Sharding(%2) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %4 = call @helper(%3) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %5 = call @helper(%4) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    return %5 : tensor<4x4xf32>
  }
  func.func private @helper(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %c0 = stablehlo.constant dense<2> : tensor<i64>
    %n = stablehlo.constant dense<5> : tensor<i64>
    %c1 = stablehlo.constant dense<1> : tensor<i64>
    %0:3 = stablehlo.while(%i = %c0, %x = %arg0, %bound = %n) : tensor<i64>, tensor<4x4xf32>, tensor<i64>
    cond {
      %p = stablehlo.compare GT, %bound, %i, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %y = stablehlo.multiply %x, %x : tensor<4x4xf32>
      %j = stablehlo.add %i, %c1 : tensor<i64>
      stablehlo.return %j, %y, %bound : tensor<i64>, tensor<4x4xf32>, tensor<i64>
    }
    return %0#1 : tensor<4x4xf32>
  }
}
"""


def test_handwritten_module():
    text = _HANDWRITTEN.replace("BACKEND", "QUJD" * 250_000)  # a megabyte of backend config parses quickly
    r = analyze(text, "tpu")
    assert r.kernel_calls == 1 and r.kernel_calls_outside_regions == 1 and r.kernel_regions == []
    assert r.custom_call_targets == {"Sharding": 1, "my_library_call": 1, "tpu_custom_call": 1}
    assert r.heavy == {"custom_call:my_library_call": 1, "foo.mystery": 1}
    # bound carried through the loop, `GT bound, i`, start 2: 3 trips of 16 multiplies, per call.
    assert r.outside_flops == 2 * 3 * 16
    assert r.outside_op_counts["stablehlo.multiply"] == 2


def test_kernel_region_names():
    assert is_kernel_region_name("jaxbench_kernel_0", "jaxbench_kernel")
    assert is_kernel_region_name("jaxbench_kernel_0_0", "jaxbench_kernel_0")
    assert is_kernel_region_name("jit_jaxbench_kernel_0", "jaxbench_kernel")
    assert not is_kernel_region_name("closed_call", "jaxbench_kernel")


def test_bad_input():
    with pytest.raises(ValueError, match="does not parse"):
        analyze("module { this is not mlir", "cpu")
    with pytest.raises(ValueError, match="platform"):
        analyze("module {}", "rocm")
    with pytest.raises(ValueError, match="@main"):
        analyze("module {}", "cpu")


_DIM_BOUND = """
module @m {
  func.func public @main(%arg0: tensor<6x4xf32>) -> tensor<4x4xf32> {
    %c0 = stablehlo.constant dense<0> : tensor<i64>
    %c1 = stablehlo.constant dense<1> : tensor<i64>
    %d = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<6x4xf32>) -> tensor<i32>
    %n = stablehlo.convert %d : (tensor<i32>) -> BOUND_TYPE
    %nn = stablehlo.convert %n : (BOUND_TYPE) -> tensor<i64>
    %init = stablehlo.constant dense<1.0> : tensor<4x4xf32>
    %0:2 = stablehlo.while(%i = %c0, %x = %init) : tensor<i64>, tensor<4x4xf32>
    cond {
      %p = stablehlo.compare LT, %i, %nn, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %y = stablehlo.multiply %x, %x : tensor<4x4xf32>
      %j = stablehlo.add %i, %c1 : tensor<i64>
      stablehlo.return %j, %y : tensor<i64>, tensor<4x4xf32>
    }
    return %0#1 : tensor<4x4xf32>
  }
}
"""


def test_loop_bound_from_a_static_dimension_size_is_a_trip_count():
    """JAX 0.12 lowers cumsum to a loop that runs to get_dimension_size of its operand (a
    static dimension: a compile-time constant); converts that keep the value keep it."""
    r = analyze(_DIM_BOUND.replace("BOUND_TYPE", "tensor<i64>"), "cpu")
    assert r.heavy == {} and r.outside_flops == 6 * 16


def test_a_narrowing_convert_of_the_bound_is_not_trusted():
    # 6 fits in i8, but a convert that cannot hold the value would change it: only exact
    # values count. Here i1 cannot hold 6, so the loop's trips are unknown: heavy.
    r = analyze(_DIM_BOUND.replace("BOUND_TYPE", "tensor<i1>"), "cpu")
    assert r.heavy == {loops.WHILE_HEAVY: 1}


# --- lookups: indexed reads and writes whose positions depend on data -----------------------

LOOKUP = pricing.LOOKUP_FLOPS_PER_ELEMENT


def test_gather_from_a_computed_table_by_data_is_priced_per_element():
    # A table of squares indexed by the data: any function of the index, so priced as work.
    def f(idx):
        table = jnp.arange(256, dtype=f32) ** 2
        return table[idx & 255]

    r = analyze(_export(f, S((1024,), i32)), "cpu")
    assert r.outside_ops["stablehlo.gather"] == LOOKUP * 1024
    assert r.heavy == {}


def test_gather_from_a_constant_table_by_data_is_priced_and_so_is_the_table():
    table = (np.arange(512, dtype=np.float32) * 0.5) ** 2

    r = analyze(_export(lambda idx: jnp.asarray(table)[idx & 511], S((64, 32), i32)), "cpu")
    assert r.outside_ops["stablehlo.gather"] == LOOKUP * 64 * 32
    assert r.outside_ops["stablehlo.constant"] == 512  # non-splat: one FLOP per entry


def test_lookups_of_the_inputs_or_at_static_positions_are_free():
    # An embedding-style gather of an input by data (moves data, computes nothing), a gather at
    # constant positions, iota-based slicing, a dynamic_slice by a loop counter: all glue.
    def f(tab, idx):
        moved = tab[idx]                                 # table: the input itself
        static = moved[jnp.array([3, 1, 2])]             # constant positions
        sliced = jax.lax.dynamic_slice(tab, (jnp.int32(2), jnp.int32(0)), (4, 8))
        return static, sliced, jnp.full((16,), 7.0).at[jnp.arange(4)].get()

    r = analyze(_export(f, S((32, 8), f32), S((5,), i32)), "cpu")
    assert "stablehlo.gather" not in r.outside_ops
    assert "stablehlo.dynamic_slice" not in r.outside_ops
    assert r.outside_ops.get("stablehlo.constant") == 3  # the index list [3, 1, 2] (not a splat)


def test_dynamic_slice_chain_by_data_is_priced():
    # pointer chasing through a computed table: each hop a data-dependent dynamic_slice
    def f(x):
        table = jnp.arange(64, dtype=i32) * 5 % 64
        i = x[0]
        for _ in range(3):
            i = jax.lax.dynamic_slice(table, (i,), (1,))[0]
        return jax.lax.dynamic_slice(table, (i,), (8,))

    r = analyze(_export(f, S((4,), i32)), "cpu")
    assert r.outside_ops["stablehlo.dynamic_slice"] == LOOKUP * (3 * 1 + 8)


def test_writes_at_data_positions_are_priced():
    def f(x, i):
        y = jax.lax.dynamic_update_slice(jnp.zeros((64,), f32), x, (i[0],))  # one-hot-like
        return y, jnp.zeros((64,), f32).at[i].add(1.0)                       # a histogram

    r = analyze(_export(f, S((8,), f32), S((16,), i32)), "cpu")
    assert r.outside_ops["stablehlo.dynamic_update_slice"] == LOOKUP * 8
    assert r.outside_ops["stablehlo.scatter"] == (1 + LOOKUP) * 16  # combiner + lookup
    # the same scatter at constant positions: its combiner only
    r = analyze(_export(lambda x: jnp.zeros((64,), f32).at[jnp.arange(16) * 3].add(x),
                        S((16,), f32)), "cpu")
    assert r.outside_ops["stablehlo.scatter"] == 16


def test_a_loop_of_free_ops_with_an_unreadable_trip_count_is_heavy():
    # No FLOPs at all in it (reverse, static slice): the runner would still spin until its
    # timeout on a trip count that depends on the data.
    def f(x):
        return jax.lax.while_loop(lambda c: c[0], lambda c: (jnp.flip(c[1])[0], jnp.flip(c[1])),
                                  (x[0], x))[1]

    r = analyze(_export(f, S((8,), jnp.bool_)), "cpu")
    assert r.outside_flops == 0
    assert r.heavy == {loops.WHILE_HEAVY: 1}


# --- op-for-op binding of the interpret-mode export to the target export --------------------

_BOUND = """
module @m {
  func.func public @main(%arg0: tensor<4x8xf32>) -> tensor<8x4xf32> {
    %0 = call @jaxbench_kernel_0(%arg0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    %2 = stablehlo.convert %1 : (tensor<8x4xf32>) -> tensor<8x4xCAST>
    %3 = stablehlo.convert %2 : (tensor<8x4xCAST>) -> tensor<8x4xf32>
    %4 = stablehlo.compare GT, %3, %3, FLOAT : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xi1>
    %5 = stablehlo.select %4, %3, %1 : tensor<8x4xi1>, tensor<8x4xf32>
    %6 = call @HELPER(%5) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    return %6 : tensor<8x4xf32>
  }
  func.func private @HELPER(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %0 = stablehlo.UNARY %arg0 : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
  func.func private @jaxbench_kernel_0(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
    KERNEL
    return %0 : tensor<4x8xf32>
  }
}
"""
_TPU_KERNEL = ('%0 = stablehlo.custom_call @tpu_custom_call(%arg0) {backend_config = "k"} '
               ": (tensor<4x8xf32>) -> tensor<4x8xf32>")
_CPU_KERNEL = "%0 = stablehlo.multiply %arg0, %arg0 : tensor<4x8xf32>"


def _bound(kernel, platform, cast="bf16", direction="GT", helper="_pad_1", unary="negate"):
    text = _BOUND.replace("KERNEL", kernel).replace("CAST", cast).replace("HELPER", helper)
    text = text.replace("UNARY", unary)
    return analyze(text.replace("compare GT", f"compare {direction}"), platform)


def test_interpret_export_equal_op_for_op_passes():
    from jaxbench.evaluator.judge import rules

    # JAX numbers private functions in module order: the interpret-mode export, whose kernel
    # regions hold functions of the same names, calls `_pad_4` what the target calls `_pad_1`.
    target, interp = _bound(_TPU_KERNEL, "tpu"), _bound(_CPU_KERNEL, "cpu", helper="_pad_4")
    assert interp.outside_op_list == target.outside_op_list
    assert "stablehlo.transpose(tensor<4x8xf32>) -> (tensor<8x4xf32>) {permutation = array<i64: 1, 0>}" \
        in target.outside_op_list
    rules.check_interpret(interp, target)  # the kernel bodies differ, the rest is equal


@pytest.mark.parametrize("change, shown", [
    ({"cast": "f16"}, "tensor<8x4xf16>"),                  # same op names, another type
    ({"direction": "LT"}, "comparison_direction LT"),     # same op names, another attribute
    ({"unary": "abs"}, "stablehlo.abs"),                   # a called function's body differs
])
def test_interpret_export_differing_in_a_type_or_attribute_is_rejected(change, shown):
    from jaxbench.contract import StageFailure
    from jaxbench.evaluator.judge import rules

    target, interp = _bound(_TPU_KERNEL, "tpu"), _bound(_CPU_KERNEL, "cpu", **change)
    if "unary" not in change:
        assert interp.outside_op_counts == target.outside_op_counts  # the old multiset agrees
    with pytest.raises(StageFailure) as info:
        rules.check_interpret(interp, target)
    msg = info.value.message
    assert info.value.status == "rejected" and info.value.stage == "lower"
    assert "differ outside kernels at op" in msg and shown in msg
