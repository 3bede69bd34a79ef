"""Every shipped kernel (seed and expert) is `correct` at small size in interpret mode through
the real sandboxed evaluator, and cross-lowers for its platform at full size."""

import pytest

from jaxbench.runner import KNOWN_INTERPRET_FAILURES, kernel_unavailable
from jaxbench.tasks import list_tasks


def _kernel_files(task):
    """Shipped kernels, less library experts whose optional extra is not installed
    (tests/test_tokamax.py checks those where it is)."""
    return [(kind, target, path) for (kind, target), path in sorted(task.kernel_files().items())
            if not kernel_unavailable(kind)]


# Shipped kernels JAX's interpreters cannot run on a CPU host: the runner's table of
# documented limitations, held here as strict xfails (when a JAX release runs them, the test
# fails and the entry must go).
INTERPRET_UNSUPPORTED = KNOWN_INTERPRET_FAILURES

KERNELS = [
    pytest.param(t.id, kind, target, path, marks=[pytest.mark.xfail(
        reason=INTERPRET_UNSUPPORTED[(t.id, kind, target)], strict=True)]
        if (t.id, kind, target) in INTERPRET_UNSUPPORTED else [])
    for t in list_tasks() for kind, target, path in _kernel_files(t)
]
ALL_KERNELS = [(t.id, kind, target, path) for t in list_tasks()
               for kind, target, path in _kernel_files(t)]
IDS = [f"{task}-{kind}_{target}" for task, kind, target, _ in ALL_KERNELS]


@pytest.fixture(scope="session")
def shipped_results(tmp_path_factory):
    """Evaluates all shipped kernels once, in parallel, the way `jaxbench run` does."""
    from jaxbench.runner import Job, run_jobs
    from jaxbench.runs import RunDir

    run = RunDir.open(tmp_path_factory.mktemp("run"), {"command": "test"})
    jobs = [Job(task, kind, target, path) for task, kind, target, path in ALL_KERNELS]
    # One trial per kernel (fresh inputs from the run's secret; TPU kernels also in the TPU
    # interpreter): 190+ kernels, so CI stays well under its time budget.
    results = run_jobs(jobs, run, size="small", mode="interpret", workers=2,
                       evaluate_options={"trials": 1})
    return {(r["task"], r["kind"], r["target"]): r for r in results}


@pytest.mark.parametrize("task,kind,target,path", KERNELS, ids=IDS)
def test_shipped_kernel_is_correct_in_interpret_mode(shipped_results, task, kind, target, path):
    result = shipped_results[(task, kind, target)]
    assert result["status"] == "correct", f"{result['stage']}: {result['message']}"
    if target == "tpu":
        assert result["stages"]["correct"].get("tpu_interpreter", "ran") != "skipped"


@pytest.mark.parametrize("task,kind,target,path", ALL_KERNELS, ids=IDS)
def test_shipped_kernel_cross_lowers_at_full_size(task, kind, target, path):
    from jaxbench.evaluator.inprocess import check_in_process

    out = check_in_process(path.read_text(), task, target=target, size="full", run=False,
                           filename=str(path))
    assert out["lowered"] and out["pallas_calls"] >= 1
    assert out["outside_flops_fraction"] <= 0.1


def test_every_task_has_a_tpu_seed():
    missing = [t.id for t in list_tasks() if ("seed", "tpu") not in t.kernel_files()]
    assert not missing
