"""Lookup cheats (tests/adversarial/lookups/*.py): work done outside the kernels as table
lookups, indexed writes, shipped constants or a loop of free ops. Each passed the judge's
structure rules before lookups were priced and data-dependent loops made heavy; each now gets
its exact verdict through the real evaluator, before anything of it runs."""

from pathlib import Path

import pytest

HERE = Path(__file__).parent
NORM = "12p_rmsnorm"
OUTSIDE = "work outside pallas_call"

CASES = [
    # file, status, stage, words the message must contain
    ("gather_table_squares.py", "no_pallas", "lower", "stablehlo.gather"),
    ("dynamic_slice_lookup_chain.py", "no_pallas", "lower", "stablehlo.dynamic_slice"),
    ("scatter_accumulation.py", "no_pallas", "lower", "stablehlo.scatter"),
    ("constant_answer.py", "no_pallas", "lower", "stablehlo.constant"),
    ("free_loop_data_trips.py", "no_pallas", "lower", "stablehlo.while x1"),
]


@pytest.mark.parametrize("name,status,stage,words", CASES, ids=[c[0] for c in CASES])
def test_lookup_cheat_gets_its_verdict(evaluator, name, status, stage, words):
    options = {}
    if name == "free_loop_data_trips.py":
        # The endless loop must be refused by the judge before its runner runs it, not time out
        # there: a short limit shows it. (The untrusted TPU-interpreter probe, which the parent
        # waits for before judging, would spin on it too: off here, see the report.)
        options = {"timeout_s": 60, "tpu_interpret": False}
    result = evaluator.evaluate(HERE / name, NORM, **{"trials": 1, "timeout_s": 180,
                                                       "memory_gb": 3, **options})
    assert (result.status, result.stage) == (status, stage), result.message
    assert words in result.message, result.message
    if name != "free_loop_data_trips.py":
        assert OUTSIDE in result.message, result.message
    else:
        assert "counted as heavy" in result.message, result.message


def test_every_lookup_cheat_is_covered():
    assert {p.name for p in HERE.glob("*.py")} - {"test_lookups.py", "__init__.py"} \
        == {c[0] for c in CASES}
