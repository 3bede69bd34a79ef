"""What a newcomer reads when something goes wrong: the assumed target, wrong-target lowering
explained in one line, where the bad elements are, the tolerance beside the error, the kernel's
own frames and output."""

from pathlib import Path

from jaxbench.evaluator.static import target_declaration, wrong_target_hint

ROOT = Path(__file__).parents[1]
RMSNORM = ROOT / "src/jaxbench/tasks/jaxbench/p12_rmsnorm"


def _without_target(path: Path) -> str:
    return "".join(line for line in path.read_text().splitlines(keepends=True)
                   if not line.startswith("TARGET"))


def test_target_declaration():
    assert target_declaration('TARGET = "gpu"\n') == ("gpu", None)
    assert target_declaration('TARGET: str = "tpu"\n') == ("tpu", None)
    assert target_declaration("x = 1\n") == (None, None)
    value, problem = target_declaration('TARGET = "cuda"\n')
    assert value is None and "TARGET = 'cuda' (line 1) is not" in problem


def test_wrong_target_hint_names_the_platform_module():
    gpu_source = (RMSNORM / "seed_gpu.py").read_text()
    assert wrong_target_hint(gpu_source, "gpu") == ""
    hint = wrong_target_hint(gpu_source, "tpu")
    assert "GPU kernel (it imports jax.experimental.pallas.triton)" in hint
    assert 'set TARGET = "gpu"' in hint
    assert "TPU kernel" in wrong_target_hint((RMSNORM / "seed_tpu.py").read_text(), "gpu")


def test_missing_target_is_stated_and_a_wrong_target_failure_explained(evaluator):
    """A GPU kernel without TARGET is evaluated for the assumed tpu: the result says it
    assumed tpu, and the lowering failure (a bare AssertionError from JAX) is explained."""
    result = evaluator.evaluate(_without_target(RMSNORM / "seed_gpu.py"), "12p_rmsnorm",
                                trials=1, tpu_interpret=False)
    assert result["target"] == "tpu"
    assert any("declares no TARGET: evaluated for tpu" in w for w in result["warnings"])
    assert (result["status"], result["stage"]) == ("compile_error", "lower")
    assert result["message"].startswith("this looks like a GPU kernel"), result["message"]


LAST_ROWS_NAN = '''
import functools
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _body(x_ref, s_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    y = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-5)
    y = (y.astype(o_ref.dtype).astype(jnp.float32) * s_ref[...].astype(jnp.float32))
    last = pl.program_id(0) == pl.num_programs(0) - 1
    o_ref[...] = jnp.where(last, jnp.nan, y).astype(o_ref.dtype)  # the last 32 rows: NaN


def kernel(x, scale):
    *lead, h = x.shape
    x2 = x.reshape(-1, h)
    out = pl.pallas_call(
        _body, out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype), grid=(x2.shape[0] // 32,),
        in_specs=[pl.BlockSpec((32, h), lambda i: (i, 0)), pl.BlockSpec((1, h), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((32, h), lambda i: (i, 0)))(x2, scale.reshape(1, h))
    return out.reshape(x.shape)
'''


def test_nan_output_says_where_and_reports_no_error_figure(evaluator):
    result = evaluator.evaluate(LAST_ROWS_NAN, "12p_rmsnorm", trials=1, tpu_interpret=False)
    assert (result["status"], result["stage"]) == ("incorrect", "correct")
    assert "32768 NaN/Inf of 524288 elements (6.2%), at [1, 224:256, :] (every element there)" \
        in result["message"], result["message"]
    assert result["max_abs_err"] is None and result["rel_err"] is None


def test_correct_result_carries_its_tolerance(evaluator):
    result = evaluator.evaluate(RMSNORM / "seed_tpu.py", "12p_rmsnorm", trials=1,
                                tpu_interpret=False)
    assert result["status"] == "correct"
    assert result["tolerance"] == {"atol": 0.01, "rtol": 0.01}
    assert 0 < result["tol_fraction"] <= 1 and result["max_abs_err"] > 0


def test_tolerance_failures_say_where_and_by_how_much():
    import numpy as np

    from jaxbench.evaluator.compare import check_outputs

    truth = np.zeros((64, 8), np.float32)
    got = truth.copy()
    got[10:12, :] = 0.5
    spec = [np.zeros((64, 8), np.float32)]
    verdict = check_outputs([got], spec, [truth], 1e-2, 1e-2)
    assert not verdict.ok and "at [10:12, :] (every element there)" in verdict.message
    assert verdict.max_abs_err == 0.5 and abs(verdict.tol_fraction - 50) < 1e-3
    ok = check_outputs([truth + 0.005], spec, [truth], 1e-2, 1e-2)
    assert ok.ok and abs(ok.tol_fraction - 0.5) < 1e-3


TYPO = '''
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _body(x_ref, s_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    y = x * jax.lax.rsqrtt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-5)
    o_ref[...] = (y * s_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def kernel(x, scale):
    print("tracing with", x.shape, "\\x1b[2J\\x1b]0;title\\x07cleared?")
    *lead, h = x.shape
    x2 = x.reshape(-1, h)
    return pl.pallas_call(
        _body, out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype), grid=(x2.shape[0] // 32,),
        in_specs=[pl.BlockSpec((32, h), lambda i: (i, 0)), pl.BlockSpec((1, h), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((32, h), lambda i: (i, 0)))(x2, scale.reshape(1, h)).reshape(x.shape)
'''


def test_kernel_errors_point_at_the_line_and_keep_the_kernels_output(evaluator, tmp_path):
    path = tmp_path / "typo_kernel.py"
    path.write_text(TYPO)
    result = evaluator.evaluate(path, "12p_rmsnorm", trials=1, tpu_interpret=False)
    assert (result["status"], result["stage"]) == ("compile_error", "trace")
    assert result["message"] == ("AttributeError: module 'jax.lax' has no attribute 'rsqrtt' "
                                 "(at typo_kernel.py:11 in _body)")
    assert result["candidate_frames"][-1] == (
        "typo_kernel.py:11 in _body: y = x * jax.lax.rsqrtt(jnp.mean(x * x, axis=-1, "
        "keepdims=True) + 1e-5)")
    assert any(f.startswith("typo_kernel.py:19 in kernel:") for f in result["candidate_frames"])
    # the kernel's own print, with the terminal escapes removed
    assert result["output"] == "tracing with (2, 256, 1024) cleared?"


def test_untrusted_text_is_bounded_and_printable():
    from jaxbench.evaluator import untrusted_text

    assert untrusted_text("a\x1b[31mred\x1b[0m\x07\tb\n", 100) == "ared\ufffd\tb\n"
    assert untrusted_text("x" * 5000, 2048) == "x" * 2048
