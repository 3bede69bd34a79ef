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
