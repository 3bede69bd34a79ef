"""On-chip memory budgets read from the exported target modules (trusted side).

The parent hands the runner the target export at every size the task defines; :func:`check`
finds each kernel the chip would compile in those modules (never in anything the untrusted
side reports: :mod:`.custom_calls`) and applies the target's rule to it: for a TPU the VMEM
budget of its Mosaic kernel (:mod:`.tpu.mosaic_vmem`), for a GPU Triton's tensor rules on its
Triton IR (:mod:`.gpu.triton_budgets`); Mosaic GPU kernels are not Triton programs and are
only listed. A kernel that cannot be read is a problem, never a pass. Never imports the
sandbox.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxbench.backends.chips import DEFAULT_GPU, DEFAULT_TPU
from jaxbench.contract import Finding, Rule
from jaxbench.evaluator.judge.custom_calls import (
    MOSAIC_GPU_TARGETS,
    TPU_TARGET,
    TRITON_TARGET,
    Unreadable,
    bindings,
    kernel_calls,
    label,
    plain_context,
    sym,
)
from jaxbench.evaluator.judge.gpu.triton_budgets import triton_kernel
from jaxbench.evaluator.judge.tpu.mosaic_vmem import tpu_kernel

if TYPE_CHECKING:
    from jax.export import Exported

    from jaxbench.contract.records import KernelFigures


# -- every kernel at every size -----------------------------------------------------------------

def check(exported_by_size: dict[str, Exported], platform: str, tpu_kind: str = DEFAULT_TPU,
          gpu_kind: str = DEFAULT_GPU) -> tuple[str, list[KernelFigures]]:
    """The first budget problem over the kernels of the target exports, size by size ('' if
    none; a :class:`~jaxbench.contract.Finding` with its rule code: a module or
    kernel that cannot be read is the platform's memory budget, ``Rule.VMEM_BUDGET`` or
    ``Rule.SMEM_BUDGET``), and the figures per kernel per size (every size, even after a
    problem)."""
    jmlir, ir = bindings()
    budget = Rule.VMEM_BUDGET if platform == "tpu" else Rule.SMEM_BUDGET
    targets = (TPU_TARGET,) if platform == "tpu" else (TRITON_TARGET, *MOSAIC_GPU_TARGETS)
    first = ""
    figures: list[KernelFigures] = []
    for size, exported in exported_by_size.items():
        problem = ""
        try:
            ctx = plain_context(jmlir)
            with ctx:
                module = ir.Module.parse(exported.mlir_module())
                calls = kernel_calls(module, ir, targets)
                if not calls:
                    problem = Finding(f"memory budget at size {size!r}: the {platform} module "
                                      "has no kernel call to check", budget)
                for index, call in calls:
                    target = sym(call, "call_target_name", ir)
                    if target in MOSAIC_GPU_TARGETS:
                        figures.append({"kernel": index, "size": size, "backend": "mosaic_gpu"})
                        continue
                    try:
                        found, numbers = tpu_kernel(call, ir, jmlir, tpu_kind) \
                            if platform == "tpu" else triton_kernel(call, ir, jmlir)
                    except Unreadable as exc:
                        found, numbers = f"cannot check its budget: {exc}", {}
                    figures.append({"kernel": index, "size": size, **numbers})
                    if found and not problem:
                        what = "Triton's rules" if found.startswith("Triton rule") else \
                            "memory budget"
                        problem = Finding(f"{what} at size {size!r}, {label(index)}: {found}",
                                          getattr(found, "rule", budget))
        except Exception as exc:  # noqa: BLE001 - a module the judge cannot read is a problem
            problem = Finding(f"memory budget at size {size!r}: the module cannot be read "
                              f"({type(exc).__name__}: {str(exc)[:200]})", budget)
        first = first or problem
    return first, figures


__all__ = ["DEFAULT_GPU", "DEFAULT_TPU", "check"]
