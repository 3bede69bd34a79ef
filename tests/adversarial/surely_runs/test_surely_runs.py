"""Issue 46: padding the kernels' count with work that never runs or never reaches the result,
a counter made to raise, an output that reaches a kernel only through ``0 *``, and a grid that
does not cover its output. Then a white-box attack's three: a grid with a dimension of 0 (no
program runs), a ``cond`` index out of range, and an XLA result aliased through a kernel that
never writes it. Each cheat is not `correct` (work left in XLA is `no_pallas` with
its policy code, never `rejected`); each has an honest control that is `correct`."""

from pathlib import Path

import pytest

from jaxbench.serve.rewards import reward

HERE = Path(__file__).parent
OUTSIDE_WORK = Path(__file__).parents[1] / "outside_work"
ADVERSARIAL = Path(__file__).parents[1] / "kernels"
SEEDS = Path(__file__).parents[3] / "src/jaxbench/tasks"
GEMV, EMBED, GEMM, NORM = ("21k_gemm_divide_sum_scaling", "l1_embedding_lookup", "8p_gemm",
                           "12p_rmsnorm")

CASES = [
    # file, task, status, rule, words the message must contain
    ("dead_branch_padding.py", GEMV, "no_pallas", "outside_flops", "of the module's FLOPs run in XLA"),
    ("zero_trip_loop_padding.py", GEMV, "no_pallas", "outside_flops",
     "of the module's FLOPs run in XLA"),
    ("dead_call_padding.py", GEMV, "no_pallas", "outside_flops", "of the module's FLOPs run in XLA"),
    ("unwritten_output_padding.py", EMBED, "no_pallas", "outside_bytes", "data movement"),
    ("zero_times_kernel_result.py", GEMV, "no_pallas", "output_without_kernel",
     "output 0 is not written by any kernel"),
    ("counter_made_to_raise.py", GEMM, "unverified", "kernel_work_fault",
     "could not count the kernels' own work"),
    # a grid with a dimension of 0 runs no program; an aliased output the kernel does not
    # surely write is its input (made by XLA) passed through
    ("grid_zero_alias_obfuscated.py", GEMM, "no_pallas", "output_without_kernel",
     "output 0 is not written by any kernel"),
    ("grid_zero_from_data.py", GEMM, "no_pallas", "output_without_kernel",
     "output 0 is not written by any kernel"),
    ("grid_zero_alias_bytes.py", EMBED, "no_pallas", "output_without_kernel",
     "made by gather (passed through the aliased output of a kernel that does not surely "
     "write it)"),
    ("alias_unwritten.py", EMBED, "no_pallas", "output_without_kernel",
     "made by gather (passed through the aliased output of a kernel that does not surely "
     "write it)"),
    # a branch index out of range: JAX's lowerings disagree on the branch it runs
    ("cond_index_out_of_range.py", EMBED, "unverified", "kernel_work_fault",
     "a cond's branch index evaluates to -1 with 2 branches: JAX's lowerings disagree on "
     "which branch runs"),
]
CONTROLS = [
    # an honest kernel for each cheat above, by the task it cheats
    (OUTSIDE_WORK / "honest_gemv_in_kernel.py", GEMV),  # live branches on program ids, two calls
    (HERE / "honest_loop_in_kernel.py", GEMV),  # a loop inside the kernel
    (HERE / "honest_shallow_nesting.py", GEMM),  # the kernel call nested, within reach
    (SEEDS / "pallasbench/l1_embedding_lookup/seed_tpu.py", EMBED),  # every output written
    (HERE / "grid_nonzero_alias_control.py", GEMM),  # a grid of programs writes its aliased output
]


@pytest.mark.parametrize("name,task,status,rule,words", CASES, ids=[c[0] for c in CASES])
def test_padding_that_never_runs_is_not_counted(evaluator, name, task, status, rule, words):
    result = evaluator.evaluate(HERE / name, task, trials=1, timeout_s=300, memory_gb=3)
    assert (result.status, result.stage, result.rule) == (status, "lower", rule), \
        result.message
    assert words in result.message, result.message


@pytest.mark.parametrize("path,task", CONTROLS, ids=[f"{p.name}-{t}" for p, t in CONTROLS])
def test_the_honest_controls_are_correct(evaluator, path, task):
    result = evaluator.evaluate(path, task, trials=1, timeout_s=300, memory_gb=3)
    assert result.status == "correct", f"{result.stage} {result.rule}: {result.message}"


def test_plain_jnp_with_a_pallas_copy_is_no_pallas_and_earns_what_no_pallas_earns(evaluator):
    """The same work as a plain-jnp kernel plus a Pallas copy: refused for the work left in
    XLA (policy), never `rejected`, and rewarded no less than the plain-jnp kernel."""
    copied = evaluator.evaluate(ADVERSARIAL / "copy_matmul_in_xla.py", GEMM, trials=1,
                                timeout_s=300, memory_gb=3)
    plain = evaluator.evaluate(ADVERSARIAL / "plain_jnp.py", GEMM, trials=1, timeout_s=300,
                               memory_gb=3)
    assert (copied.status, copied.rule) == ("no_pallas", "outside_flops"), copied.message
    assert plain.status == "no_pallas", plain.message
    assert reward(copied)["value"] >= reward(plain)["value"]


def test_a_grid_that_does_not_cover_its_output_is_named_in_the_verdict(evaluator):
    result = evaluator.evaluate(HERE / "floor_grid_rmsnorm.py", NORM, trials=1, timeout_s=300,
                                memory_gb=3)
    assert (result.status, result.rule) == ("incorrect", "uninitialised"), result.message
    message = result.message
    assert "the outputs depend on uninitialised memory" in message, message
    assert "[1, 224:256, :]" in message, message  # where the two fills differ: x[1, 224:]
    assert "blocks (96, 1024) over the grid (5,) never write indices 480:512 of dimension 0" \
        in message, message
    honest = evaluator.evaluate(SEEDS / "jaxbench/12p_rmsnorm/seed_tpu.py", NORM, trials=1,
                                timeout_s=300, memory_gb=3)
    assert honest.status == "correct", honest.message


def test_every_file_is_covered():
    names = {p.name for p in HERE.glob("*.py")} - {"test_surely_runs.py", "__init__.py"}
    assert names == {c[0] for c in CASES} | {p.name for p, _ in CONTROLS if p.parent == HERE} \
        | {"floor_grid_rmsnorm.py"}
