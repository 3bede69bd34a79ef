"""The Tokamax experts (``expert_tokamax_*.py``, optional ``jaxbench[tokamax]`` extra) are
`correct` at small size through the sandboxed evaluator and cross-lower at full size."""

import pytest

pytest.importorskip("tokamax", reason="the optional `tokamax` extra is not installed "
                               "(pip install -e '.[tokamax]')")

from jaxbench.tasks import list_tasks  # noqa: E402

KERNELS = [(t.id, target, path) for t in list_tasks()
           for (kind, target), path in sorted(t.kernel_files().items())
           if kind == "expert_tokamax"]
IDS = [f"{task}-{target}" for task, target, _ in KERNELS]


def test_there_are_tokamax_experts():
    assert KERNELS


@pytest.mark.parametrize("task,target,path", KERNELS, ids=IDS)
def test_tokamax_expert_is_correct(task, target, path):
    import jaxbench

    result = jaxbench.evaluate(str(path), task)
    assert result.status == "correct", f"{result.stage}: {result.message}"


@pytest.mark.parametrize("task,target,path", KERNELS, ids=IDS)
def test_tokamax_expert_cross_lowers_at_full_size(task, target, path):
    from jaxbench.evaluator.inprocess import check_in_process

    out = check_in_process(path.read_text(), task, target=target, size="full", run=False,
                           filename=str(path))
    assert out["lowered"] and out["pallas_calls"] >= 1
    assert out["outside_flops_fraction"] <= 0.1


def test_tokamax_dependencies_do_not_reach_the_harness_frames():
    """pydantic may read frames above the candidate (Tokamax's own calls), never below it."""
    from pathlib import Path

    import jaxbench

    cheat = Path(__file__).parent / "kernels" / "tokamax_pydantic_frame.py"
    result = jaxbench.evaluate(str(cheat), "8p_gemm")
    assert (result.status, result.stage) == ("rejected", "trace"), result.message
    assert "frame inspection" in result.message
