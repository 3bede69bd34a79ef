"""Messages a newcomer meets first: a syntax error judged for the file's own TARGET, a wrong
signature that says how the task calls the kernel, the target-mismatch hint alone, a provider
install hint with its closing quote, a leftover jax.debug.print that is a compile error (not
`rejected`, the status of gaming), and `jaxbench doctor` among the README's first steps."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxbench.contract import StageFailure
from jaxbench.evaluator.parent.static import check_source, target_declaration, wrong_target_hint

ROOT = Path(__file__).parents[1]
RMSNORM = ROOT / "src/jaxbench/tasks/jaxbench/12p_rmsnorm"


def test_a_file_that_does_not_parse_is_judged_for_its_own_target(evaluator):
    broken = (RMSNORM / "seed_gpu.py").read_text().replace("def kernel(x, scale):",
                                                            "def kernel(x, scale)")
    assert target_declaration(broken) == ("gpu", None)
    assert target_declaration('TARGET: str = "tpu"  # mine\nx = (\n') == ("tpu", None)
    assert target_declaration("x = (\n") == (None, None)
    result = evaluator.evaluate(broken, "12p_rmsnorm", trials=1)
    assert (result.target, result.status, result.stage) == ("gpu", "compile_error", "static")
    assert result.message.startswith("SyntaxError at line")
    assert not result.warnings  # no "declares no TARGET: evaluated for tpu"


def test_a_wrong_signature_says_how_the_task_calls_the_kernel(evaluator):
    one_argument = (RMSNORM / "seed_tpu.py").read_text().replace("def kernel(x, scale):",
                                                                 "def kernel(x):")
    result = evaluator.evaluate(one_argument, "12p_rmsnorm", trials=1, tpu_interpret=False)
    assert (result.status, result.stage) == ("compile_error", "trace")
    assert "TypeError: kernel() takes 1 positional argument but 2 were given" in result.message
    assert "the task calls kernel(x: bfloat16[2,256,1024], scale: bfloat16[1024])" \
        in result.message, result.message


def test_the_target_mismatch_hint_is_not_followed_by_the_lowering_error(evaluator):
    source = (RMSNORM / "seed_tpu.py").read_text().replace('TARGET = "tpu"', 'TARGET = "gpu"')
    result = evaluator.evaluate(source, "12p_rmsnorm", trials=1)
    assert (result.status, result.stage) == ("compile_error", "lower")
    assert result.message == wrong_target_hint(source, "gpu"), result.message


def test_the_provider_install_hint_keeps_its_closing_quote(monkeypatch, tmp_path):
    import sys

    from jaxbench.cli import main
    from jaxbench.cli.common import error_text

    monkeypatch.setitem(sys.modules, "google.genai", None)  # the SDK is not installed
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    out = CliRunner().invoke(main, ["optimize", "--method", "best_of_n", "--model", "gemini:g",
                                    "--tasks", "8p_gemm", "--out", str(tmp_path / "run")])
    assert out.exit_code == 2
    assert "pip install 'jaxbench[gemini]' (see" in out.output, out.output
    assert error_text(KeyError("8p")) == "8p"  # a KeyError's repr quotes still go


def test_a_leftover_debug_print_is_a_compile_error_not_gaming():
    source = ("import jax\nfrom jax.experimental import pallas as pl\nTARGET = 'tpu'\n\n"
              "def kernel(x):\n    jax.debug.print('x {}', x)\n    return x\n")
    with pytest.raises(StageFailure) as info:
        check_source(source)
    assert (info.value.status, info.value.stage) == ("compile_error", "static")
    assert info.value.message.startswith("jax.debug.print at line 6: remove it")
    assert "allowed by `jaxbench eval --debug`" in info.value.message
    check_source(source, debug=True)  # the debug run still shows its output
    # Everything else of jax.debug, and a debug print beside a real violation, is refused.
    for other in ("jax.debug.callback(print, x)", "jax.debug.breakpoint()",
                  "import os\n    jax.debug.print('x {}', x)"):
        with pytest.raises(StageFailure) as info:
            check_source(source.replace("jax.debug.print('x {}', x)", other))
        assert info.value.status == "rejected", other


def test_the_readme_names_jaxbench_doctor_in_its_first_steps():
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "`jaxbench doctor`" in quick_start
