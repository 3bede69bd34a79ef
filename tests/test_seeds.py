"""Every shipped kernel (seed and expert) is `correct` at small size in interpret mode through
the real sandboxed evaluator, and cross-lowers for its platform at full size."""

import os
from typing import Any

import jax
import pytest

from jaxbench import compat
from jaxbench.contract import EvaluationResult
from jaxbench.runs.jobs import KNOWN_INTERPRET_FAILURES, kernel_unavailable
from jaxbench.tasks import list_tasks


def _kernel_files(task):
    """Shipped kernels, less library experts whose optional extra is not installed
    (tests/test_tokamax.py checks those where it is)."""
    return [(kind, target, path) for (kind, target), path in sorted(task.kernel_files().items())
            if not kernel_unavailable(kind)]


# Shipped kernels JAX's interpreters cannot run on a CPU host: the runner's table of
# documented limitations. Each must fail exactly as documented (status, stage, and the words of
# JAX's error): when a JAX release runs one, or it fails for another reason, the test fails and
# the entry must change.
INTERPRET_UNSUPPORTED = KNOWN_INTERPRET_FAILURES
# (no interpret-mode export exists for them, so nothing trusted runs them: `unverified`)
_NO_INTERPRET_EXPORT = "no exportable interpret-mode lowering"
_WGMMA_ERROR = ("unverified", "correct", (_NO_INTERPRET_EXPORT, "wgmma",
                                          "does not have a corresponding jaxpr input"))
# plgpu.kernel: no trusted interpret export anywhere (their copies to shared memory have no
# state-discharge rule); from JAX 0.11 the untrusted Mosaic GPU interpreter runs them and must
# agree with the truth (it can only add a failure), except where it cannot run an operation.
_NO_MGPU_INTERPRETER = compat.gpu_interpreter() is None


def _plgpu_kernel(words_from_0_11: str) -> tuple[str, str, tuple[str, ...]]:
    return ("unverified", "correct", (
        _NO_INTERPRET_EXPORT, "No state discharge rule implemented for primitive: copy_gmem_to",
        "has no Mosaic GPU interpreter" if _NO_MGPU_INTERPRETER else words_from_0_11))


_AGREES = "its outputs matched the truth, which cannot make it `correct`"
_JAX = tuple(int(part) for part in jax.__version__.split(".")[:3] if part.isdigit())
EXPECTED_FAILURES = {
    # JAX's interpreters crash inside their own code on the library's TypedInt refs (the
    # interpret-mode lowering) and its ReshapeTransform (the TPU interpreter): not the kernel's
    # fault, and nothing trusted ran it (evaluator/judge/tool_faults.py).
    ("7p_ragged_paged_attention", "expert", "tpu"):
        ("unverified", "correct", ("crashed inside its own code (JAX ", "AttributeError: '",
                                   "' object has no attribute '")),
    ("8p_gemm", "seed_mosaic_legacy", "gpu"): _WGMMA_ERROR,
    ("1p_flash_attention", "seed_mosaic_legacy", "gpu"):
        ("unverified", "correct", (_NO_INTERPRET_EXPORT,
                                   "NotImplementedError: Unsupported transform: UnswizzleRef")),
    ("12p_rmsnorm", "seed_mosaic", "gpu"): _plgpu_kernel(_AGREES),
    ("8p_gemm", "seed_mosaic", "gpu"): _plgpu_kernel(_AGREES),
    # its p @ v wgmma takes p from registers and accumulates in place: JAX 0.12.0's interpreter
    # took both operands from shared memory; 0.12.1's runs it
    ("1p_flash_attention", "seed_mosaic", "gpu"): _plgpu_kernel(
        _AGREES if _JAX >= (0, 12, 1) else
        "unsupported: NotImplementedError: MLIR translation rule for primitive 'wgmma' not found"),
}
# TPU kernels whose TPU-interpreter check (race detection, NaN-filled memory) JAX cannot run,
# with the exact report; every other TPU kernel must report "ran" (under JAX 0.10 all 102 do).
TPU_INTERPRETER_UNSUPPORTED: dict[tuple[str, str], str] = {}

