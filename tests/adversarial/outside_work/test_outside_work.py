"""Outside work judged by data flow and by the module's own total, in the task's currency.

Each cheat left the task's real work in XLA and passed the budget counted against the task's
nominal FLOPs with constants priced as raw input: tables spelled as splats (several spellings),
a data-movement task done by an XLA gather, an exact algebraic shortcut (a GEMV for a GEMM's
row sums) left in XLA. Each is now refused at ``lower`` with a rule code that says policy, not
cheating; the same shortcut written as Pallas kernels is `correct`."""

from pathlib import Path

import pytest

HERE = Path(__file__).parent

CASES = [
    # file, task, rule, words the message must contain
    ("one_hot_splat_concat.py", "l1_one_hot", "outside_flops", "gather at one_hot_splat_concat.py"),
    ("one_hot_splat_pad.py", "l1_one_hot", "outside_flops", "gather at one_hot_splat_pad.py"),
    ("relu_sign_table.py", "l1_relu", "outside_flops", "gather at relu_sign_table.py"),
    ("embedding_gather_in_xla.py", "l1_embedding_lookup", "outside_bytes", "data movement"),
    # the same, with one block of the table read by the kernel: bytes counted as blocks move
    ("embedding_one_block_padding.py", "l1_embedding_lookup", "outside_bytes", "data movement"),
    ("gemv_shortcut_in_xla.py", "21k_gemm_divide_sum_scaling", "outside_flops",
     "of the module's FLOPs run in XLA"),
]


@pytest.mark.parametrize("name,task,rule,words", CASES, ids=[c[0] for c in CASES])
def test_work_left_in_xla_is_refused_by_its_rule(evaluator, name, task, rule, words):
    result = evaluator.evaluate(HERE / name, task, trials=1, timeout_s=300)
    assert (result.status, result.stage, result.rule) == ("no_pallas", "lower", rule), \
        result.message
    assert words in result.message, result.message
    assert "work outside pallas_call" in result.message


def test_the_shortcut_written_as_kernels_is_correct(evaluator):
    result = evaluator.evaluate(HERE / "honest_gemv_in_kernel.py", "21k_gemm_divide_sum_scaling",
                                trials=2, timeout_s=300)
    assert result.status == "correct", f"{result.stage}: {result.message}"
    structure = result.structure
    assert structure["outside_flops"] == 0.0 and structure["kernel_flops"] > 0
    # far below the GEMM's nominal count: the kernels found the GEMV
    assert structure["kernel_flops"] < 0.05 * structure["task_flops"]


def test_a_kernel_result_discarded_leaves_no_kernel(evaluator):
    """The GEMV as the output and a full matmul kernel beside it that nobody reads: the export
    drops the unread kernel, so the module has none."""
    result = evaluator.evaluate(HERE / "gemv_output_not_from_kernel.py",
                                "21k_gemm_divide_sum_scaling", trials=1, timeout_s=300)
    assert (result.status, result.rule) == ("no_pallas", "no_kernel"), result.message


def test_every_file_is_covered():
    names = {p.name for p in HERE.glob("*.py")} - {"test_outside_work.py", "__init__.py"}
    assert names == {c[0] for c in CASES} | {"honest_gemv_in_kernel.py",
                                              "gemv_output_not_from_kernel.py"}
