"""What a newcomer reads when something goes wrong: the assumed target, wrong-target lowering
explained in one line, where the bad elements are, the tolerance beside the error, the kernel's
own frames and output."""

from pathlib import Path

import pytest

from jaxbench.evaluator.parent.static import target_declaration, wrong_target_hint

pytestmark = pytest.mark.quick  # the quick tier (`pytest -m quick`): the whole module

ROOT = Path(__file__).parents[1]
RMSNORM = ROOT / "src/jaxbench/tasks/jaxbench/12p_rmsnorm"


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
    assert result.target == "tpu"
    assert any("declares no TARGET: evaluated for tpu" in w for w in result.warnings)
    assert (result.status, result.stage) == ("compile_error", "lower")
    assert result.message.startswith("this looks like a GPU kernel"), result.message


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
    assert (result.status, result.stage) == ("incorrect", "correct")
    assert "32768 NaN/Inf of 524288 elements (6.2%), at [1, 224:256, :] (every element there)" \
        in result.message, result.message
    assert result.max_abs_err is None and result.rel_err is None


def test_correct_result_carries_its_tolerance(evaluator):
    result = evaluator.evaluate(RMSNORM / "seed_tpu.py", "12p_rmsnorm", trials=1,
                                tpu_interpret=False)
    assert result.status == "correct"
    assert result.tolerance == {"atol": 0.01, "rtol": 0.01}
    assert 0 < result.tol_fraction <= 1 and result.max_abs_err > 0


def test_tolerance_failures_say_where_and_by_how_much():
    import numpy as np

    from jaxbench.evaluator.parent.compare import check_outputs

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
    assert (result.status, result.stage) == ("compile_error", "trace")
    # raised while kernel(*inputs) was traced: how the task calls it comes with the error
    assert result.message == ("AttributeError: module 'jax.lax' has no attribute 'rsqrtt'; the "
                              "task calls kernel(x: bfloat16[2,256,1024], scale: bfloat16[1024]) "
                              "(at typo_kernel.py:11 in _body)")
    assert result.candidate_frames[-1] == (
        "typo_kernel.py:11 in _body: y = x * jax.lax.rsqrtt(jnp.mean(x * x, axis=-1, "
        "keepdims=True) + 1e-5)")
    assert any(f.startswith("typo_kernel.py:19 in kernel:") for f in result.candidate_frames)
    # the kernel's own print, with the terminal escapes removed
    assert result.output == "tracing with (2, 256, 1024) cleared?"


def test_untrusted_text_is_bounded_and_printable():
    from jaxbench.evaluator import untrusted_text

    assert untrusted_text("a\x1b[31mred\x1b[0m\x07\tb\n", 100) == "ared\ufffd\tb\n"
    assert untrusted_text("x" * 5000, 2048) == "x" * 2048


def test_a_syntax_error_is_not_also_told_to_declare_a_target(evaluator, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def kernel(x:\n    return x\n")
    result = evaluator.evaluate(broken, "12p_rmsnorm", trials=1)
    assert (result.status, result.stage) == ("compile_error", "static")
    assert not result.warnings, result.warnings
    from jaxbench.runs.jobs import directory_jobs
    from jaxbench.tasks import get_task

    (tmp_path / "12p_rmsnorm.py").write_text("def kernel(x:\n")
    (job,) = directory_jobs(tmp_path, [get_task("12p_rmsnorm")], ["tpu"])
    assert not job.target_assumed


def test_run_table_keeps_where_a_wrong_answer_is_worst():
    from jaxbench.cli.run import short_message

    message = ("output[0]: 1234 of 4096 elements (30.1%) exceed atol 0.01 + rtol 0.01·|truth|, "
               "rows 0-7 and 12 more runs; worst at (3, 5): got 1.25, truth 3.5")
    short = short_message(message, 100)
    assert len(short) <= 100 and short.endswith("; worst at (3, 5): got 1.25, truth 3.5")
    assert short.startswith("output[0]: 1234 of 4096")
    assert short_message("short", 100) == "short"
    assert short_message("x" * 150, 100) == "x" * 99 + "…"


def test_suite_and_tasks_that_disagree_are_refused():
    import pytest

    from jaxbench.runs.jobs import select_tasks
    from jaxbench.tasks import UnknownTaskError

    assert [t.id for t in select_tasks("jaxbench", "12p_rmsnorm")] == ["12p_rmsnorm"]
    with pytest.raises(UnknownTaskError, match=r"not in the pallasbench suite: 12p_rmsnorm \(jaxbench\)"):
        select_tasks("pallasbench", "12p_rmsnorm")
    with pytest.raises(UnknownTaskError, match="unknown suite"):
        select_tasks("nosuchsuite", "12p_rmsnorm")


def test_a_missing_run_directory_is_called_missing(tmp_path):
    import pytest

    from jaxbench.report.data import load_run
    from jaxbench.report.summary import summarize

    for read in (load_run, summarize):
        with pytest.raises(FileNotFoundError, match="does not exist"):
            read(tmp_path / "nope")
        with pytest.raises(FileNotFoundError, match="is not a run directory"):
            read(tmp_path)


def test_counts_read_as_english():
    from jaxbench.report.compare import count_text

    assert count_text({"regression": 2, "missing": 1, "status": 1, "improvement": 1, "new": 0,
                       "same": 3}) == "2 regressions, 1 missing, 1 status change, 1 improvement, 3 unchanged"
    assert count_text({"regression": 1, "status": 2}) == "1 regression, 2 status changes"


ESCAPING_KERNEL = '''
TARGET = "tpu"


def kernel(x, scale):
    raise ValueError("\\x1b[2J\\x1b]0;owned\\x07\\x1b[31mred\\x1b[0m text\\x00")
'''


def test_terminal_escapes_from_the_kernel_never_reach_the_result(evaluator):
    """Whatever verdict carries it, text the kernel controls is made printable: no escape
    sequence or control character reaches the result (printed by eval and run, stored in
    events.jsonl)."""
    import json

    result = evaluator.evaluate(ESCAPING_KERNEL, "12p_rmsnorm", trials=1)
    assert result.status == "compile_error", result.message
    assert "red" in result.message and "text" in result.message
    stored = json.dumps(result.to_event(), default=str)
    assert "\\u001b" not in stored and "\\u0007" not in stored and "\\u0000" not in stored
