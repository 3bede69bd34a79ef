"""The contract every package shares: what an evaluation's verdict is made of and what crosses a
process or package boundary (docs/design.md).

- :mod:`.codes`: statuses, stages, failure categories and rule codes as enums, with their
  tables (each rule's category, the status ranking, the policy rules, the rules the tracer may
  report), the processes' progress words and the record fields spelled like a status;
- :mod:`.records`: a phase's :class:`Failure`, :class:`StageFailure`, a rule's
  :class:`Finding`, one evaluation's :class:`Settings`, the typed records between the
  evaluator's processes and :data:`SCHEMA_VERSION`;
- :mod:`.result`: one evaluation's :class:`EvaluationResult`, frozen, with the one writer
  and reader of its JSON (the ``evaluation`` event).

The evaluator, the agents, ``serve``, the runs, the reports and the exports import these names
from here. The contract imports nothing but the standard library and itself
(tests/test_architecture.py): no process's code, no JAX, and no fact of the host it runs on
(the chips kernels are lowered for, XLA's flags and the software versions live with the code
that uses them).
"""

from __future__ import annotations

from jaxbench.contract.codes import (
    COMPILED_STAGES,
    FIELD_CORRECT,
    FIELD_NO_KERNEL,
    FIELD_OUTSIDE_FLOPS,
    FIELD_TIME,
    MODES,
    POLICY_RULES,
    POLICY_STATUS,
    RAN,
    RULE_CATEGORY,
    RULES,
    RUNNING,
    STAGES,
    STATUS_RANKING,
    STATUSES,
    TARGETS,
    TRACED,
    TRACER_RULES,
    Category,
    Mode,
    Rule,
    Stage,
    Status,
    SubmissionState,
    Target,
    category_of,
    status_rank,
)
from jaxbench.contract.records import (
    SCHEMA_VERSION,
    Failure,
    Finding,
    JudgeRequest,
    JudgeResponse,
    Record,
    RecordError,
    Settings,
    StageFailure,
    TracerJob,
    TracerStatus,
    source_sha256,
)
from jaxbench.contract.result import EvaluationResult

__all__ = [
    "COMPILED_STAGES",
    "MODES",
    "TARGETS",
    "Mode",
    "SubmissionState",
    "Target",
    "FIELD_CORRECT",
    "FIELD_NO_KERNEL",
    "FIELD_OUTSIDE_FLOPS",
    "FIELD_TIME",
    "POLICY_RULES",
    "POLICY_STATUS",
    "RAN",
    "RULES",
    "RULE_CATEGORY",
    "RUNNING",
    "SCHEMA_VERSION",
    "STAGES",
    "STATUSES",
    "STATUS_RANKING",
    "TRACED",
    "TRACER_RULES",
    "Category",
    "Failure",
    "Finding",
    "JudgeRequest",
    "JudgeResponse",
    "Record",
    "RecordError",
    "Rule",
    "Settings",
    "Stage",
    "StageFailure",
    "Status",
    "TracerJob",
    "TracerStatus",
    "EvaluationResult",
    "category_of",
    "source_sha256",
    "status_rank",
]
