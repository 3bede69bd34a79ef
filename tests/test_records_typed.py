"""Records check themselves (issue 56, item 2): ``Record.from_dict`` checks every field against
its declared type, the judge's response has real types, and the tracer writes its status as
its record."""

from __future__ import annotations

import json
import typing

import pytest

from jaxbench.contract import (
    JudgeRequest,
    JudgeResponse,
    RecordError,
    Rule,
    Stage,
    Status,
    TracerJob,
    TracerStatus,
)
from jaxbench.contract.records import KernelFigures, ToolFaultRecord


def _response() -> JudgeResponse:
    return JudgeResponse(
        status="ran", stages={"lower": {"seconds": 0.5, "interpret_export_error": "none"}},
        budget_rule=Rule.VMEM_BUDGET, budget_problem="over",
        trials=[{"label": "trial0", "key": [1, 2], "leaves": [{"shape": [8], "dtype": "f32"}]}],
        timing={"ref_s": [0.1, 0.2], "kernel_s": [0.05, 1], "input_sets": 3, "warmup_rounds": 1,
                "device": {"ref_s": [0.1], "kernel_s": [0.05], "events": 4, "source": "xprof"}},
        memory=[{"kernel": 0, "size": "small", "vmem_bytes": 1 << 20, "vmem_limit_bytes": 1 << 24,
                 "vmem_uncertain": False, "grid": [2, 4], "name": "k"},
                {"kernel": None, "size": "large", "grid": "dynamic"}],
        smem_uncertain=[{"kernel": 1, "size": "small", "smem_uncertain": True,
                         "shared_limit_bytes": 1024, "smem_where": "k.py:3"}],
        tool_faults=[{"tool": "t", "error": "e", "frame": "f", "version": "v", "known": "",
                      "text": "x"}],
        structure={"kernel_calls": 1, "outside_flops": 0, "custom_calls": {"tpu_custom_call": 1},
                   "outside_ops": {"dot": 2.0}},
        triton_kernels="reading the Triton IR failed", kernel_ir="ir", compile_s=1.5,
        compiled_artifacts={"hlo": "text", "cost": {"flops": 2.0}},
        spans={"read": 0.1}, fits={"reference": True, "reference_bytes": None,
                                   "available_bytes": 16, "reason": "", "truth_on": "chip"},
        verdicts={"trial0": {"max_abs_err": 0.0, "rel_err": 0, "tol_fraction": 0.1,
                             "key": [1, 2]}})


def _records() -> list[typing.Any]:
    return [
        _response(),
        JudgeResponse(status=Status.COMPILE_ERROR, stage=Stage.LOWER, rule=Rule.LOWERING,
                      message="refused"),
        JudgeRequest(dir="/tmp/x", task="t", size="small", platform="tpu", target="tpu",
                     mode="interpret", trial_keys=[[1, 2]], recheck_keys=[], task_file=("p", "h"),
                     tpu_interpreter_key=[3, 4], chip={"tpu": "TPU v5e"},
                     timing={"min_reps": 5, "budget_s": 2.5}, timing_keys=[[5, 6]]),
        TracerJob(source="x", filename="k.py", task="t", size="small", target="tpu",
                  platform="tpu", mode="interpret", specs=[([8, 128], "float32")],
                  size_specs={"small": [([8, 128], "float32")]}, memory_bytes=1 << 30,
                  fallback_keys=[[1, 2]]),
        TracerStatus(status=Status.REJECTED, stage=Stage.TRACE, rule=Rule.SANDBOX, message="m",
                     stages={"trace": {"seconds": 0.2}}, info={"in_kernel": True},
                     isolation="seccomp", frames=["k.py:3 in kernel: x"],
                     probe=[{"label": "untrusted0"}]),
        TracerStatus(),
    ]


@pytest.mark.parametrize("record", _records(), ids=lambda r: type(r).__name__)
def test_a_good_record_round_trips(record):
    assert type(record).from_dict(record.to_dict()) == record
    # through JSON too (a tuple comes back a list, an enum its string: equal either way)
    again = type(record).from_dict(json.loads(json.dumps(record.to_dict())))
    assert again.to_dict() == json.loads(json.dumps(record.to_dict()))


