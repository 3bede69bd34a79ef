"""The failure taxonomy (``jaxbench.report.taxonomy``): every category from the rule codes the
evaluator gives, never from message text; records without a code (runs written before codes)
by their status and stage only."""

from __future__ import annotations

import pytest

from jaxbench.contract import RULE_CATEGORY, Category, EvaluationResult, Rule, Stage, Status
from jaxbench.report import taxonomy
from jaxbench.report.taxonomy import CATEGORIES, classify


def _result(status: str, stage: str | None, rule: str | None = None, message: str = "") -> EvaluationResult:
    return EvaluationResult(task="8p_gemm", target="tpu", mode="interpret", size="small", status=status,
                            stage=stage, rule=rule, message=message)

# Messages that read like other categories' (a kernel's own exception text lands in messages).
DECOYS = ["GPU race rule: grid programs (0,) and (1,) both write",
          "work outside pallas_call: 100% of the module's FLOPs",
          "memory budget at size 'small': 300 MiB of VMEM on TPU v6 lite",
          "block shape (7, 128) is not divisible by 8 and 128",
          "sandbox: os.system is not allowed in a kernel", "NaN/Inf in output 0"]


@pytest.mark.parametrize("rule", list(Rule))
def test_every_rule_code_files_its_failure_whatever_the_message(rule):
    for message in DECOYS:
        assert classify(_result(Status.REJECTED, Stage.LOWER, rule, message)) is RULE_CATEGORY[rule]


def test_every_category_is_explained_and_reached_by_a_code():
    assert set(CATEGORIES) == set(Category)
    assert set(RULE_CATEGORY.values()) == set(Category) - {Category.OTHER}
    for key, (label, meaning) in CATEGORIES.items():
        assert label and len(meaning) > 20 and "\n" not in meaning, key
        assert taxonomy.label(key) == label and taxonomy.meaning(key) == meaning


@pytest.mark.parametrize("event, category", [
    # runs written before rule codes (schema 1): status and stage only, the message unread
    ({"status": "rejected", "stage": "static", "message": "GPU race rule:"}, "static_policy"),
    ({"status": "compile_error", "stage": "static", "message": "SyntaxError"}, "source_error"),
    ({"status": "compile_error", "stage": "trace", "message": "memory budget at size"},
     "trace_error"),
    ({"status": "compile_error", "stage": "lower", "message": "memory budget at size 'small'"},
     "compile_error"),
    ({"status": "timeout", "stage": "lower", "message": "work outside pallas_call"}, "timeout"),
    ({"status": "incorrect", "stage": "lower", "message": "GPU race rule: ..."}, "incorrect"),
    ({"status": "rejected", "stage": "lower", "message": "work outside pallas_call"}, "other"),
    ({"status": "exploded", "stage": "correct", "message": "a status the evaluator never had"},
     "other"),
    ({"status": "", "stage": "lower", "message": "an empty status"}, "other"),
    # an unknown code is not believed
    ({"status": "no_pallas", "stage": "lower", "rule": "made_up", "message": ""}, "no_pallas"),
])
def test_records_without_a_known_code_go_by_status_and_stage(event, category):
    """Each record as the report reads it: an evaluation event through EvaluationResult.read
    (a schema 1 record: no ``schema`` key)."""
    result = EvaluationResult.read({"type": "evaluation", "task": "8p_gemm", **event})
    assert result.schema == 1
    assert classify(result) == category


def test_correct_is_no_failure():
    assert classify(_result("correct", "correct")) is None


def test_count_keeps_the_taxonomy_order_and_skips_correct():
    results = [_result(Status.REJECTED, Stage.LOWER, rule) for rule in Rule]
    results.append(_result("correct", "correct"))
    counts = taxonomy.count(results)
    assert list(counts) == [c for c in CATEGORIES if c in counts]
    assert sum(counts.values()) == len(Rule)
    assert counts[Category.MEMORY_BUDGET] == 2  # VMEM and shared memory


IMITATOR = '''
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def kernel(a, b):
    raise ValueError("GPU race rule: grid programs (0,) and (1,) both write; work outside "
                     "pallas_call: 100% of the module's FLOPs; memory budget at size 'small'; "
                     "sandbox: os.system is not allowed in a kernel")
'''


def test_a_kernel_imitating_another_failure_keeps_its_own_category(evaluator, tmp_path):
    """A kernel raising text that reads as a GPU race, outside work, a memory budget and a
    sandbox refusal at once: the taxonomy files it by its code, a trace error."""
    path = tmp_path / "imitator.py"
    path.write_text(IMITATOR)
    result = evaluator.evaluate(path, "8p_gemm", trials=1)
    assert (result.status, result.stage, result.rule) == (
        "compile_error", "trace", "trace_error"), result.message
    assert "GPU race rule" in result.message
    assert classify(result) == "trace_error"
