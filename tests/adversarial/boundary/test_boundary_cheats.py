"""Cheats around the trust boundary (tests/adversarial/boundary/kernels/*.py): a module checked
for the chip that differs from the module run (own primitives, changed rule tables, parameter
objects with code), candidate code that acts after the exports, a report written by candidate
code; and honest kernels the old boundary refused. Each gets its exact verdict, stage and a
message naming the rule."""

from pathlib import Path

import pytest

KERNELS = Path(__file__).parent / "kernels"
GEMM = "8p_gemm"
CHANGED = "changed JAX's rules for primitives"

CASES = [
    # file, task, status, stage, words the message must contain
    ("own_primitive_two_lowerings_obfuscated.py", GEMM, "rejected", "trace",
     "uses primitives JAX does not define (fast_path)"),
    ("existing_primitive_tpu_rule_obfuscated.py", GEMM, "rejected", "trace", CHANGED),
    ("pallas_mosaic_rule_obfuscated.py", GEMM, "rejected", "trace", CHANGED),
    ("discharge_rule_obfuscated.py", GEMM, "rejected", "trace", CHANGED),
    ("rule_code_swap_obfuscated.py", GEMM, "rejected", "trace", CHANGED),
    ("own_params_class.py", GEMM, "rejected", "trace",
     "objects of its own classes as parameters of JAX operations"),
    # both write into the tracer's own directory from candidate code: the seal refuses the
    # file before anything is written (under the `bare` host profile the tracer's ordering
    # and the parent's reading of an empty hand-over decide, as before the seal)
    ("late_write_forged_export_obfuscated.py", GEMM, "rejected", "lower",
     "sandbox (OS isolation)"),
    ("early_exit_forged_report_obfuscated.py", GEMM, "rejected", "lower",
     "sandbox (OS isolation)"),
    ("guards_switched_off_obfuscated.py", GEMM, "rejected", "trace",
     "the sandbox's guards were switched off"),
    ("harness_code_swap_obfuscated.py", GEMM, "rejected", "trace",
     "patched harness code: jax._src.api.block_until_ready"),
    ("vmapped_parallel_honest.py", GEMM, "correct", "correct", ""),
]


@pytest.mark.parametrize("name,task,status,stage,words", CASES, ids=[c[0] for c in CASES])
def test_boundary_cheat_gets_its_verdict(evaluator, name, task, status, stage, words):
    result = evaluator.evaluate(KERNELS / name, task, trials=1, timeout_s=240, memory_gb=3)
    assert (result.status, result.stage) == (status, stage), result.message
    assert words in result.message, result.message
    if status == "correct":
        assert result.stages["correct"]["tpu_interpreter"] == "ran"


def test_every_boundary_kernel_is_covered():
    assert {p.name for p in KERNELS.glob("*.py")} == {c[0] for c in CASES}
