"""Interpret mode at full size: refused with an estimate before it wastes minutes; a timeout
names the stage that was running."""

import subprocess
import sys
from pathlib import Path

import jaxbench
from jaxbench.evaluator.parent.cost import estimate, interpret_cost_problem
from jaxbench.evaluator.parent.timeouts import default_timeout

ROOT = Path(__file__).parents[1]
SEED = ROOT / "src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_tpu.py"
ENDLESS = ROOT / "tests/adversarial/kernels/endless_kernel_loop.py"


def test_small_size_fits_and_full_size_does_not():
    for task in jaxbench.list_tasks("jaxbench"):
        limit = default_timeout(task.id, "interpret")
        assert interpret_cost_problem(task, "small", 3, limit) is None, task.id
        assert interpret_cost_problem(task, "full", 3, limit) is not None, task.id


def test_estimate_grows_with_trials_and_names_the_work():
    task = jaxbench.get_task("12p_rmsnorm")
    assert estimate(task, "full", 3).seconds > estimate(task, "full", 1).seconds
    problem = interpret_cost_problem(task, "full", 3, 60)
    assert problem.startswith("12p_rmsnorm at size full in interpret mode (1 GFLOP, 1.00 GiB")
    assert "512x the small size" in problem and "over its 60 s limit" in problem
    assert interpret_cost_problem(task, "full", 3, 10**7) is None  # a limit long enough


def test_eval_refuses_full_size_in_interpret_mode_without_force():
    out = subprocess.run([sys.executable, "-m", "jaxbench.cli", "eval", str(SEED), "--task",
                          "12p_rmsnorm", "--size", "full", "--mode", "interpret"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "needs an estimated" in out.stderr and "--force" in out.stderr


def test_a_timeout_blames_the_stage_that_was_running(evaluator):
    """The kernel traces in a second, then spins forever in the trusted runner's checks (the
    TPU interpreter's): the timeout is the runner's (stage correct), not the trace's."""
    result = evaluator.evaluate(ENDLESS, "8p_gemm", trials=1, timeout_s=10)
    assert (result.status, result.stage) == ("timeout", "correct"), result.message
    assert "while the trusted runner lowered, checked and ran the kernel at size small" \
        in result.message
    assert "(finished: static " in result.message and ", trace " in result.message
