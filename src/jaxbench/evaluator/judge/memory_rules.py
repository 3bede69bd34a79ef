"""On-chip memory budgets per ``pallas_call``, from a trace alone (untrusted side: add-only).

Tracing is abstract and cheap at any size, so every size the task defines is traced and each
kernel of each is checked by its target's rule: for a TPU the VMEM its pipelined blocks and
scratch need (:mod:`.tpu.traced_vmem`), for a GPU Triton's rules on the kernel body's tensors
(:func:`.gpu.triton_rules.gpu_blocks`). The exported modules are checked again by the same
rules where they are read (:mod:`.budgets`).
"""

from __future__ import annotations

from typing import Any

from jaxbench.contract import Finding

# one kernel's memory figures: the record the runner's response carries
from jaxbench.contract.records import KernelFigures
from jaxbench.evaluator.judge.gpu.triton_rules import gpu_blocks
from jaxbench.evaluator.judge.tpu.traced_vmem import tpu_vmem


def check(closed: Any, target: str, size: str, device_kind: str, gpu_kind: str = "NVIDIA H200",
          locate: Any = None, faults: list[BaseException] | None = None
          ) -> tuple[str, list[KernelFigures]]:
    """The first budget problem among the kernels of a trace at ``size`` ('' if none; a
    :class:`~jaxbench.contract.Finding` with its rule code), and the per-kernel
    figures. A kernel the estimate fails on gets no figure and no verdict; the exception is
    added to ``faults`` (a bug of jaxbench's own code propagates:
    :func:`jaxbench.evaluator.judge.tool_faults.harness_bug`)."""
    from jaxbench.evaluator.judge.exporting import scan
    from jaxbench.evaluator.judge.tool_faults import harness_bug

    figures: list[KernelFigures] = []
    for index, eqn in enumerate(scan(closed).kernel_eqns):
        if eqn.primitive.name != "pallas_call":
            continue
        try:
            problem, numbers = tpu_vmem(eqn, device_kind) if target == "tpu" else \
                gpu_blocks(eqn, gpu_kind, locate)
        except Exception as exc:  # noqa: BLE001 - an unusual grid spec: no figure, no verdict
            if harness_bug(exc):
                raise
            if faults is not None:
                faults.append(exc)
            continue
        figures.append({"kernel": index, "size": size, **numbers})
        if problem:
            what = "Triton's rules" if problem.startswith("Triton rule") else "memory budget"
            return Finding(f"{what} at size {size!r}, pallas_call #{index}: {problem}",
                           problem.rule), figures
    return "", figures
