"""What the chip surely refuses and what the parent cannot know, checked in the parent from
the judge's response: the chip's features (Mosaic GPU needs a Hopper), Triton's compiler for
the chip's compute capability (where Triton is installed), the warnings for what an estimate
cannot decide (VMEM and shared memory within the margin) and for the tools' own crashes, and
what `lower` proved (``lowering_fidelity``): the chip phase's report (:func:`chip_checked`),
the judge's response taken into it once the checks passed."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxbench.backends.chips import MOSAIC_GPU_FEATURES, capability, chip_or_default, default_chip
from jaxbench.contract import Rule, Stage, StageFailure, Status
from jaxbench.evaluator.parent.judge_client import triton_compiler
from jaxbench.evaluator.parent.reports import ChipChecked, Stages, TritonCompiled
from jaxbench.evaluator.parent.requests import RACE_CHECKS

if TYPE_CHECKING:
    from jaxbench.contract import JudgeResponse
    from jaxbench.contract.records import KernelFigures, ToolFaultRecord
    from jaxbench.evaluator.parent.case import Case


def chip_checked(response: JudgeResponse, case: Case, stages: Stages) -> ChipChecked:
    """The chip phase: what the chip surely refuses (a GPU's features, Triton's compile for
    it), then, once that passed, the judge's response taken (:func:`response_taken`)."""
    gpu = case.target == "gpu"
    checked = ChipChecked(kernel_backend=response.kernel_backend if gpu else None,
                          lowering_fidelity=lowering_fidelity(
                              case.target, case.mode, case.chip, response.kernel_backend)
                          if gpu else None)
    try:
        if gpu:
            require_chip_features(response.kernel_backend, case.chip)
        triton = triton_compiled(response.triton_kernels, case.chip) if (
            gpu and case.mode == "interpret") else None
    except StageFailure as failure:
        return dataclasses.replace(checked, failure=failure.failure)
    smem: tuple[list[dict[str, Any]], list[str]] = ([], [])
    if triton is not None:
        checked = dataclasses.replace(
            checked, triton=triton, warnings=triton.warnings, tool_faults=triton.tool_faults,
            lowering_fidelity=f"{checked.lowering_fidelity}{triton.fidelity_notes}")
        if triton.failure is not None:
            return dataclasses.replace(checked, failure=triton.failure)
        if not triton.decided:  # shared memory the estimate cannot decide: a warning
            smem = uncertain_smem(response.smem_uncertain)
    return response_taken(response, case, stages, dataclasses.replace(
        checked, smem_uncertain=tuple(smem[0]), warnings=(*checked.warnings, *smem[1])))


def response_taken(response: JudgeResponse, case: Case, stages: Stages,
                   checked: ChipChecked) -> ChipChecked:
    """``checked`` with the judge's response taken: its stages and memory figures (noted in
    ``stages``), the warnings it carries (uncertain VMEM, the tools' crashes), the artifacts
    saved (``--save-ir``)."""
    for name, details in response.stages.items():
        stages.note(name, details)
    warnings = list(checked.warnings)
    if isinstance(response.memory, list):
        stages.note(Stage.LOWER, {"memory": response.memory[:64]})
        warnings += uncertain_vmem(response.memory)
    artifacts = save_artifacts(response, Path(case.save_ir)) if case.save_ir is not None else None
    for label in RACE_CHECKS:
        said = getattr(response, label)
        if isinstance(said, str):
            stages.note(Stage.CORRECT, {label: said[:300]})
    fault_warnings, faults = tool_faults(response.tool_faults)
    return dataclasses.replace(
        checked, kernel_backend=response.kernel_backend, warnings=(*warnings, *fault_warnings),
        tool_faults=(*checked.tool_faults, *faults), artifacts=artifacts, responded=True)