ALL_KERNELS = [(t.id, kind, target, path) for t in list_tasks()
               for kind, target, path in _kernel_files(t)]
IDS = [f"{task}-{kind}_{target}" for task, kind, target, _ in ALL_KERNELS]
INTERPRET_TEST = "test_shipped_kernel_is_correct_in_interpret_mode"
# The quick tier (`pytest -m quick`) takes 12p_rmsnorm's seeds, one per target and backend,
# through the whole evaluator.
INTERPRET_CASES = [pytest.param(*kernel, id=id_, marks=[pytest.mark.quick]
                                if kernel[0] == "12p_rmsnorm" and kernel[1].startswith("seed") else [])
                   for kernel, id_ in zip(ALL_KERNELS, IDS, strict=True)]
# Evaluations at once: two (as before) on a small host, up to four where the cores allow.
WORKERS = max(2, min(4, (os.cpu_count() or 2) // 2))


class ShippedResults:
    """Interpret-mode results of shipped kernels, keyed by (task, kind, target), each evaluated
    on first use. The first use also queues the other kernels this session selected, WORKERS
    at a time (as `jaxbench run --workers N` would), so a one-kernel selection evaluates one
    kernel and the whole file keeps its parallelism."""

    def __init__(self, selected: list[tuple[str, str, str]]) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from jaxbench.evaluator import Evaluator

        self._paths = {(task, kind, target): path for task, kind, target, path in ALL_KERNELS}
        self._selected = selected
        self._futures: dict[tuple[str, str, str], Any] = {}
        self._evaluator = Evaluator(spares=WORKERS)
        self._threads = ThreadPoolExecutor(max_workers=WORKERS)

    def _evaluate(self, key: tuple[str, str, str]) -> EvaluationResult:
        task, kind, target = key
        # One trial per kernel (fresh inputs from the evaluator's secret; TPU kernels also in
        # the TPU interpreter): 190+ kernels, so CI stays well under its time budget.
        return self._evaluator.evaluate(self._paths[key], task, target=target,
                                        mode="interpret", size="small", trials=1)

    def __getitem__(self, key: tuple[str, str, str]) -> EvaluationResult:
        if key not in self._futures:
            for k in [key] + self._selected:
                if k not in self._futures:
                    self._futures[k] = self._threads.submit(self._evaluate, k)
        return self._futures[key].result()

    def close(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)
        self._evaluator.close()


@pytest.fixture(scope="session")
def shipped_results(request):
    # Under pytest-xdist every worker collects every test but runs only those sent to it, one
    # at a time: queueing the session's selection there would evaluate each kernel once per
    # worker, so a worker evaluates on demand (the workers are the parallelism).
    selected = [] if os.environ.get("PYTEST_XDIST_WORKER") else [
        (i.callspec.params["task"], i.callspec.params["kind"], i.callspec.params["target"])
        for i in request.session.items if getattr(i, "originalname", None) == INTERPRET_TEST]
    results = ShippedResults(selected)
    yield results
    results.close()


@pytest.mark.parametrize("task,kind,target,path", INTERPRET_CASES)
def test_shipped_kernel_is_correct_in_interpret_mode(shipped_results, task, kind, target, path):
    from jaxbench.runs.jobs import Job, known_limitation

    result = shipped_results[(task, kind, target)]
    expected = EXPECTED_FAILURES.get((task, kind, target))
    if expected is not None:  # a documented limitation: exactly that failure, reported as such
        status, stage, words = expected
        assert (result.status, result.stage) == (status, stage), result.message
        assert [w for w in words if w not in result.message] == [], result.message
        job = Job(task, kind, target, path)
        assert known_limitation(job, result) == INTERPRET_UNSUPPORTED[(task, kind, target)]
        return
    assert result.status == "correct", f"{result.stage}: {result.message}"
    if target == "tpu":
        report = result.stages.get("correct", {}).get("tpu_interpreter")  # None: not reported
        assert report == TPU_INTERPRETER_UNSUPPORTED.get((task, kind), "ran"), report
    else:
        assert "tpu_interpreter" not in result.stages.get("correct", {})


def test_documented_limitations_are_the_runners():
    assert set(EXPECTED_FAILURES) == set(INTERPRET_UNSUPPORTED)


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
