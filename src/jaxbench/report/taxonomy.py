"""The failure taxonomy of a run: what each failing evaluation failed on, by stage and by rule.

:func:`classify` is a pure function of one evaluation event's ``status``, ``stage`` and
``message`` (nothing else is read): ``None`` for a correct evaluation, else one key of
:data:`CATEGORIES`. The message patterns are the evaluator's own texts (its ``StageFailure``
messages in the evaluator
``evaluator/judge/rules.py``, ``evaluator/judge/budgets.py``, ``evaluator/judge/runner.py``,
``evaluator/judge/triton_compile.py`` and the sandbox's ``tracer.py``, ``memory_rules.py``,
``triton_rules.py``, ``gpu_rules.py``) and the Pallas lowering errors they quote.

The rule a message names decides first (a VMEM overrun reported as a lowering error is a
budget failure, a GPU race reported as ``incorrect`` is a race); then the status and the
stage decide. A status whose category depends on the message (``rejected`` after the static
checks) and any unknown status land in ``other``: never guessed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from jaxbench.evaluator.common.schema import OUTSIDE_WORK_RULES, RULE_NO_KERNEL

# key -> (label, one-line meaning), in the order reports list them (earliest stage first).
CATEGORIES: dict[str, tuple[str, str]] = {
    "static_policy": ("static policy", "rejected before tracing: the source uses something kernels "
                      "may not (an import, builtin, attribute or global statement)"),
    "source_error": ("source error", "the file does not parse, imports a module kernels cannot use, "
                     "or defines no top-level kernel()"),
    "trace_error": ("trace error", "tracing kernel(*inputs) raised (a Python or shape error, host "
                    "NumPy on traced values, tracing at another size)"),
    "sandbox_rule": ("sandbox / export rule", "rejected in the sandbox or by the export checks: host "
                     "callbacks, its own interpret=, patched harness code or JAX rules, the export's "
                     "platform, types or side effects"),
    "no_pallas": ("no Pallas kernel", "no pallas_call in the trace, or no Pallas kernel call in "
                  "the exported module"),
    "memory_budget": ("VMEM / shared-memory budget", "a kernel's blocks need more on-chip memory "
                      "(TPU VMEM, GPU shared memory) than the chip allows"),
    "block_shape": ("block shape", "Pallas refused a BlockSpec: block dims not divisible by "
                    "(8, 128) nor equal to the array's, or a rank or shape mismatch"),
    "triton_rule": ("Triton rule", "a Triton program rule: tensors of a power-of-two size, at most "
                    "2^20 elements, masked edge blocks"),
    "gpu_race": ("GPU grid race", "two GPU grid programs write the same output location (or the "
                 "rule cannot prove they do not)"),
    "outside_work": ("outside work (policy)", "honest work left in XLA over the glue budget: "
                     "ops the analysis cannot price, more than the allowed share of the module's "
                     "FLOPs (or of a data-movement task's bytes), or an output no kernel writes; "
                     "a policy refusal, not a cheat"),
    "compile_error": ("compile / lowering error", "lowering or compiling the kernel failed "
                      "(Pallas, Mosaic, Triton, XLA), or its export does not deserialize"),
    "runtime_error": ("runtime error", "the compiled kernel raised when run"),
    "incorrect": ("numerical mismatch", "outputs differ from the float32 reference beyond "
                  "atol + rtol, or in shape or dtype"),
    "nan_inf": ("NaN / Inf", "outputs hold NaN or Inf (e.g. never written, or read out of bounds)"),
    "timeout": ("timeout", "no verdict within the time limit"),
    "crashed": ("crashed", "a worker died or ran out of memory, or the evaluator failed on the "
                "kernel"),
    "unverified": ("unverified", "no exportable interpret-mode lowering: nothing vouches for the "
                   "outputs on this host (evaluate it on the chip)"),
    "other": ("other", "matches no rule above (an unknown status, or a rejection this report "
              "does not know)"),
}

# (category, pattern): the rule a message names, tried in this order before the status decides.
_PATTERNS = (
    # gpu_rules.parallel_write_conflict, reported by the tracer as "GPU race rule: ..."
    ("gpu_race", r"GPU race rule:|cannot prove the GPU writes race-free|grid programs .{1,80} both "
                 r"write"),
    # memory_rules.tpu_vmem / budgets.tpu_kernel ("memory budget at size ..."), Triton's
    # shared_memory rule, triton_compile's launch check, Mosaic's and XLA's own out-of-memory
    ("memory_budget", r"memory budget at size|MiB of VMEM on|Triton rule shared_memory|bytes of shared "
                      r"memory, over|out of shared memory|ScopedVmemOom|memory space vmem"),
    # triton_rules (max_elements, power_of_two, edge_mask), budgets.triton_kernel, the Triton
    # dialect's verifier, Pallas' Triton lowering
    ("triton_rule", r"Triton rule \w+|Triton's rules at size|Triton IR fails verification|Pallas Triton "
                    r"lowering currently requires"),
    # judge/rules.check_target
    ("outside_work", r"work outside pallas_call|counted as heavy"),
    # Pallas' BlockSpec checks (jax/_src/pallas/core.py, mosaic/lowering.py)
    ("block_shape", r"block shape|block_shape|divisible by 8 and 128|Block spec for|BlockSpec"),
    # compare.check_outputs
    ("nan_inf", r"NaN/Inf"),
)
_RULES = tuple((key, re.compile(pattern, re.IGNORECASE)) for key, pattern in _PATTERNS)
# Rejections after the static checks, by the sandbox (tracer, guards, isolation) or the judge.
_SANDBOX = re.compile(
    r"^sandbox|the kernel patched harness code|host callback|passes interpret=|platform-dependent "
    r"code|primitives JAX does not define|changed JAX's rules|objects of its own classes|after the "
    r"tracer was sealed|export is for|export spans|export has side effects|export takes|holds custom "
    r"calls|kernel regions|named like a kernel region|differ outside kernels|cannot be analysed|do "
    r"not match their layout", re.IGNORECASE)

# sandbox/tracer.py: an exception tracing the kernel at the task's other sizes (a wrong-target
# hint may come first).
_OTHER_SIZE = re.compile(r"(^|; )tracing at size '")


# Rule codes (``evaluator/common/schema.py``) -> category: decided by the code, whatever the message.
_RULE_CATEGORIES = {**{rule: "outside_work" for rule in OUTSIDE_WORK_RULES},
                    RULE_NO_KERNEL: "no_pallas"}


def classify(event: dict[str, Any]) -> str | None:
    """The category of one evaluation event (None when it is correct); from its ``status``,
    ``stage``, ``rule`` and ``message`` only. A rule code decides first; the message patterns
    are for rules that have no code yet and for runs written before codes existed."""
    status, stage = event.get("status"), event.get("stage")
    message = str(event.get("message") or "")
    if status == "correct":
        return None
    rule = event.get("rule")
    if isinstance(rule, str) and rule in _RULE_CATEGORIES:
        return _RULE_CATEGORIES[rule]
    if status in ("timeout", "unverified", "no_pallas"):
        return status
    if stage == "static" and status in ("rejected", "compile_error"):  # evaluator/parent/static.py
        return "static_policy" if status == "rejected" else "source_error"
    for key, pattern in _RULES:
        if pattern.search(message):
            return key
    if status == "rejected":
        return "sandbox_rule" if _SANDBOX.search(message) else "other"
    if status == "compile_error":  # tracing at the task's other sizes is reported at "lower"
        return "trace_error" if stage == "trace" or _OTHER_SIZE.search(message) else "compile_error"
    if status in ("incorrect", "runtime_error", "crashed"):
        return status
    return "other"


def label(category: str) -> str:
    return CATEGORIES.get(category, (category, ""))[0]


def meaning(category: str) -> str:
    return CATEGORIES.get(category, ("", ""))[1]


def count(events: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Failing evaluations per category, in :data:`CATEGORIES` order (categories with none left
    out)."""
    found = Counter(c for c in (classify(e) for e in events) if c is not None)
    return {key: found[key] for key in CATEGORIES if found.get(key)}


__all__ = ["CATEGORIES", "classify", "count", "label", "meaning"]