def save_artifacts(response: JudgeResponse, directory: Path) -> dict[str, Any]:
    """The jaxpr the judge read and lowered, its kernels' IR as the judge lowered them and the
    module it checked and ran, written to ``directory`` (``--save-ir``): the directory and
    its files."""
    from jaxbench.evaluator.common.artifacts import write_artifacts

    data = {"jaxpr": response.jaxpr, "kernel_ir": response.kernel_ir}
    data.update(response.compiled_artifacts or {})
    data["stablehlo"] = response.stablehlo  # the module the judge checked and ran
    data["structure"] = response.structure
    # the analysis file's figures: the compile's; the timing's come later (never known here)
    extra = {"compile_s": response.compile_s, **dict.fromkeys((
        "t_ref_ms", "t_kernel_ms", "speedup", "roofline_fraction", "peak_flops",
        "peak_bytes_per_s"))}
    return {"dir": str(directory), "files": write_artifacts(data, directory, extra)}


def uncertain_vmem(figures: list[KernelFigures]) -> list[str]:
    """A warning per kernel the judge's VMEM count puts just over its limit, inside the margin
    where the chip's answer is not known (jaxbench.backends.chips.vmem_verdict). ``figures``:
    the response's ``memory``, its types checked when the response was read."""
    return [
        f"VMEM: pallas_call #{f.get('kernel')} at size {f.get('size')!r} needs "
        f"{f.get('vmem_bytes', 0) / 2**20:.2f} MiB, just over its "
        f"{f.get('vmem_limit_bytes', 0) / 2**20:g} MiB limit (by at most 1/32 of it, where "
        "real TPU runs have gone both ways): accepted, but the chip may refuse it; raise "
        "vmem_limit_bytes in pltpu.CompilerParams to be sure (docs/vmem-calibration.md)"
        for f in figures if f.get("vmem_uncertain")]


def tool_faults(faults: list[ToolFaultRecord]) -> tuple[list[str], list[dict[str, str]]]:
    """(warnings, records): a warning and a record per check whose tool crashed inside its own
    code (the judge's :mod:`jaxbench.evaluator.judge.tool_faults`): not the kernel's fault, so
    no verdict from it; the verdict rests on the other checks. ``faults``: the response's
    ``tool_faults``, its types checked when the response was read (anything else is
    ignored)."""
    warnings: list[str] = []
    records: list[dict[str, str]] = []
    for fault in faults if isinstance(faults, list) else []:
        if not isinstance(fault, dict) or "text" not in fault:
            continue
        missed = {"the TPU interpreter": " (its race detection between two simulated cores "
                                         "and shuffled parallel grid did not run: the verdict "
                                         "rests on the interpret-mode trials)",
                  "the Mosaic GPU interpreter": " (its run did not happen)"}.get(
                      fault.get("tool"), "")
        warnings.append(f"tool fault: {fault['text']}{missed}"[:600])
        records.append(
            {k: fault.get(k, "")[:300] for k in ("tool", "error", "frame", "version", "known")})
    return warnings, records


# What an interpret-mode `correct` does not exclude (docs/evaluator.md, threat model).
INTERPRET_RESIDUAL_RISK = (
    "residual risk: the kernel body ran in JAX's interpreter; its chip lowering was checked "
    "(structure, budgets) but not run, so a body that the chip's compiler lowers to something "
    "other than what the interpreter computes is not excluded")


def lowering_fidelity(target: str, mode: str, chip: str | None = None,
                      backend: str | None = None) -> str:
    """What the `lower` stage proved for this target, mode and (once the judge has read it from
    the module) GPU kernel backend (docs/evaluator.md)."""
    chip = chip or default_chip("", target)
    if mode == "device":
        return (f"compiled and run on the {target.upper()} ({chip}; the full {target} compiler "
                "ran)")
    return f"{_interpret_fidelity(target, chip, backend)}; {INTERPRET_RESIDUAL_RISK}"


