"""Every status is produced by a purpose-built bad kernel (tests/kernels/*.py, task 8p_gemm)."""

from pathlib import Path

import pytest

KERNELS = Path(__file__).parent / "kernels"
SEED = Path(__file__).parents[1] / "src/jaxbench/tasks/jaxbench/p08_gemm/seed_tpu.py"

CASES = [
    # file, status, stage, words the message must contain
    ("wrong_math.py", "incorrect", "correct", "exceed atol"),
    ("wrong_shape.py", "incorrect", "lower", "kernel returns [((256, 128), 'bfloat16')]"),
    ("wrong_dtype.py", "incorrect", "lower", "kernel returns [((256, 512), 'float32')]"),
    ("nan_output.py", "incorrect", "correct", "NaN/Inf"),
    ("plain_jnp.py", "no_pallas", "trace", "no pallas_call"),
    ("matmul_outside.py", "rejected", "lower", "outside pallas_call"),
    ("policy_subprocess.py", "rejected", "static", "subprocess"),
    ("syntax_error.py", "compile_error", "static", "SyntaxError"),
    ("no_kernel.py", "compile_error", "static", "no top-level `kernel"),
    ("import_error.py", "compile_error", "trace", "does_not_exist"),
    ("raises.py", "compile_error", "trace", "contracting dimensions"),
    ("runtime_error.py", "runtime_error", "correct", "Out-of-bounds block index"),
    ("endless_loop.py", "timeout", "correct", "no verdict within"),
    ("hard_crash.py", "crashed", "trace", "SIGSEGV"),
    ("memory_bomb.py", "crashed", "trace", "memory"),
]


@pytest.mark.parametrize("name,status,stage,words", CASES, ids=[c[0] for c in CASES])
def test_bad_kernel_gets_its_status(evaluator, name, status, stage, words):
    timeout = 10 if status == "timeout" else 180  # generous: CI machines are slow and shared
    result = evaluator.evaluate(KERNELS / name, "8p_gemm", timeout_s=timeout, trials=2, memory_gb=3)
    assert (result["status"], result["stage"]) == (status, stage), result["message"]
    assert words in result["message"]


def test_seed_is_correct_with_every_contract_field(evaluator):
    result = evaluator.evaluate(SEED, "8p_gemm")
    assert result["status"] == "correct", result["message"]
    for field in ("task", "target", "mode", "size", "status", "stage", "message", "max_abs_err",
                  "rel_err", "t_ref_ms", "t_kernel_ms", "speedup", "compile_s", "source_sha256",
                  "versions"):
        assert field in result
    assert result["mode"] == "interpret" and result["speedup"] is None
    assert result["stages"]["correct"]["tpu_interpreter"] == "ran"
    assert 0 < result["max_abs_err"] < 0.1


def test_evaluate_accepts_source_text():
    import jaxbench

    result = jaxbench.evaluate(SEED.read_text(), "8p_gemm", trials=1, tpu_interpret=False)
    assert result["status"] == "correct", result["message"]
    assert result["kernel_file"] == "<kernel>"


def test_worker_leaves_no_process_or_directory(tmp_path):
    from jaxbench.evaluator import Evaluator

    with Evaluator(spares=1, work_dir=tmp_path) as ev:
        ev.evaluate(KERNELS / "endless_loop.py", "8p_gemm", timeout_s=8, trials=1)
        ev.evaluate(KERNELS / "wrong_shape.py", "8p_gemm", trials=1, tpu_interpret=False)
        spare_dirs = {w.dir for w in list(ev.pool._spares.queue)}
        assert set(tmp_path.iterdir()) == spare_dirs  # only the warm spare waits
    assert list(tmp_path.iterdir()) == []
