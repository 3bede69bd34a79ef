"""On-chip memory budgets computed by the judge from the exported target modules
(evaluator/judge/budgets.py, and the runner's ``budget_exports``): TPU VMEM read from the
Mosaic kernels inside ``tpu_custom_call``, Triton's tensor rules read from the Triton IR; they
agree with the untrusted trace-based rule (judge/memory_rules.py) on honest kernels, and
anything they cannot read or bound is a problem, never a pass."""

import re

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from jaxbench import compat
from jaxbench.evaluator.judge import budgets, exporting, memory_rules

pytestmark = pytest.mark.quick  # the quick tier (`pytest -m quick`): the whole module

MiB = 1 << 20


def _trace_export(fn, shapes, platform="tpu", dtype=jnp.float32, kind=None):
    specs = [jax.ShapeDtypeStruct(s, d) for s, d in
             (shape if isinstance(shape[0], tuple) else (shape, dtype) for shape in shapes)]
    kind = kind or (exporting.CROSS_LOWERING_TPU if platform == "tpu"
                    else exporting.CROSS_LOWERING_GPU)
    with compat.abstract_device(platform, kind):
        closed = jax.make_jaxpr(fn)(*specs)
    return closed, exporting.export(closed, specs, platform)


# -- hand-written TPU kernels ------------------------------------------------------------------

def scratch_buffered_limit(x, y):
    """Row blocks; one input single-buffered (pl.Buffered(1)); a VMEM scratch; its own
    vmem_limit_bytes."""
    def body(x_ref, y_ref, o_ref, acc):
        acc[:8, :] = x_ref[...] + y_ref[...]
        o_ref[...] = acc[:8, :]
    return pl.pallas_call(
        body, grid=(x.shape[0] // 8,),
        in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0)),
                  pl.BlockSpec((8, 128), lambda i: (i, 0), pipeline_mode=pl.Buffered(1))],
        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        scratch_shapes=[pltpu.VMEM((16, 128), jnp.float32)],
        compiler_params=pltpu.CompilerParams(vmem_limit_bytes=40 * MiB))(x, y)


def single_step(x):
    """A grid of one step: nothing is prefetched, one buffer per block."""
    def body(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2
    m, n = x.shape
    return pl.pallas_call(body, grid=(1,), in_specs=[pl.BlockSpec((m, n), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((m, n), lambda i: (i, 0)),
                          out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def matmul_prefetch_any(x, w, s):
    """bf16 matmul tiles on a 2-D grid with an f32 accumulator, a scalar-prefetch operand
    (SMEM) and an operand left in HBM (pl.ANY): only the VMEM pieces count."""
    def body(s_ref, x_ref, w_ref, raw_hbm, o_ref, acc):
        acc[...] = jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)
        o_ref[...] = (acc[...] + s_ref[0]).astype(o_ref.dtype)
    m, k = x.shape
    n = w.shape[1]
    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, k), lambda i, j, s: (i, 0)),
                  pl.BlockSpec((k, 128), lambda i, j, s: (0, j)),
                  pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((128, 128), lambda i, j, s: (i, j)),
        scratch_shapes=[pltpu.VMEM((128, 128), jnp.float32)])
    return pl.pallas_call(body, grid_spec=spec,
                          out_shape=jax.ShapeDtypeStruct((m, n), x.dtype))(s, x, w, x)


