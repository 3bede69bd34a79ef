"""The evaluation result: one frozen type, one writer (to_event), one reader (read)."""

import dataclasses
import json
import pickle

import pytest

from jaxbench.contract import SCHEMA_VERSION, EvaluationResult, Status

pytestmark = pytest.mark.quick


def _result(**fields):
    return EvaluationResult.start("8p_gemm", "tpu", "interpret", "small", "def kernel(): ...",
                                  versions={"jax": "0.10.2"}, **fields)


def test_the_event_reads_back_as_the_same_result():
    result = _result(stages={"static": {"seconds": 0.1}}, warnings=["w"], tol_fraction=0.5,
                     tolerance={"atol": 0.01, "rtol": 0.01}).replace(status=Status.CORRECT)
    event = json.loads(json.dumps(result.to_event(job="8p_gemm|seed|tpu|x")))
    assert event["type"] == "evaluation" and event["schema"] == SCHEMA_VERSION
    assert event["status"] == "correct" and event["warnings"] == ["w"]
    assert event["job"] == "8p_gemm|seed|tpu|x"
    read = EvaluationResult.read(event)
    assert read.replace(extra={}) == result and read.extra == {"job": "8p_gemm|seed|tpu|x"}
    assert read.to_event() == event  # nothing read is lost on the way back


def test_unset_fields_stay_out_of_the_event_and_the_core_ones_are_always_there():
    event = _result().replace(status=Status.COMPILE_ERROR).to_event()
    for always in ("stage", "rule", "max_abs_err", "speedup", "stages", "versions"):
        assert always in event
    for unset in ("warnings", "review", "debug", "ray_node", "fits", "output"):
        assert unset not in event
    zeros = _result(tol_fraction=0.0, wall_s=0.0, trials=0).to_event()  # a zero is a value
    assert (zeros["tol_fraction"], zeros["wall_s"], zeros["trials"]) == (0.0, 0.0, 0)


def test_a_result_is_frozen_all_the_way_down():
    result = _result(stages={"lower": {"memory": [1, 2]}}, warnings=["w"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.status = Status.CORRECT  # type: ignore[misc]
    with pytest.raises(TypeError):
        result.stages["lower"]["memory"] = []  # type: ignore[index]
    assert isinstance(result.warnings, tuple) and isinstance(result.stages["lower"]["memory"], tuple)


def test_a_result_pickles_as_its_event():  # how a Ray node hands it back
    result = _result(fits={"reference": True}, extra={"job": "8p_gemm|seed|tpu|x"})
    assert pickle.loads(pickle.dumps(result)) == result


def test_old_records_still_read():
    # schema 1: no schema, no rule; a field this version never wrote is kept in extra
    old = {"type": "evaluation", "task": "8p_gemm", "target": "tpu", "mode": "interpret",
           "size": "small", "status": "no_pallas", "stage": "lower", "message": "m",
           "warnings": "not a list", "invented_later": 3}
    result = EvaluationResult.read(old)
    assert (result.schema, result.rule, result.status) == (1, None, "no_pallas")
    assert result.extra == {"warnings": "not a list", "invented_later": 3}
    assert result.warnings == ()


@pytest.mark.parametrize("event", [[], {"task": "8p_gemm"}, {"status": "correct"},
                                   {"task": 1, "status": "correct"}])
def test_what_is_not_a_result_is_refused(event):
    with pytest.raises(ValueError, match="result"):
        EvaluationResult.read(event)


def test_a_field_the_type_does_not_know_cannot_be_built():
    with pytest.raises(TypeError):
        EvaluationResult(task="t", target="tpu", mode="interpret", size="small", status="x",
                         speed=2.0)  # type: ignore[call-arg]
