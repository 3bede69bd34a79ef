"""The scratch one evaluation fills as its phases walk (:class:`ResultFields`), turned into its
:class:`~jaxbench.contract.result.EvaluationResult` once, when the evaluation ends
(:meth:`jaxbench.evaluator.parent.evaluation.Evaluation.run`).

Only the parent's phases and their helpers (``evaluation``, ``untrusted``, ``chip_checks``)
write it; nothing outside the evaluation sees it."""

from __future__ import annotations

from typing import Any, TypedDict


class ResultFields(TypedDict, total=False):
    """The fields of an :class:`~jaxbench.contract.result.EvaluationResult` (docs/design.md, "The
    evaluation result"), each as it is found, in its mutable form: lists where the result
    keeps tuples, dicts where it keeps read-only mappings. Which are set when is the phases'
    business; the result's own defaults stand for the rest."""

    task: str
    target: str
    mode: str
    size: str
    status: str
    stage: str | None
    rule: str | None
    message: str
    max_abs_err: float | None
    rel_err: float | None
    t_ref_ms: float | None
    t_kernel_ms: float | None
    speedup: float | None
    compile_s: float | None
    source_sha256: str
    stages: dict[str, dict[str, Any]]  # stage or step -> its details (seconds, notes, figures)
    versions: dict[str, Any]
    started_at: float
    kernel_file: str | None
    judged_on: str | None
    isolation: str | None
    sealed: str | None
    kernel_backend: str | None
    timing_method: str | None
    chip: str | None
    lowering_fidelity: str
    timeout_s: float | None
    trial_nonce: str | None
    device_kind: str  # set only from a response that names it
    backend: str  # likewise
    structure: dict[str, Any] | None
    tolerance: dict[str, float] | None
    tol_fraction: float | None
    roofline_fraction: float | None
    peak_flops: float | None
    peak_bytes_per_s: float | None
    trials: int | None
    fits: dict[str, Any] | None
    wall_s: float
    spans: dict[str, float] | None
    warnings: list[str]
    review: str | None
    tool_faults: list[dict[str, str]]
    smem_uncertain: list[dict[str, Any]]
    triton_compile: dict[str, Any] | str  # Triton's compile for the chip: its report, or why not
    candidate_frames: list[str]
    output: str | None
    artifacts: dict[str, str | list[str]] | None  # the --save-ir directory and its files
    debug: bool