def no_grid(x):
    def body(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1
    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def two_kernels(x):
    return single_step(no_grid(x))


AGREEMENT = {
    "scratch_buffered_limit": (scratch_buffered_limit,
                               {"small": [(64, 128)] * 2, "full": [(1024, 128)] * 2}),
    "single_step": (single_step, {"small": [(16, 128)], "full": [(512, 256)]}),
    "matmul_prefetch_any": (matmul_prefetch_any, {
        "small": [((256, 256), jnp.bfloat16), ((256, 256), jnp.bfloat16), ((1,), jnp.int32)],
        "full": [((512, 1024), jnp.bfloat16), ((1024, 512), jnp.bfloat16),
                 ((1,), jnp.int32)]}),
    "no_grid_then_single_step": (two_kernels, {"small": [(16, 128)], "full": [(64, 256)]}),
}


@pytest.mark.parametrize("name", sorted(AGREEMENT))
def test_trusted_budget_agrees_with_the_untrusted_rule(name):
    fn, sizes = AGREEMENT[name]
    exported, expected = {}, []
    for size, shapes in sizes.items():
        closed, exported[size] = _trace_export(fn, shapes)
        problem, figures = memory_rules.check(closed, "tpu", size, "TPU v6 lite")
        assert problem == ""
        expected += figures
    problem, figures = budgets.check(exported, "tpu", "TPU v6 lite", "NVIDIA H200")
    assert problem == "", problem
    assert expected and len(figures) == len(expected)
    got = sorted((f["kernel"], f["size"], f["vmem_bytes"], f["vmem_limit_bytes"]) for f in figures)
    assert got == sorted((f["kernel"], f["size"], f["vmem_bytes"], f["vmem_limit_bytes"])
                         for f in expected)


def test_agreement_figures_are_the_expected_numbers():
    """The figures themselves, by hand: (8, 128) f32 blocks of 4 KiB; 2 + 1 + 2 buffers and an
    8 KiB scratch; the kernel's own 40 MiB limit; one step means one buffer."""
    _, small = _trace_export(scratch_buffered_limit, [(64, 128)] * 2)
    _, one = _trace_export(single_step, [(16, 128)])
    problem, figures = budgets.check({"small": small, "one": one}, "tpu")
    assert problem == ""
    by_size = {f["size"]: f for f in figures}
    assert by_size["small"]["vmem_bytes"] == 4096 * 5 + 16 * 128 * 4
    assert by_size["small"]["vmem_limit_bytes"] == 40 * MiB
    assert by_size["small"]["grid"] == [8]
    assert by_size["one"]["vmem_bytes"] == 2 * 16 * 128 * 4
    assert by_size["one"]["vmem_limit_bytes"] == 32 * MiB


def whole_weight(x, w):
    """Row blocks of x against the whole weight matrix as one block (a trivial window, which
    Mosaic's lowering single-buffers)."""
    def body(x_ref, w_ref, o_ref):
        o_ref[...] = jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)
    m, k = x.shape
    n = w.shape[1]
    return pl.pallas_call(body, grid=(m // 8,),
                          in_specs=[pl.BlockSpec((8, k), lambda i: (i, 0)),
                                    pl.BlockSpec((k, n), lambda i: (0, 0))],
                          out_specs=pl.BlockSpec((8, n), lambda i: (i, 0)),
                          out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32))(x, w)


def test_whole_matrix_block_over_the_budget_fails_with_the_message():
    _, small = _trace_export(whole_weight, [(64, 256), (256, 256)])
    _, full = _trace_export(whole_weight, [(64, 4096), (4096, 4096)])
    problem, figures = budgets.check({"small": small, "full": full}, "tpu", "TPU v6 lite")
    assert problem.startswith("memory budget at size 'full', pallas_call #0: kernel body needs ")
    for words in ("MiB of VMEM on TPU v6 lite", "over the scoped default 32 MiB",
                  "input 1 block (4096, 4096) x1 = 64.0 MiB", "output 0 block (8, 4096) x2"):
        assert words in problem, problem
    assert [f["size"] for f in figures] == ["small", "full"]  # every size has its figures
    # On a v4 (16 MiB physical) the same kernel is over the chip itself.
    problem, _ = budgets.check({"full": full}, "tpu", "TPU v4")
    assert "over the chip's physical VMEM" in problem and "on TPU v4" in problem


