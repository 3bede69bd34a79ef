"""The failure taxonomy of a run: what each failing evaluation failed on, by rule.

:func:`classify` is a pure function of one evaluation result's ``rule`` code (its ``status``
and ``stage`` only for records without a known code: runs written before rule codes, schema
version 1): ``None`` for a correct evaluation, else one key of :data:`CATEGORIES`. No message
is read, so a kernel whose exception text imitates another failure's message stays in its
own category. The codes and their categories are the evaluator's schema
(``jaxbench.contract``: ``Rule``, ``RULE_CATEGORY``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from jaxbench.contract import Category, EvaluationResult, Status, category_of

C = Category

# key -> (label, one-line meaning), in the order reports list them (earliest stage first).
CATEGORIES: dict[Category, tuple[str, str]] = {
    C.STATIC_POLICY: ("static policy", "rejected before tracing: the source uses something kernels "
                      "may not (an import, builtin, attribute or global statement)"),
    C.SOURCE_ERROR: ("source error", "the file does not parse, imports a module kernels cannot use, "
                     "or defines no top-level kernel()"),
    C.TRACE_ERROR: ("trace error", "tracing kernel(*inputs) raised (a Python or shape error, host "
                    "NumPy on traced values, tracing at another size)"),
    C.SANDBOX_RULE: ("sandbox / export rule", "rejected in the sandbox or by the export checks: host "
                     "callbacks, its own interpret=, patched harness code or JAX rules, the export's "
                     "platform, types or side effects"),
    C.NO_PALLAS: ("no Pallas kernel", "no pallas_call in the trace, or no Pallas kernel call in "
                  "the exported module (a kernel with too little of its work in Pallas is "
                  "`no_pallas` too, filed under outside work by its code)"),
    C.MEMORY_BUDGET: ("VMEM / shared-memory budget", "a kernel's blocks need more on-chip memory "
                      "(TPU VMEM, GPU shared memory) than the chip allows"),
    C.BLOCK_SHAPE: ("block shape", "Pallas refused a BlockSpec: block dims not divisible by "
                    "(8, 128) nor equal to the array's, or a rank or shape mismatch"),
    C.TRITON_RULE: ("Triton rule", "a Triton program rule: tensors of a power-of-two size, at most "
                    "2^20 elements, masked edge blocks"),
    C.GPU_RACE: ("GPU grid race", "two GPU grid programs write the same output location (or the "
                 "rule cannot prove they do not)"),
    C.OUTSIDE_WORK: ("outside work (policy)", "honest work left in XLA over the glue budget: "
                     "ops the analysis cannot price, more than the allowed share of the module's "
                     "FLOPs (or of a data-movement task's bytes), or an output no kernel writes; "
                     "a policy refusal, not a cheat: status `no_pallas` (runs written before "
                     "said `rejected`)"),
    C.COMPILE_ERROR: ("compile / lowering error", "lowering or compiling the kernel failed "
                      "(Pallas, Mosaic, Triton, XLA), or its export does not deserialize"),
    C.RUNTIME_ERROR: ("runtime error", "the compiled kernel raised when run"),
    C.INCORRECT: ("numerical mismatch", "outputs differ from the float32 reference beyond "
                  "atol + rtol, or in shape or dtype"),
    C.UNINITIALISED: ("uninitialised memory", "two runs on the same inputs with different random "
                      "fills of memory never written differ: block padding at an array's edge "
                      "read into a reduction (a pl.cdiv grid whose last block passes an input's "
                      "edge), an output the grid does not cover (blocks that do not divide it), "
                      "or scratch read before it is written"),
    C.NAN_INF: ("NaN / Inf", "outputs hold NaN or Inf (e.g. never written, or read out of bounds)"),
    C.TIMEOUT: (Status.TIMEOUT.value, "no verdict within the time limit"),
    C.CRASHED: (Status.CRASHED.value, "a worker died or ran out of memory, or the evaluator failed on the "
                "kernel"),
    C.UNVERIFIED: (Status.UNVERIFIED.value, "nothing vouches for the kernel: no exportable "
                   "interpret-mode lowering on this host (evaluate it on the chip), a crash of "
                   "one of JAX's tools, or a judge's counter or rule that failed on it"),
    C.OTHER: ("other", "matches no rule above (an unknown status, or a rejection this report "
              "does not know)"),
}


def classify(result: EvaluationResult) -> Category | None:
    """The category of one evaluation (None when it is correct): from its ``rule`` code
    (``status`` and ``stage`` only where the record has no known code)."""
    return category_of(result.status, result.stage, result.rule)


def label(category: str) -> str:
    return CATEGORIES.get(category, (category, ""))[0]


def meaning(category: str) -> str:
    return CATEGORIES.get(category, ("", ""))[1]


def count(results: Iterable[EvaluationResult]) -> dict[str, int]:
    """Failing evaluations per category, in :data:`CATEGORIES` order (categories with none left
    out)."""
    found = Counter(c for c in (classify(r) for r in results) if c is not None)
    return {key: found[key] for key in CATEGORIES if found.get(key)}


__all__ = ["CATEGORIES", "classify", "count", "label", "meaning"]
