"""The evaluator: what outlives one evaluation (the package's docstring,
:mod:`jaxbench.evaluator`, tells the whole story).

:class:`Evaluator` owns the warm untrusted tracers (:mod:`jaxbench.evaluator.parent.pool`), the
warm trusted runners (:mod:`jaxbench.evaluator.parent.judge_client`), the float32 truths and the
chips' owners; each :meth:`Evaluator.evaluate` call resolves its case
(:mod:`jaxbench.evaluator.parent.case`) and walks one
:class:`~jaxbench.evaluator.parent.evaluation.Evaluation` through its phases.
"""

from __future__ import annotations

import os
import secrets
import threading
from pathlib import Path
from typing import Any

from jaxbench.backends.host import attached, keep_off_accelerators, probe_with
from jaxbench.contract import EvaluationResult, Settings
from jaxbench.evaluator.common.lease import OWNER_DEPTH
from jaxbench.evaluator.common.procs import kill_children, make_non_dumpable
from jaxbench.evaluator.parent import first_owner, held
from jaxbench.evaluator.parent.case import Case, resolve_case
from jaxbench.evaluator.parent.chip_checks import INTERPRET_RESIDUAL_RISK, lowering_fidelity
from jaxbench.evaluator.parent.compare import GroundTruth
from jaxbench.evaluator.parent.evaluation import SPEEDUP_REVIEW_THRESHOLD, Evaluation, Means
from jaxbench.evaluator.parent.held import HeldOwners
from jaxbench.evaluator.parent.judge_client import ChipOwners, RunnerOutcome, RunnerPool
from jaxbench.evaluator.parent.pool import TracerPool
from jaxbench.tasks import get_task, task_file_of

__all__ = ["INTERPRET_RESIDUAL_RISK", "SPEEDUP_REVIEW_THRESHOLD", "Evaluator", "evaluate",
           "kill_children", "lowering_fidelity", "owner_depth", "probe_by_first_owner",
           "read_source"]
DEFAULT_MEMORY_GB = Settings.memory_gb
# Requests a chip's owner takes at once (``JAXBENCH_OWNER_DEPTH``; 1: one at a time, the
# compiles too holding the chip). Above a run's usual workers, so that every request in flight
# compiles inside the owner and only the chip's use queues (two left half the run's wall
# waiting outside it on a v5e: docs/measurements.md); it bounds the owner's concurrent compiles.
DEFAULT_OWNER_DEPTH = 8


def read_source(source_or_path: str | os.PathLike[str]) -> tuple[str, str]:
    """(source, filename) from a path or from source text."""
    if isinstance(source_or_path, os.PathLike) or (
            isinstance(source_or_path, str) and "\n" not in source_or_path
            and source_or_path.endswith(".py")):
        path = Path(source_or_path)
        if not path.is_file():
            raise FileNotFoundError(f"kernel file {str(path)!r} does not exist")
        data = path.read_bytes()
        try:
            return data.decode("utf-8"), str(path)
        except UnicodeDecodeError as exc:
            line = data[:exc.start].count(b"\n") + 1
            raise ValueError(
                f"kernel file {str(path)!r} is not UTF-8 text (byte 0x{data[exc.start]:02x} on "
                f"line {line}): kernel files are read as UTF-8; save it as UTF-8 (e.g. `iconv -f "
                f"latin1 -t utf-8 {path.name} > fixed.py`) and evaluate that") from None
    return str(source_or_path), "<kernel>"


def owner_depth() -> int:
    """Requests a chip's owner takes at once: their compiles run beside the chip, which serves
    one at a time (judge/runner.py, ``serve_concurrently``)."""
    return max(1, int(os.environ.get(OWNER_DEPTH, "") or DEFAULT_OWNER_DEPTH))


def probe_by_first_owner() -> None:
    """From now on this process's probe (which chip, how many: ``backends.host.attached``) is
    answered by the chip's first owner, which keeps the chip for the evaluator that follows
    (parent/first_owner.py): a command opens the chip once. An :class:`Evaluator` does this
    when made; a command that resolves its mode before making one (``run``, ``optimize``)
    calls it first. Not on a host where another process (a Ray worker) will evaluate.

    Where ``jaxbench hold`` holds the chip (parent/held.py), it answers instead, and the
    evaluator's owners are the held chip's: the command opens no chip at all."""
    probe_with(_ask_an_owner)