def _interpret_fidelity(target: str, chip: str, backend: str | None = None) -> str:
    """What cross-lowering on this host proved for ``target`` on ``chip``."""
    if target == "tpu":
        return (f"cross-lowered to Mosaic MLIR for {chip}, plus the VMEM budget at every size "
                "(a count within 1/32 over the limit is a warning: real runs there went both "
                "ways); Mosaic's layout passes and the TPU compiler did not run (jaxlib has no "
                "TPU passes without libtpu)")
    sm = f"sm_{capability(chip_or_default(chip, 'gpu'))}"
    compiled = (f"; Triton's compiler ran for {sm} on this CPU (see triton_compile)"
                if triton_enabled() else f"; Triton's GPU compiler did not run ({triton_off()})")
    triton = (f"cross-lowered to Triton IR for CUDA, judged for {chip} ({sm}): Triton's rules "
              "(power-of-two tensors of at most 2^20 elements, masked edges, shared memory) at "
              f"every size and the grid race rule{compiled}")
    mosaic = (f"cross-lowered to Mosaic GPU for CUDA, judged for {chip} ({sm}): the chip's "
              "features checked (Mosaic GPU needs wgmma and TMA: Hopper or newer); Triton's "
              "rules, the grid race rule and a shared-memory budget do not apply to Mosaic GPU "
              "kernels, and Mosaic GPU's own compiler (its passes and ptxas) did not run on "
              "this CPU")
    kinds = set((backend or "triton").split("+"))
    if kinds == {"mosaic_gpu"}:
        return mosaic
    if "mosaic_gpu" in kinds:
        return f"Triton kernels: {triton}. Mosaic GPU kernels: {mosaic}"
    return triton


def triton_off() -> str:
    """Why Triton's compiler does not run here (where :func:`triton_enabled` is False)."""
    triton_compile = triton_compiler()
    return ("turned off: JAXBENCH_TRITON_COMPILE=0" if triton_compile.available()
            else "no `triton` package")


def triton_enabled() -> bool:
    """Whether GPU kernels are compiled by Triton on this CPU host: the `triton` package is
    installed and JAXBENCH_TRITON_COMPILE is not 0."""
    return triton_compiler().enabled()


def uncertain_smem(figures: list[KernelFigures]) -> tuple[list[dict[str, Any]], list[str]]:
    """(entries, warnings): an entry and a warning per kernel and size whose shared memory the
    judge's estimate puts over the chip's limit while what Triton surely needs fits
    (``smem_uncertain``, from :mod:`jaxbench.evaluator.judge.gpu.triton_rules`), where Triton's own
    compiler did not decide. ``figures``: the response's, its types checked when it was read
    (anything else is ignored)."""
    entries: list[dict[str, Any]] = []
    warnings: list[str] = []
    for f in figures:
        if not (isinstance(f, dict) and f.get("smem_uncertain")):
            continue
        limit = f.get("shared_limit_bytes", 0)
        where = f" ({f['smem_where']})" if f.get("smem_where") else ""
        entries.append(
            {k: f.get(k) for k in ("kernel", "size", "dot_shared_bytes_estimate",
                                   "dot_shared_bytes_lower_bound", "shared_limit_bytes")})
        warnings.append((
            f"smem_uncertain: pallas_call #{f.get('kernel')} at size {f.get('size')!r}: its "
            f"dots' operands need an estimated "
            f"{f.get('dot_shared_bytes_estimate', 0) / 1024:.0f} KiB of shared memory, "
            f"over the chip's {limit / 1024:.0f} KiB, but Triton surely needs only "
            f"{f.get('dot_shared_bytes_lower_bound', 0) / 1024:.0f} KiB{where}: "
            "accepted; Triton's compiler, which decides, did not run here (the `triton` extra, "
            "pip install -e '.[triton]', with JAXBENCH_TRITON_COMPILE not 0), and the chip may "
            "refuse it")[:600])
    return entries, warnings


