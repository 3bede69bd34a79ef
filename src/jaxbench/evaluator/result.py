"""Statuses, stages and the evaluation-result record (the contract of docs/design.md)."""

from __future__ import annotations

import hashlib
import os
import platform
import re
import sys
import time
from typing import Any

STATUSES = (
    "correct", "incorrect", "no_pallas", "rejected",
    "compile_error", "runtime_error", "timeout", "crashed", "unverified",
)
STAGES = ("static", "trace", "lower", "correct", "time", "recheck")
# Rule codes: which rule a failure broke, carried by `StageFailure` into the result's ``rule``
# (None where no coded rule decided). The taxonomy and the agents' feedback read the code, never
# the message. The outside-work rules are policy (honest work left in XLA, over the glue
# budget), apart from the rules that catch gaming the check.
RULE_NO_KERNEL = "no_kernel"  # no Pallas kernel call in the module
RULE_UNPRICED = "outside_unpriced"  # ops outside kernels the analysis cannot price
RULE_OUTSIDE_FLOPS = "outside_flops"  # XLA's share of the FLOPs over the budget
RULE_OUTSIDE_BYTES = "outside_bytes"  # XLA's share of a data-movement task's bytes over it
RULE_OUTPUT_WITHOUT_KERNEL = "output_without_kernel"  # an output no kernel's result reaches
OUTSIDE_WORK_RULES = frozenset({RULE_UNPRICED, RULE_OUTSIDE_FLOPS, RULE_OUTSIDE_BYTES,
                                RULE_OUTPUT_WITHOUT_KERNEL})
RULES = frozenset({RULE_NO_KERNEL, *OUTSIDE_WORK_RULES})
# Exit status of a tracer whose candidate code acted after it was sealed for its exports.
SEALED_EXIT = 86
# The chips kernels are lowered for when none is attached: JAXBench's TPU v6e, and an H200
# (the parent names the real device in device mode).
CROSS_LOWERING_TPU = "TPU v6 lite"
CROSS_LOWERING_GPU = "NVIDIA H200"
# The XLA flag for processes that only check on the host CPU (the tracers always; the trusted
# runner and the parent where JAX_PLATFORMS=cpu): compiling dominates there (input generators,
# interpret-mode modules, truths, interpreters: each compiled, then run once on small inputs),
# so LLVM's optimizations cost more than they save (measured: about a third less CPU per
# evaluation, docs/measurements.md). Numerics stay IEEE (no fast-math); never set where a
# device computes or anything is timed.
CPU_CHECK_XLA_FLAGS = "--xla_backend_optimization_level=0"


def with_cpu_check_flags(env: dict[str, str] | os._Environ[str]) -> None:
    """Adds :data:`CPU_CHECK_XLA_FLAGS` to ``env``'s XLA_FLAGS unless an optimization level
    is set there already (the user's choice stands)."""
    flags = env.get("XLA_FLAGS", "")
    if "--xla_backend_optimization_level" not in flags:
        env["XLA_FLAGS"] = f"{flags} {CPU_CHECK_XLA_FLAGS}".strip()


class StageFailure(Exception):
    """A candidate failed a stage: carries the status and the stage it stopped at."""

    def __init__(self, status: str, stage: str, message: str, rule: str | None = None) -> None:
        assert status in STATUSES, status
        assert rule is None or rule in RULES, rule
        super().__init__(message)
        self.status = status
        self.stage = stage
        self.message = message
        self.rule = rule


def source_sha256(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def short_error(exc: BaseException, limit: int = 600) -> str:
    """The useful part of an exception: its type and the first lines of its message."""
    text = str(exc).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if "Traceback (most recent call last)" in text:
        # An error raised inside a host callback (the interpreters run kernels that way):
        # the embedded traceback's last exception line is the real cause.
        causes = [ln.strip() for ln in lines if re.match(r"\s*[\w.]+(Error|Exception)\b", ln)]
        if causes:
            lines = [causes[-1]]
    # JAX appends long tracebacks-in-messages; the head says what went wrong.
    head = " | ".join(lines[:4]) if lines else ""
    msg = f"{type(exc).__name__}: {head}" if head else type(exc).__name__
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."


def versions() -> dict[str, Any]:
    """Software and host versions; the worker adds the device it ran on."""
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "host": platform.node(),
        "machine": platform.machine(),
    }
    try:
        import jax
        import jaxlib

        info["jax"] = jax.__version__
        info["jaxlib"] = jaxlib.__version__
    except ImportError:  # pragma: no cover - jax is a dependency
        pass
    from jaxbench._version import __version__

    info["jaxbench"] = __version__
    return info


def new_result(task: str, target: str, mode: str, size: str, source: str) -> dict[str, Any]:
    """A result record with every contract field present (filled in as stages run)."""
    return {
        "type": "evaluation",
        "task": task,
        "target": target,
        "mode": mode,
        "size": size,
        "status": None,
        "stage": None,
        "rule": None,
        "message": "",
        "max_abs_err": None,
        "rel_err": None,
        "t_ref_ms": None,
        "t_kernel_ms": None,
        "speedup": None,
        "compile_s": None,
        "source_sha256": source_sha256(source),
        "stages": {},
        "versions": versions(),
        "started_at": time.time(),
    }