def dynamic_grid(block):
    def fn(x, n):
        def body(x_ref, o_ref):
            o_ref[...] = x_ref[...] * 2
        return pl.pallas_call(body, grid=(n[0],),
                              in_specs=[pl.BlockSpec(block, lambda i: (i, 0))],
                              out_specs=pl.BlockSpec(block, lambda i: (i, 0)),
                              out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    return fn


def test_dynamic_grid_is_bounded_by_its_worst_case():
    """The grid's bound is data: counted as many steps (two buffers per block), never skipped,
    by the estimate from the jaxpr and by the count on the lowered module alike."""
    closed, small = _trace_export(dynamic_grid((8, 128)), [((64, 128), jnp.float32),
                                                           ((1,), jnp.int32)])
    problem, estimate = memory_rules.check(closed, "tpu", "small", "TPU v6 lite")
    assert problem == "" and [f["vmem_bytes"] for f in estimate] == [2 * 2 * 4096]
    problem, figures = budgets.check({"small": small}, "tpu")
    assert problem == ""
    assert figures[0]["grid"] == "dynamic" and figures[0]["vmem_bytes"] == 2 * 2 * 4096
    _, big = _trace_export(dynamic_grid((2048, 2048)), [((4096, 2048), jnp.float32),
                                                         ((1,), jnp.int32)])
    problem, figures = budgets.check({"full": big}, "tpu")
    assert "needs 64.0 MiB of VMEM" in problem, problem
    assert "(dynamic grid: counted as many steps)" in problem
    assert figures[0]["vmem_bytes"] == 4 * 16 * MiB


def test_unreadable_kernels_and_modules_are_problems():
    """A forged module: a kernel whose Mosaic body cannot be read, and a module without any
    kernel call, fail; they never pass unchecked."""
    _, good = _trace_export(single_step, [(16, 128)])
    text = good.mlir_module()

    class Forged:
        def __init__(self, module_text):
            self.text = module_text

        def mlir_module(self):
            return self.text

    garbage = re.sub(r'(\\22body\\22: \\22)[A-Za-z0-9+/=]+', r'\1AAAA', text)
    assert garbage != text
    problem, _ = budgets.check({"full": Forged(garbage)}, "tpu")
    assert problem.startswith("memory budget at size 'full', pallas_call #0: cannot check its "
                              "budget: its Mosaic kernel cannot be read"), problem
    plain = ('func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n'
             '  return %arg0 : tensor<4xf32>\n}')
    problem, figures = budgets.check({"full": Forged(plain)}, "tpu")
    assert problem == "memory budget at size 'full': the tpu module has no kernel call to check"
    problem, _ = budgets.check({"full": Forged("not mlir")}, "tpu")
    assert problem.startswith("memory budget at size 'full': the module cannot be read")


# -- Triton -------------------------------------------------------------------------------------

def triton_copy(block):
    from jax.experimental.pallas import triton as plgpu

    def fn(x):
        def body(x_ref, o_ref):
            o_ref[...] = x_ref[...] + 1
        return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(x.shape[0] // block[0],),
                              in_specs=[pl.BlockSpec(block, lambda i: (i, 0))],
                              out_specs=pl.BlockSpec(block, lambda i: (i, 0)),
                              compiler_params=plgpu.CompilerParams(num_warps=4))(x)
    return fn


def test_triton_tensor_over_2_20_elements_fails():
    _, small = _trace_export(triton_copy((64, 128)), [(256, 128)], "cuda")
    _, full = _trace_export(triton_copy((2048, 1024)), [(4096, 1024)], "cuda")
    problem, figures = budgets.check({"small": small, "full": full}, "cuda", gpu_kind="NVIDIA H200")
    assert problem.startswith("Triton's rules at size 'full', pallas_call #0: Triton rule "
                              "max_elements: kernel "), problem
    assert "tensor<2048x1024x" in problem and "2,097,152 elements" in problem
    assert "over Triton's limit of 2^20 = 1,048,576" in problem
    by_size = {f["size"]: f for f in figures}
    assert by_size["small"]["largest_tensor_elements"] == 64 * 128
    assert by_size["small"]["num_warps"] == 4 and by_size["small"]["name"] == "body"
    assert by_size["full"]["largest_tensor_elements"] == 2048 * 1024


def test_triton_within_the_rules_passes():
    _, small = _trace_export(triton_copy((64, 128)), [(256, 128)], "cuda")
    _, full = _trace_export(triton_copy((256, 512)), [(1024, 512)], "cuda")
    problem, figures = budgets.check({"small": small, "full": full}, "cuda")
    assert problem == "" and len(figures) == 2


# -- the runner's budget_exports --------------------------------------------------------------

def _relu_tpu(x):
    def body(x_ref, o_ref):
        o_ref[...] = jnp.maximum(x_ref[...], 0)
    m, n = x.shape
    bm = min(1024, m)
    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(m // bm,), in_specs=[pl.BlockSpec((bm, n), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((bm, n), lambda i: (i, 0)),
                          compiler_params=pltpu.CompilerParams(vmem_limit_bytes=96 * MiB))(x)


def _relu_handover(tmp_path, full_fn=None, kind=None):
    """The tracer's hand-over of the l1_relu kernel (``full_fn`` at size full, if given),
    traced for the TPU ``kind``."""
    from jaxbench.evaluator.sandbox import handover
    from jaxbench.tasks import get_task

    task = get_task("l1_relu")
    traces = {size: _trace_export(_relu_tpu if size == "small" or full_fn is None else full_fn,
                                  [task.input_specs(size)[0].shape], kind=kind)[0]
              for size in task.inputs}
    (tmp_path / "jaxpr.pkl").write_bytes(handover.dumps(traces))


def _request(tmp_path, **extra):
    return {"dir": str(tmp_path), "task": "l1_relu", "size": "small", "platform": "tpu",
            "target": "tpu", "mode": "interpret", "trial_keys": [[0, 1]], "recheck_keys": [],
            **extra}


def test_runner_returns_budgets_from_every_size(tmp_path):
    from jaxbench.evaluator.judge.runner import judge

    _relu_handover(tmp_path)
    response = judge(_request(tmp_path, chip={"tpu": "TPU v6 lite", "gpu": "NVIDIA H200"})).to_dict()
    assert response["budget_problem"] == ""
    assert {(f["size"], f["vmem_bytes"], f["vmem_limit_bytes"]) for f in response["memory"]} == {
        ("small", 2 * 256 * 512 * 4, 96 * MiB), ("full", 4 * 1024 * 4096 * 4, 96 * MiB)}
    # The chip the parent names: a v4's 16 MiB cannot hold the full-size blocks.
    _relu_handover(tmp_path, kind="TPU v4")
    response = judge(_request(tmp_path, chip={"tpu": "TPU v4"})).to_dict()
    assert response["budget_problem"].startswith("memory budget at size 'full', pallas_call #0")
    assert "over the chip's physical VMEM" in response["budget_problem"]


def test_a_module_at_another_size_is_checked_like_the_target(tmp_path):
    """The judge lowers the hand-over at every size and checks each module as the main one
    (platform, effects, the size's types); a failure is the budget's problem."""
    from jaxbench.evaluator.judge.runner import judge

    _relu_handover(tmp_path, full_fn=lambda x: _relu_tpu(x)[:8])
    response = judge(_request(tmp_path)).to_dict()
    assert response["budget_problem"].startswith(
        "memory budget at size 'full': kernel returns [((8, 4096), 'float32')]"), \
        response["budget_problem"]
    assert response["memory"] == []


class _Text:
    """An export whose module is given as text (a forged or hand-made module)."""

    def __init__(self, module_text):
        self.text = module_text

    def mlir_module(self):
        return self.text


def _triton_module(ttir: str) -> str:
    escaped = "".join(c if c.isalnum() or c in " _.:<>(){}=%@,-" else f"\\{ord(c):02X}"
                      for c in ttir)
    return (
        'func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n'
        '  %0 = call @jaxbench_kernel_3(%arg0) : (tensor<4xf32>) -> tensor<4xf32>\n'
        '  return %0 : tensor<4xf32>\n}\n'
        'func.func private @jaxbench_kernel_3(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n'
        '  %0 = stablehlo.custom_call @"__gpu$xla.gpu.triton"(%arg0) {mhlo.backend_config = '
        f'{{ir = "{escaped}", num_stages = 3 : i32, num_warps = 4 : i32}}}} : '
        '(tensor<4xf32>) -> tensor<4xf32>\n'
        '  return %0 : tensor<4xf32>\n}\n')


def test_triton_tensor_of_a_non_power_of_two_size_fails():
    """Pallas refuses to lower most such tensors, so the IR is written by hand: a (3, 128)
    tensor in a Triton kernel breaks Triton's power-of-two rule."""
    ttir = ('module {\n  func.func @odd_kernel() {\n'
            '    %0 = "tt.make_range"() {end = 128 : i32, start = 0 : i32} : () -> tensor<128xi32>\n'
            '    %1 = "tt.broadcast"(%0) : (tensor<128xi32>) -> tensor<3x128xi32>\n'
            '    return\n  }\n}\n')
    problem, figures = budgets.check({"full": _Text(_triton_module(ttir))}, "cuda")
    assert problem == ("Triton's rules at size 'full', pallas_call #3: Triton rule power_of_two: "
                       "kernel odd_kernel: tensor tensor<3x128xi32> (tt.broadcast) has 384 "
                       "elements, not a power of two. Use power-of-two tiles; mask or pad the "
                       "edges"), problem
    assert figures == [{"kernel": 3, "size": "full", "num_warps": 4, "num_stages": 3,
                        "name": "odd_kernel", "largest_tensor_elements": 384}]
    fine = ttir.replace("3x128", "4x128")
    assert budgets.check({"full": _Text(_triton_module(fine))}, "cuda")[0] == ""


def test_triton_ir_read_with_the_dialect_when_it_must_be(monkeypatch):
    """Some Triton IR can only be read with jaxlib's Triton dialect, whose verifier refuses
    an oversized tensor at once: that refusal is the rule's failure, and honest IR passes."""
    def unreadable(*_args):
        raise ValueError("invalid Attribute index")

    from jaxbench.evaluator.judge.gpu import triton_budgets

    monkeypatch.setattr(triton_budgets, "_plain_parse", unreadable)
    _, small = _trace_export(triton_copy((64, 128)), [(256, 128)], "cuda")
    _, full = _trace_export(triton_copy((2048, 1024)), [(4096, 1024)], "cuda")
    problem, figures = budgets.check({"small": small}, "cuda")
    assert problem == "" and figures[0]["largest_tensor_elements"] == 64 * 128
    problem, _ = budgets.check({"small": small, "full": full}, "cuda")
    assert problem.startswith("Triton's rules at size 'full', pallas_call #0: Triton rule "
                              "max_elements: the Triton dialect's verifier refuses the kernel: "
                              "Maximum allowed number of elements is 1048576"), problem