def triton_compiled(kernels: list[dict[str, Any]] | str | None, chip: str) -> TritonCompiled:
    """Compiles for the chip's compute capability (sm_80 on an A100), where Triton is
    installed, the Triton kernels the trusted runner read (and verified) from the module it
    runs (interpret mode on a host without a GPU); a compiler error or a shared-memory need
    over the chip's limit is a `compile_error` (the report's ``failure``). ``decided`` when
    Triton's compiler checked every kernel (its shared memory then decided)."""
    triton_compile = triton_compiler()
    if isinstance(kernels, str):
        return TritonCompiled(triton_compile=f"skipped: {kernels}"[:300])
    if not kernels:
        return TritonCompiled()
    if not triton_enabled():  # recorded: the setting changes what can refuse the kernel
        return TritonCompiled(triton_compile=f"skipped: {triton_off()}")
    try:
        report = triton_compile.compile_all(kernels, capability(chip_or_default(chip, "gpu")))
    except triton_compile.TritonUnusable as exc:  # the environment's fault: no verdict from it
        return TritonCompiled(
            triton_compile=f"skipped: {exc}"[:300], warnings=(
                f"Triton's compiler did not check this kernel: {exc} (an environment problem, "
                "not the kernel's: see `jaxbench doctor`; reinstall with pip install -e "
                "'.[triton]', or set JAXBENCH_TRITON_COMPILE=0)"[:600],),
            fidelity_notes="; Triton's compiler was unusable here and did not run")
    except Exception as exc:  # noqa: BLE001 - the compiler process crashed or hung on this IR
        raise StageFailure(Status.COMPILE_ERROR, Stage.LOWER,
                           f"Triton's compiler failed on the kernel's IR: {exc}"[:2000],
                           rule=Rule.TRITON_COMPILE) from None
    warnings: list[str] = []
    notes = ""
    if report["not_checked"]:
        names = ", ".join(report["not_checked"])
        warnings.append(
            f"Triton {report['triton_version']} cannot parse the Triton IR this jaxlib emits for "
            f"kernel {names} (the dialects differ): Triton's compiler did not check it; a limit "
            "of the check, not the kernel's fault (jaxlib's own verifier accepted the IR)"
            + (f". {skew}" if (skew := triton_compile.skew(triton_compile.jaxlib_version(),
                                                            report["triton_version"])) else ""))
        notes = (f"; Triton's compiler could not parse the IR of {names} (jaxlib/Triton skew) "
                 "and did not check it")
    faults = report.get("tool_faults") or []
    for fault in faults:  # Triton's own crashes: not the kernel's
        warnings.append(f"tool fault: {fault['text']}; Triton's compiler did not check it"[:600])
    problem = report["problem"]
    return TritonCompiled(
        triton_compile={k: report[k] for k in ("triton_version", "capability", "kernels",
                                               "not_checked")},
        warnings=tuple(warnings), fidelity_notes=notes,
        tool_faults=tuple({k: str(fault.get(k, ""))[:300] for k in ("tool", "error", "frame",
                                                                      "version")}
                          for fault in faults),
        decided=not report["not_checked"] and not faults,
        failure=StageFailure(Status.COMPILE_ERROR, Stage.LOWER, problem[:2000],
                             rule=getattr(problem, "rule", Rule.TRITON_COMPILE)).failure
        if problem else None)


def require_chip_features(backend: str | None, chip: str) -> None:
    """Pallas' Mosaic GPU backend emits Hopper instructions (wgmma, TMA, clusters): a kernel of
    it (``kernel_backend``, read by the judge from the module's kernel calls) cannot run on an
    older GPU, such as the A100 PallasBench is defined for."""
    entry = chip_or_default(chip, "gpu")
    missing = sorted(MOSAIC_GPU_FEATURES - entry.features)
    if backend and "mosaic_gpu" in backend and missing:
        raise StageFailure(
            Status.COMPILE_ERROR, Stage.LOWER,
            f"a Mosaic GPU kernel, judged for {chip} (sm_{capability(entry)}, no "
            f"{' or '.join(missing)}): Pallas' Mosaic GPU backend needs "
            "a Hopper (sm_90) or newer GPU. Write it for Pallas' Triton backend (pallas_call with "
            "compiler_params=jax.experimental.pallas.triton.CompilerParams(...)), or judge it "
            "for a Hopper chip (--chip H200)", rule=Rule.CHIP_FEATURES)
