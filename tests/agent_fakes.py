"""Test doubles for the optimizing agents: scripted models, an instant evaluator, a model
that dies after N answers, verdicts built through the result type, and event helpers
(shared by the tests/test_agents*.py files)."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

from jaxbench.backends.host import versions
from jaxbench.contract import EvaluationResult
from jaxbench.llm import Completion, Provider, Sampling
from jaxbench.llm.scripted import Scripted
from jaxbench.runs import RunDir, read_events
from jaxbench.tasks import get_task

KERNEL = '''```python
import jax
from jax.experimental import pallas as pl

TARGET = "{target}"


def _body(x_ref, o_ref):
    o_ref[...] = x_ref[...]  # variant {i}


def kernel(*args):
    return pl.pallas_call(_body, out_shape=jax.ShapeDtypeStruct(args[0].shape, args[0].dtype))(args[0])
```
'''

JAXPR = ("bc:f32[8,128] = pallas_call[\n compiler_params=CompilerParams(dimension_semantics=('parallel',"
         " 'arbitrary'), vmem_limit_bytes=None)\n grid_mapping=GridMapping(grid=(4, 2), block_mappings="
         "(BlockMapping(block_shape=(Blocked(block_size=256), Blocked(block_size=512))), BlockMapping("
         "block_shape=(Squeezed(), Blocked(block_size=128)))))\n]")


def script(directory: Path, *answers: str, latency: float = 0.0) -> str:
    """A scripted model spec answering ``answers`` in turn."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, answer in enumerate(answers):
        (directory / f"{i:03d}.txt").write_text(answer)
    return f"scripted:{directory}" + (f"?latency={latency}" if latency else "")


def kernels(target: str, n: int) -> list[str]:
    """``n`` distinct, well-formed kernel answers (no two are the same kernel)."""
    return [KERNEL.format(target=target, i=i) for i in range(n)]


def fast(speed: float, tag: str = "") -> str:
    """An answer whose kernel the fake evaluators time at ``speed`` (its ``SPEED`` line)."""
    return (f"```python\nimport jax\nfrom jax.experimental import pallas as pl\nTARGET = 'tpu'\n"
            f"SPEED = {speed}\n\ndef kernel(a, b):\n    return pl.pallas_call(body{tag})(a, b)\n```\n")


def plan(i: int) -> str:
    """The ``i``-th scripted planning answer."""
    return f"PLAN-{i}: tile the output in 512x512 blocks and keep K last."


def seed(task_id: str, target: str) -> str:
    return get_task(task_id).kernel_files()[("seed", target)].read_text()


def verdict(status: str, *, task: str = "12p_rmsnorm", mode: str = "interpret",
            extra: dict[str, Any] | None = None, **fields: Any) -> EvaluationResult:
    """A result as an evaluator (or, with ``extra``, a run's event) would give it: ``status``
    and ``fields`` of :class:`~jaxbench.contract.EvaluationResult`, an agent's keys in ``extra``."""
    return EvaluationResult(task=task, target="tpu", mode=mode, size="small", status=status,
                            extra=extra or {}, **fields)


def events_of(run: RunDir | Path, kind: str) -> list[dict]:
    path = run.path if isinstance(run, RunDir) else run
    return [e for e in read_events(path) if e.get("type") == kind]


def samples_by_task(run: RunDir | Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for e in events_of(run, "evaluation"):
        if e["sample"] is not None:
            out.setdefault(e["task"], []).append(e)
    return out


class FakeEvaluator:
    """An instant evaluator: the verdict is a function of the code (correct when the code
    calls pallas_call and its hash says so, with a made-up speedup when ``timed``), after an
    optional sleep. Counts its calls and how many run at once; writes a small jaxpr to
    ``save_ir`` like the real one."""

    def __init__(self, seconds: float = 0.0, timed: bool = False, correct_every: int = 2) -> None:
        self.seconds, self.timed, self.correct_every = seconds, timed, correct_every
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.codes: list[str] = []
        self._lock = threading.Lock()

    def evaluate(self, code: str, task_id: str, settings: Any) -> EvaluationResult:
        target, mode, size = settings.target or "tpu", settings.mode, settings.size
        save_ir = settings.save_ir
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.codes.append(code)
        try:
            if self.seconds:
                time.sleep(self.seconds)
            start = EvaluationResult.start(task_id, target, mode, size, code, versions=versions())
            digest = int(hashlib.sha256(code.encode()).hexdigest(), 16)
            if "pallas_call" in code and digest % self.correct_every == 0:
                speedup = 0.5 + (digest % 1000) / 400 if self.timed else None
                if save_ir is not None:
                    Path(save_ir).mkdir(parents=True, exist_ok=True)
                    (Path(save_ir) / "jaxpr.txt").write_text(JAXPR)
                return start.replace(
                    status="correct", stage="correct", max_abs_err=1e-3, speedup=speedup,
                    t_ref_ms=1.0 if speedup else None, t_kernel_ms=1.0 / speedup if speedup else None,
                    compile_s=0.5,
                    structure={"kernel_calls": 1, "outside_flops": 0.0, "task_flops": 1.0})
            if "pallas_call" in code:
                return start.replace(
                    status="compile_error", stage="lower",
                    message="lowering for tpu: ValueError: bad block shape at <kernel>:9",
                    rule="block_shape")
            return start.replace(status="compile_error", stage="static", message="no kernel defined",
                                 rule="no_kernel_function")
        finally:
            with self._lock:
                self.in_flight -= 1


class KilledAfter(Provider):
    """A scripted model that dies (like a killed process) after ``n`` answers."""

    def __init__(self, directory: Path, n: int) -> None:
        super().__init__("killed")
        self.inner, self.n, self.calls = Scripted(str(directory)), n, 0
        self._lock = threading.Lock()

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        with self._lock:
            self.calls += 1
            if self.calls > self.n:
                raise KeyboardInterrupt  # not retried, not caught: the run stops here
        return self.inner.complete(prompt, sampling, sample=sample)


class Refusing(Provider):
    """Refuses the calls whose sample id contains ``refuse`` with an HTTP ``status``; the
    others get scripted answers."""

    def __init__(self, directory: Path, refuse: str, status: int = 400) -> None:
        super().__init__("refusing")
        self.inner, self.refuse, self.status = Scripted(str(directory)), refuse, status
        self.calls: list[str] = []

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        self.calls.append(sample)
        if self.refuse in sample:
            error = RuntimeError("prompt is too long: 250000 tokens > 200000 maximum")
            error.status_code = self.status  # type: ignore[attr-defined]
            raise error
        return self.inner.complete(prompt, sampling, sample=sample)