@pytest.mark.parametrize("field, value, words", [
    ("status", 1, "int 1"),  # an int status
    ("status", "bogus", "'bogus'"),
    ("stage", "nowhere", "not one of Stage's values"),  # an enum
    ("rule", 3, "not one of Rule's values"),
    ("budget_rule", "made_up", "Rule"),
    ("trials", {"label": "trial0"}, "not a list"),  # a list
    ("tool_faults", [{"tool": 1}], "[0]: tool fault record 'tool': int 1, not str"),
    ("spans", {"read": "fast"}, "['read']: str 'fast', not float"),  # a dict
    ("spans", {"read": True}, "bool True, not float"),  # a bool is no number
    ("stages", {"lower": {"seconds": "1"}}, "stage details 'seconds'"),  # a TypedDict's key
    ("verdicts", {"trial0": {"max_abs_err": 0.0, "rel_err": 0.0}},
     "without its key 'tol_fraction'"),
    ("timing", {"ref_s": [1.0], "kernel_s": [1.0], "input_sets": 1, "warmup_rounds": 1,
                "device": {"events": 1.5}}, "device samples 'events': float 1.5, not int"),
    ("memory", [{"kernel": "0"}], "[0]: kernel figures 'kernel'"),  # an optional
    ("compile_s", "1.0", "not float"),
    ("fits", [], "not a chip fits"),
    ("kernel_ir", ["ir"], "kernel_ir"),
    ("retire", 1, "int 1, not bool"),
])
def test_judge_response_refuses_a_wrongly_typed_field(field, value, words):
    with pytest.raises(RecordError) as refused:
        JudgeResponse.from_dict({"status": "ran", field: value})
    text = str(refused.value)
    assert text.startswith(f"JudgeResponse.{field}: ") and words in text, text


def test_the_other_records_refuse_wrong_types_too():
    with pytest.raises(RecordError, match=r"JudgeRequest.task_file: 3 items, not 2"):
        JudgeRequest.from_dict({"dir": "d", "task": "t", "size": "s", "platform": "tpu",
                                "target": "tpu", "mode": "device", "trial_keys": [],
                                "recheck_keys": [], "task_file": ["a", "b", "c"]})
    with pytest.raises(RecordError, match=r"TracerJob.specs: \[0\]: \[0\]: \[1\]: str"):
        TracerJob.from_dict({"source": "", "filename": "", "task": "", "size": "",
                             "target": "", "platform": "", "mode": "", "size_specs": {},
                             "memory_bytes": 1, "specs": [[[8, "x"], "f32"]]})
    with pytest.raises(RecordError, match=r"TracerStatus.frames: \[1\]: int"):
        TracerStatus.from_dict({"frames": ["a", 2]})
    with pytest.raises(RecordError, match=r"TracerStatus.status: .*'ran'"):
        TracerStatus.from_dict({"status": "ran"})  # the runner's word, not the tracer's


def test_the_judges_figures_and_the_contracts_keep_the_same_keys():
    """The judge's memory figures are the contract's record itself; its tool faults carry the
    contract's keys."""
    from jaxbench.evaluator.judge import memory_rules, tool_faults

    assert memory_rules.KernelFigures is KernelFigures
    fault = tool_faults.ToolFault("tool", "error", "frame", "version", "")
    assert set(fault.as_dict()) == set(typing.get_type_hints(ToolFaultRecord))


def test_the_tracers_status_is_its_record(tmp_path):
    """The tracer's own outbox (the code path that writes status.json) writes a record the
    parent reads as a TracerStatus, through every change it makes to it."""
    from jaxbench.evaluator.parent.untrusted import read_untrusted_status
    from jaxbench.evaluator.sandbox.tracer import STATUS, Outbox, candidate_frames

    outbox = Outbox(tmp_path)
    outbox.status.isolation = "namespaces"
    outbox.flush()
    written = [json.loads((tmp_path / STATUS).read_text())]
    outbox.stage("trace", 0.123456, bytes=10)
    outbox.status.info["in_kernel"] = True
    try:
        raise ValueError("boom")
    except ValueError as exc:
        outbox.status.frames = candidate_frames(exc, __file__, open(__file__).read())
    outbox.fail(Status.COMPILE_ERROR, Stage.TRACE, "boom", Rule.TRACE_ERROR)
    written.append(json.loads((tmp_path / STATUS).read_text()))
    records = [TracerStatus.from_dict(w) for w in written]
    assert records[0].status == "running" and records[0].isolation == "namespaces"
    last = records[-1]
    assert (last.status, last.stage, last.rule) == ("compile_error", "trace", "trace_error")
    assert last.stages == {"trace": {"seconds": 0.1235, "bytes": 10}}
    assert last.info == {"in_kernel": True} and last.frames
    assert read_untrusted_status(tmp_path) == last


def test_a_forged_tracer_status_keeps_only_its_well_typed_fields(tmp_path):
    """The tracer's record is its word: a field of another type (or unknown) is dropped and
    left at its default, never the whole record refused (a failure it claims still counts)."""
    from jaxbench.evaluator.parent.untrusted import read_untrusted_status

    (tmp_path / "status.json").write_text(json.dumps({
        "status": "compile_error", "stage": "trace", "message": "forged", "rule": "made_up",
        "frames": "not a list", "speedup": 50.0, "stages": {"trace": {"seconds": 0.5}}}))
    status = read_untrusted_status(tmp_path)
    assert isinstance(status, TracerStatus)
    assert (status.status, status.stage, status.message) == ("compile_error", "trace", "forged")
    assert status.rule is None and status.frames == [] and "speedup" not in status.to_dict()
    assert status.stages == {"trace": {"seconds": 0.5}}
    (tmp_path / "status.json").write_bytes(b"[1, 2")
    assert read_untrusted_status(tmp_path) == TracerStatus()