def _ask_an_owner() -> dict[str, Any]:
    said = held.ask(owner_depth())
    return said if said is not None else first_owner.ask(owner_depth())


class Evaluator:
    """Evaluates candidates with warm untrusted tracers, warm trusted runners and one
    ground-truth cache.

    Args:
        secret: the run's secret; correctness inputs derive from it. Drawn fresh
            when not given, so a kernel cannot tune itself to its test inputs.
        spares: warm tracer processes (and trusted runners) kept waiting.
        work_dir: where the tracers' private directories are made (default: the temp dir).
        tracers: the tracers' pool, started already (``early_tracers``); made here otherwise.

    ``evaluate`` may be called from many threads at once: each call gets its own tracer and,
    in interpret mode, its own trusted runner, so tracing, lowering and checking of different
    candidates overlap on the host's cores. On a device the chip has one owner
    (:attr:`owners`): this process and every other see only the CPU, and the owner, started on
    first use and kept warm, does each request's device work (compiling for the chip, the
    trials, the truth and the timing) one request at a time, while other candidates trace.
    """

    def __init__(self, secret: bytes | None = None, spares: int = 1,
                 work_dir: str | os.PathLike[str] | None = None,
                 tracers: TracerPool | None = None) -> None:
        keep_off_accelerators()  # this process and its children see only the CPU
        probe_by_first_owner()
        make_non_dumpable()  # the secret and the trial keys live here: no ptrace, no /proc reads
        self.secret = secret if secret is not None else secrets.token_bytes(32)
        # ``tracers``: a pool its caller started before importing JAX (:func:`early_tracers`)
        self.pool = tracers if tracers is not None else TracerPool(spares=spares, root=work_dir)
        self._work_dir = work_dir
        self._debug_pool: TracerPool | None = None  # debug runs' tracers, made on first use
        self.runners = RunnerPool(spares=min(spares, 1))
        self.truth = GroundTruth()
        # the chips' owners, started on first use (or a held chip's: jaxbench hold)
        self._owners: ChipOwners | HeldOwners | None = None
        self._owners_lock = threading.Lock()
        self._prefetching: list[threading.Thread] = []
        self._aborted = False

    @property
    def owners(self) -> ChipOwners | HeldOwners:
        """One trusted runner per chip, the only processes that open it; a held chip's where
        the probe found one (``jaxbench hold``)."""
        with self._owners_lock:
            if self._owners is None:
                found = attached()
                self._owners = held.take() or ChipOwners(
                    found.count if found is not None else 1, depth=owner_depth(),
                    adopt=first_owner.take)
            return self._owners

    def pool_for(self, debug: bool) -> TracerPool:
        """The tracers for an evaluation: a debug run's (``jaxbench eval --debug``, whose
        verdict never counts) run the kernel themselves, sealed but free to read files."""
        if not debug:
            return self.pool
        with self._owners_lock:
            if self._debug_pool is None:
                self._debug_pool = TracerPool(spares=0, root=self._work_dir, debug=True)
            return self._debug_pool

    def _close_owners(self) -> None:
        with self._owners_lock:
            if self._owners is not None:
                self._owners.close()
        first_owner.release()  # started as the probe and never needed
        held.release()

    def close(self) -> None:
        self.pool.close()
        if self._debug_pool is not None:
            self._debug_pool.close()
        self.runners.close()
        self._close_owners()
        self.truth.cancel()  # truths not started yet are not needed any more
        if self._aborted:  # the caller leaves with os._exit; nothing must wait for XLA
            return
        for thread in self._prefetching:  # never leave XLA work running at interpreter exit
            thread.join()

    def abort(self) -> None:
        """Stops everything in flight (Ctrl-C): no new tracers or runners, the warm ones and
        the busy ones killed with their process groups. Evaluations in flight then end as
        ``crashed``; callers must discard them."""
        self._aborted = True
        self.pool.close()
        if self._debug_pool is not None:
            self._debug_pool.close()
        self.runners.close()
        self._close_owners()
        kill_children()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def evaluate(self, source_or_path: str | os.PathLike[str], task_id: str,
                 settings: Settings | None = None, **options: Any) -> EvaluationResult:
        """Runs the phases on one candidate; returns its
        :class:`~jaxbench.contract.EvaluationResult`.

        ``settings`` (:class:`~jaxbench.contract.Settings`), or its fields as
        keyword options: ``target``, ``mode``, ``size``, ``trials``, ``timeout_s``,
        ``memory_gb``, ``tpu_interpret``, ``max_outside_flops_fraction``, ``timing``,
        ``save_ir``, ``debug``, ``chip``. ``debug`` (``jaxbench eval --debug``) allows
        ``jax.debug.print`` and runs the kernel in interpret mode on the untrusted side, so
        that its printed output can be shown; such a result is marked ``debug`` and
        never counts (a run directory refuses it). ``chip`` (``--chip``): the chip the kernel
        is judged for (its limits, its identity while traced, Triton's target); by default
        the suite's (PallasBench GPU tasks: an A100; otherwise a TPU v6e or an H200), in
        device mode the attached one."""
        if settings is not None and options:
            raise TypeError("pass settings or keyword options, not both")
        settings = settings if settings is not None else Settings.of(**options)
        source, filename = read_source(source_or_path)
        case = resolve_case(get_task(task_id), settings, source)
        return self._evaluate(source, filename, case)

    def evaluate_case(self, source_or_path: str | os.PathLike[str],
                      case: Case) -> EvaluationResult:
        """:meth:`evaluate` with the case its caller resolved already (``jaxbench eval``
        resolves it at its front door, :func:`~jaxbench.evaluator.parent.case.resolve_case`
        with ``front_door=True``): carried as it is, not resolved again."""
        return self._evaluate(*read_source(source_or_path), case)

    def _evaluate(self, source: str, filename: str, case: Case) -> EvaluationResult:
        if case.mode == "device":  # the chip's owner starts while the candidate is traced,
            self.owners.prestart()  # and compiles the task's programs for the chip meanwhile
            self.owners.prepare({"op": "prepare", "task": case.task.id,
                                 "task_file": task_file_of(case.task.id), "size": case.size,
                                 "xla_cache": case.settings.xla_cache}, case.timeout_s)
        means = Means(tracers=self.pool_for, judge=self.run_judge, prestart=self.runners.prestart,
                      prefetch=self.prefetch_truth, secret=self.secret, truth=self.truth)
        return Evaluation(means, case, source, filename).run()

    def prefetch_truth(self, task: Any, size: str, keys: list[list[int]]) -> None:
        """Starts computing the float32 truths for ``keys`` in a thread (interpret mode: while
        the tracer and the runner work)."""
        thread = threading.Thread(target=self.truth.prefetch, daemon=True, args=(task, size, keys))
        thread.start()
        self._prefetching = [t for t in self._prefetching if t.is_alive()] + [thread]

    def run_judge(self, request: dict[str, Any], case: Case) -> RunnerOutcome:
        """One judge request: on a device, by a chip's owner (it waits for a free one; the
        host-memory watchdog does not apply there, since the owner's resident size counts
        mapped device memory and device memory errors are XLA's to report); otherwise on a
        warm trusted runner that sees only the CPU."""
        if case.mode == "device":
            return self.owners.run(request, case.timeout_s)
        return self.runners.run(request, case.timeout_s, case.memory_bytes)


def evaluate(source_or_path: str | os.PathLike[str], task_id: str,
             **options: Any) -> EvaluationResult:
    """Evaluates one candidate (path or source text) on one task; see :meth:`Evaluator.evaluate`."""
    secret = options.pop("secret", None)
    with Evaluator(secret=secret, spares=0) as evaluator:
        return evaluator.evaluate(source_or_path, task_id, **options)
