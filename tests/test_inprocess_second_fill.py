"""The in-process checks' second fill (``check_in_process(..., second_fill=True)``), the
evaluator's check of memory a kernel never wrote, which the harness-overhead benchmark's bare
side now does too: a kernel whose outputs depend on such memory passes the trials and fails
only there; a seed passes both."""

from __future__ import annotations

from pathlib import Path

from jaxbench.evaluator.inprocess import check_in_process

NUDGE = Path(__file__).parent / "adversarial" / "kernels" / "uninitialised_nudge.py"
SEED = Path(__file__).parents[1] / "src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_tpu.py"


def test_the_second_fill_finds_outputs_that_depend_on_memory_never_written():
    source = NUDGE.read_text()
    plain = check_in_process(source, "12p_rmsnorm", trials=1, tpu_interpret=False)
    assert plain["ok"], plain  # within tolerance: the trials alone cannot tell
    filled = check_in_process(source, "12p_rmsnorm", trials=1, tpu_interpret=False,
                              second_fill=True)
    assert not filled["ok"] and filled["message"].startswith("[second fill]"), filled


def test_a_seed_passes_the_second_fill():
    out = check_in_process(SEED.read_text(), "12p_rmsnorm", trials=1, tpu_interpret=False,
                           second_fill=True)
    assert out["ok"], out
