"""The contract's codes (jaxbench.contract.codes) are the one place statuses, stages and rule
codes are spelled: read from the source, every other module names them through the enums; and
the contract's records refuse what does not fit them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from jaxbench.contract import (
    RULE_CATEGORY,
    RULES,
    STAGES,
    STATUSES,
    Category,
    Rule,
    Stage,
    StageFailure,
    Status,
    category_of,
)

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "jaxbench"
CODES = PACKAGE / "contract" / "codes.py"
SPELLED = {str(v) for v in (*STATUSES, *STAGES, *RULES)}
# The comment a line carries when its word only looks like a status, stage or rule (a module
# named "time" in the static policy's lists).
OTHER_MEANING = "# other meaning"


def literals_in(path: Path) -> list[str]:
    """``line: 'value'`` for every string constant in ``path`` that spells a status, a stage or
    a rule code, unless its line says it has another meaning (docstrings never match: a whole
    docstring is never one word)."""
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    # a piece of an f-string (f"recheck{i}") is formatted text, not a value spelled
    pieces = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
              for v in node.values}
    return [f"{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value in SPELLED and id(node) not in pieces
            and OTHER_MEANING not in lines[node.lineno - 1]]


def literals(path: Path) -> list[str]:
    return [f"{path.relative_to(PACKAGE.parent)}:{hit}" for hit in literals_in(path)]


def test_no_module_outside_the_contracts_codes_spells_a_status_stage_or_rule():
    assert CODES.exists()
    offenders = [hit for path in sorted(PACKAGE.rglob("*.py"))
                 if path != CODES and "tasks" not in path.relative_to(PACKAGE).parts
                 for hit in literals(path)]
    assert offenders == [], "\n".join(offenders[:80]) + f"\n({len(offenders)} in all)"


def test_the_literal_reader_sees_a_spelled_status(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('x = {"status": "correct"}\nif stage == "lower":\n    pass\n'
                   'ALLOWED = ("time", "json")  # other meaning: module names\n'
                   'y = f"{stage} correct"\nz = f"recheck{i}"\n')
    assert literals_in(bad) == ["1: 'correct'", "2: 'lower'"]


def test_every_rule_has_one_category_and_every_category_but_other_a_rule():
    assert set(RULE_CATEGORY) == set(Rule)
    assert set(RULE_CATEGORY.values()) == set(Category) - {Category.OTHER}


@pytest.mark.parametrize("rule", list(Rule))
def test_a_coded_failure_is_placed_by_its_code_whatever_its_message(rule):
    """The category comes from the code alone: the status and stage a failure carries do not
    move it, and no message is read."""
    for status in Status:
        for stage in Stage:
            if status is not Status.CORRECT:
                assert category_of(status, stage, rule) is RULE_CATEGORY[rule]


def test_an_uncoded_record_is_placed_by_status_and_stage_only():
    assert category_of(Status.CORRECT, Stage.CORRECT, None) is None
    assert category_of(Status.REJECTED, Stage.STATIC, None) is Category.STATIC_POLICY
    assert category_of(Status.COMPILE_ERROR, Stage.STATIC, None) is Category.SOURCE_ERROR
    assert category_of(Status.COMPILE_ERROR, Stage.TRACE, None) is Category.TRACE_ERROR
    assert category_of(Status.REJECTED, Stage.TRACE, None) is Category.OTHER
    assert category_of(Status.INCORRECT, Stage.CORRECT, "not_a_rule") is Category.INCORRECT
    assert category_of("made_up", Stage.CORRECT, None) is Category.OTHER


def test_stage_failure_takes_strings_and_keeps_enums():
    failure = StageFailure("rejected", "lower", "m", rule="outside_flops")
    assert failure.status is Status.REJECTED and failure.stage is Stage.LOWER
    assert failure.rule is Rule.OUTSIDE_FLOPS
    with pytest.raises(ValueError):
        StageFailure("fine", "lower", "m")


DESIGN = PACKAGE.parents[1] / "docs" / "design.md"


def test_the_docs_list_every_status_and_every_rule_code_with_its_category():
    import re

    text = DESIGN.read_text()
    statuses = text.split("## Statuses", 1)[1].split("##", 1)[0]
    listed = re.findall(r"`([a-z_]+)`", statuses.split(".", 1)[0])
    assert listed == [str(s) for s in Status]
    table = text.split("## Rule codes", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| ([a-z_]+) \|", table, re.MULTILINE))
    assert rows == {str(rule): str(RULE_CATEGORY[rule]) for rule in Rule}


def test_every_stage_failure_the_evaluator_raises_names_its_rule():
    """``StageFailure(status, stage, message, rule=...)``: a failure without its code would be
    filed by status and stage alone."""
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(
                    node.func, "attr", None)) == "StageFailure":
                if len(node.args) < 4 and not any(k.arg == "rule" for k in node.keywords):
                    missing.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert missing == []


def test_a_record_refuses_unknown_and_missing_fields_and_wrong_types():
    from jaxbench.contract import JudgeResponse, RecordError, TracerJob, TracerStatus

    job = TracerJob(source="def kernel(x): ...", filename="k.py", task="8p_gemm", size="small",
                    target="tpu", platform="tpu", mode="interpret", specs=[], size_specs={},
                    memory_bytes=1 << 30)
    assert TracerJob.from_dict(job.to_dict()) == job
    with pytest.raises(RecordError, match="unknown field"):
        TracerJob.from_dict({**job.to_dict(), "out_dir": "/tmp/x"})
    with pytest.raises(RecordError, match="missing field"):
        TracerJob.from_dict({k: v for k, v in job.to_dict().items() if k != "source"})
    with pytest.raises(RecordError, match="stages"):
        TracerStatus.from_dict({"status": "traced", "stages": ["not", "a", "dict"]})
    with pytest.raises(RecordError, match="not an object"):
        JudgeResponse.from_dict(["ran"])
    assert JudgeResponse.from_dict({"status": "ran", "trials": []}).status == "ran"


def test_mode_and_target_are_resolved_to_enums_once_at_the_settings():
    """A caller's mode and target (CLI option, HTTP body, an agent's run) become the contract's
    enums when the settings are made; another name is refused there, naming the choices."""
    from jaxbench.contract import Mode, Settings, Target

    settings = Settings.of(mode="device", target="gpu")
    assert settings.mode is Mode.DEVICE and settings.target is Target.GPU
    assert Settings().mode is Mode.AUTO and Settings().target is None
    for name, value in (("mode", "gpu"), ("target", "cuda")):
        with pytest.raises(ValueError, match=f"unknown {name} '{value}'; use "):
            Settings.of(**{name: value})
