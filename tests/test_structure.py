"""The judge's structural analysis of exported StableHLO: kernels, and the work done outside them."""

import jax
import jax.numpy as jnp
import pytest
from jax import export
from jax.experimental import pallas as pl

from jaxbench import compat
from jaxbench.evaluator.judge import structure
from jaxbench.evaluator.judge.structure import analyze, is_kernel_region_name, is_kernel_target

S = jax.ShapeDtypeStruct
f32, bf16, i32, c64 = jnp.float32, jnp.bfloat16, jnp.int32, jnp.complex64


def _export(f, *args, platform="cpu", **kw):
    return export.export(jax.jit(f), platforms=[platform], **kw)(*args).mlir_module()


def _export_tpu(f, *args):
    with compat.abstract_tpu("TPU v6 lite"):
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
    assert r.heavy == {structure.WHILE_HEAVY: 1}
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
    assert r.heavy == {structure.WHILE_HEAVY: 1}
