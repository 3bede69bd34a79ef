"""The run's secret is never on disk: each segment of a run (its start, each resume) holds a
fresh one in memory, commits to it in the manifest and its ``run_start`` event, and reveals it
in the ``run_end`` that closes it (an interrupt's too); reports verify every segment."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from jaxbench.report.data import load_run, secret_verified
from jaxbench.report.html import secret_text
from jaxbench.runs import RunDir, RunError, audit_secret, read_events, verify_secret

CONFIG = {"command": "test"}


def _sha(secret: bytes) -> str:
    return hashlib.sha256(secret).hexdigest()


def _manifest(path: Path) -> dict:
    return json.loads((path / "manifest.json").read_text())


def _assert_nothing_secret_on_disk(path: Path, *secrets: bytes) -> None:
    """No ``.secret`` file, and no file anywhere in the run directory holding a secret (as
    hex, upper or lower case, or as its raw bytes)."""
    assert not (path / ".secret").exists()
    for file in path.rglob("*"):
        if not file.is_file():
            continue
        data = file.read_bytes()
        for secret in secrets:
            assert secret not in data, file
            assert secret.hex().encode() not in data.lower(), file


def _evaluation(task: str = "8p_gemm") -> dict:
    return {"type": "evaluation", "task": task, "status": "correct", "speedup": 1.0,
            "source": "A = 1\n"}


def test_the_secret_is_never_on_disk_while_the_run_is_open(tmp_path):
    run = RunDir.open(tmp_path, CONFIG)
    _assert_nothing_secret_on_disk(tmp_path, run.secret)
    run.append(_evaluation())
    run.keep_source("def kernel(x):\n    return x\n")
    run.record_plan(["a", "b"])
    _assert_nothing_secret_on_disk(tmp_path, run.secret)
    first = run.secret
    resumed = RunDir.open(tmp_path, CONFIG)  # a resume (the first process was killed)
    _assert_nothing_secret_on_disk(tmp_path, first, resumed.secret)
    resumed.append(_evaluation("12p_rmsnorm"))
    _assert_nothing_secret_on_disk(tmp_path, first, resumed.secret)
    resumed.interrupt(signal="SIGINT")  # reveals this segment's secret, in events.jsonl only
    assert not (tmp_path / ".secret").exists()
    again = RunDir.open(tmp_path, CONFIG)
    _assert_nothing_secret_on_disk(tmp_path, first, again.secret)


def test_a_resume_draws_a_fresh_secret_and_commits_to_it(tmp_path):
    run = RunDir.open(tmp_path, CONFIG)
    assert _manifest(tmp_path)["secret_sha256"] == _sha(run.secret)
    run.append(_evaluation())
    run.interrupt(signal="SIGTERM")
    resumed = RunDir.open(tmp_path, CONFIG)
    assert resumed.secret != run.secret
    assert _manifest(tmp_path)["secret_sha256"] == _sha(resumed.secret)
    assert resumed.run_id == run.run_id  # one name for the run across its segments
    starts = [e for e in read_events(tmp_path) if e["type"] == "run_start"]
    assert [s["secret_sha256"] for s in starts] == [_sha(run.secret), _sha(resumed.secret)]
    assert "resumed" not in starts[0] and starts[1]["resumed"] is True
    # The evaluation recorded before the resume stays as it was.
    evaluations = [e for e in read_events(tmp_path) if e["type"] == "evaluation"]
    assert [(e["task"], e["status"]) for e in evaluations] == [("8p_gemm", "correct")]


def test_an_interrupt_reveals_its_segments_secret(tmp_path):
    run = RunDir.open(tmp_path, CONFIG)
    run.interrupt(signal="SIGINT", resume="jaxbench run --out x")
    end = list(read_events(tmp_path))[-1]
    assert end["type"] == "run_end" and end["interrupted"] is True
    assert end["secret"] == run.secret.hex() and end["resume"] == "jaxbench run --out x"
    assert _sha(bytes.fromhex(end["secret"])) == _manifest(tmp_path)["secret_sha256"]
    RunDir.open(tmp_path, CONFIG)  # still resumable


def test_a_finished_run_refuses_to_resume(tmp_path):
    run = RunDir.open(tmp_path, CONFIG)
    run.interrupt(signal="SIGINT")
    RunDir.open(tmp_path, CONFIG).finish(evaluations=0)
    with pytest.raises(RunError, match=r"has ended \(its secret was revealed\); use another --out"):
        RunDir.open(tmp_path, CONFIG)
    # told by events.jsonl, not by a missing file: a stray .secret changes nothing
    (tmp_path / ".secret").write_text(run.secret.hex())
    with pytest.raises(RunError, match="has ended"):
        RunDir.open(tmp_path, CONFIG)
    assert not (tmp_path / ".secret").exists()


def test_two_revealed_segments_verify(tmp_path):
    first = RunDir.open(tmp_path, CONFIG)
    first.append(_evaluation())
    first.interrupt(signal="SIGINT")
    # interrupted: every segment so far is closed and revealed, so all it recorded is auditable
    assert verify_secret(tmp_path) is True and secret_verified(load_run(tmp_path)) is True
    second = RunDir.open(tmp_path, CONFIG)
    assert secret_verified(load_run(tmp_path)) is None  # the second segment is open
    assert "run still open" in secret_text(load_run(tmp_path))
    second.finish()
    assert verify_secret(tmp_path) is True
    run = load_run(tmp_path)
    assert secret_verified(run) is True
    assert audit_secret(run.manifest, read_events(tmp_path)).states == ("verified", "verified")
    assert secret_text(run) == f"sha256 {_sha(second.secret)} (2 segments, all revealed and verified)"


def test_an_open_run_is_not_verified_yet(tmp_path):
    RunDir.open(tmp_path, CONFIG).append(_evaluation())
    run = load_run(tmp_path)
    assert secret_verified(run) is None and not verify_secret(tmp_path)
    assert "run still open: secret not revealed yet" in secret_text(run)
    RunDir.open(tmp_path, CONFIG).interrupt(signal="SIGINT")  # a first segment, revealed
    RunDir.open(tmp_path, CONFIG).append(_evaluation())  # the second: open
    run = load_run(tmp_path)
    assert audit_secret(run.manifest, read_events(tmp_path)).states == (
        "unrevealed", "verified", "open")
    assert secret_verified(run) is False  # the killed first segment stays unverifiable
    other = tmp_path / "other"
    RunDir.open(other, CONFIG).interrupt(signal="SIGINT")
    RunDir.open(other, CONFIG)
    run = load_run(other)
    assert secret_verified(run) is None and not verify_secret(other)
    assert secret_text(run).endswith(
        "(run still open: secret not revealed yet (the earlier segment revealed and verified))")


def test_a_killed_segment_is_never_verified(tmp_path):
    RunDir.open(tmp_path, CONFIG).append(_evaluation())  # then SIGKILL: no run_end
    resumed = RunDir.open(tmp_path, CONFIG)
    resumed.finish()
    run = load_run(tmp_path)
    assert secret_verified(run) is False and verify_secret(tmp_path) is False
    assert audit_secret(run.manifest, read_events(tmp_path)).states == ("unrevealed", "verified")
    assert "segment 1 of 2 never revealed (killed)" in secret_text(run)


def test_a_mismatching_reveal_is_not_verified(tmp_path):
    run = RunDir.open(tmp_path, CONFIG)
    run.secret = bytes(32)  # reveals another secret than the one it committed to
    run.finish()
    data = load_run(tmp_path)
    assert secret_verified(data) is False and verify_secret(tmp_path) is False
    assert "REVEALED SECRET DOES NOT MATCH (segment 1 of 1)" in secret_text(data)
    # a resumed run whose second reveal mismatches
    other = tmp_path / "other"
    first = RunDir.open(other, CONFIG)
    first.interrupt(signal="SIGINT")
    second = RunDir.open(other, CONFIG)
    second.secret = first.secret
    second.finish()
    assert audit_secret(_manifest(other), read_events(other)).states == ("verified", "mismatch")
    assert secret_verified(load_run(other)) is False


def test_an_old_run_directory_with_a_secret_file_resumes_and_loses_the_file(tmp_path):
    """An older version kept the open run's secret in ``.secret`` and wrote no commitment in
    run_start: the file is removed unread, and the resume is a new segment."""
    old = bytes(range(32))
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"config": CONFIG, "created_at": "2024-01-01T00:00:00+0000", "secret_sha256": _sha(old)}))
    (tmp_path / "events.jsonl").write_text(
        json.dumps({"time": 1.0, "type": "run_start"}) + "\n"
        + json.dumps({"time": 2.0, **_evaluation()}) + "\n"
        + json.dumps({"time": 3.0, "type": "run_end", "interrupted": True}) + "\n")
    (tmp_path / ".secret").write_text(old.hex())
    assert secret_verified(load_run(tmp_path)) is None  # interrupted by the old version: open
    run = RunDir.open(tmp_path, CONFIG)
    assert not (tmp_path / ".secret").exists()
    assert run.secret != old
    assert run.run_id == _sha(old)[:16]  # the name the old version gave the run
    assert _manifest(tmp_path)["secret_sha256"] == _sha(run.secret)
    _assert_nothing_secret_on_disk(tmp_path, old, run.secret)
    run.finish()
    # The old segment's secret was never revealed: its evaluations cannot be audited.
    assert audit_secret(_manifest(tmp_path), read_events(tmp_path)).states == (
        "unrevealed", "verified")
    with pytest.raises(RunError, match="has ended"):
        RunDir.open(tmp_path, CONFIG)


def test_an_old_finished_run_still_verifies_and_refuses_to_resume(tmp_path):
    """A run an older version finished: one run_start without a commitment (the manifest's
    counts), a final run_end revealing it, no ``.secret``."""
    old = bytes(range(32))
    (tmp_path / "manifest.json").write_text(json.dumps({"config": CONFIG, "secret_sha256": _sha(old)}))
    (tmp_path / "events.jsonl").write_text(
        json.dumps({"type": "run_start"}) + "\n"
        + json.dumps({"type": "run_end", "interrupted": True}) + "\n"  # Ctrl-C, then resumed
        + json.dumps({"type": "run_end", "secret": old.hex()}) + "\n")
    assert verify_secret(tmp_path) is True and secret_verified(load_run(tmp_path)) is True
    with pytest.raises(RunError, match="has ended"):
        RunDir.open(tmp_path, CONFIG)
    # an old-version directory that still has a .secret left beside its final run_end
    (tmp_path / ".secret").write_text(old.hex())
    with pytest.raises(RunError, match="has ended"):
        RunDir.open(tmp_path, CONFIG)
    assert not (tmp_path / ".secret").exists()


def test_only_a_run_start_with_a_commitment_starts_a_segment(tmp_path):
    """A run_start without ``secret_sha256`` is an older version's, written first; another one
    later (a hand-written or merged log) starts no segment of its own."""
    run = RunDir.open(tmp_path, CONFIG)
    run.append({"type": "run_start"})
    run.finish()
    assert audit_secret(_manifest(tmp_path), read_events(tmp_path)).states == ("verified",)
    assert verify_secret(tmp_path) is True
