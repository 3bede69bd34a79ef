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
from jaxbench.runs import Replay, RunDir, RunError, audit_secret, read_events, verify_secret

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


def _ended(path: Path) -> RunDir:
    """A run of one segment, ended: its secret revealed."""
    run = RunDir.open(path, CONFIG)
    run.append(_evaluation())
    run.finish(evaluations=1)
    return run


def test_a_replay_draws_the_secret_the_ended_run_revealed(tmp_path):
    """`jaxbench run --replay DIR`: the same secret, so the same trial keys and inputs, and the
    run says so in its manifest and its run_start; its reveal verifies like any other."""
    from jaxbench.evaluator.parent.compare import derive_keys

    source = _ended(tmp_path / "a")
    replay = RunDir.open(tmp_path / "b", CONFIG, replay=Replay.of(tmp_path / "a"))
    fresh = RunDir.open(tmp_path / "c", CONFIG)
    assert replay.secret == source.secret != fresh.secret
    for purpose in ("trial", "timing"):
        assert derive_keys(replay.secret, "12p_rmsnorm", "small", 3, purpose) == \
            derive_keys(source.secret, "12p_rmsnorm", "small", 3, purpose)
    record = {"run": str(tmp_path / "a"), "secret_sha256": _sha(source.secret)}
    assert _manifest(tmp_path / "b")["replay_of"] == record
    assert _manifest(tmp_path / "b")["secret_sha256"] == _sha(source.secret)
    [start] = [e for e in read_events(tmp_path / "b") if e["type"] == "run_start"]
    assert start["replay_of"] == record and start["secret_sha256"] == _sha(source.secret)
    assert "replay_of" not in _manifest(tmp_path / "c")
    assert "secret=" not in repr(Replay.of(tmp_path / "a"))
    replay.finish()
    assert verify_secret(tmp_path / "b") is True
    # a replay run of one segment is replayed in turn: the same secret again
    assert Replay.of(tmp_path / "b").secret == source.secret


def _resumed(path: Path) -> None:
    first = RunDir.open(path, CONFIG)
    first.interrupt(signal="SIGINT")
    RunDir.open(path, CONFIG).finish()


def _open(path: Path) -> None:
    RunDir.open(path, CONFIG).append(_evaluation())


def _interrupted(path: Path) -> None:
    RunDir.open(path, CONFIG).interrupt(signal="SIGINT")


def _mismatched(path: Path) -> None:
    run = RunDir.open(path, CONFIG)
    run.secret = bytes(32)
    run.finish()


def _old_version(path: Path) -> None:
    path.mkdir()
    (path / "manifest.json").write_text(json.dumps({"config": CONFIG, "secret_sha256": _sha(b"x")}))
    (path / "events.jsonl").write_text(json.dumps({"type": "run_start"}) + "\n"
                                       + json.dumps({"type": "run_end", "secret": b"x".hex()}) + "\n")


@pytest.mark.parametrize("make,words", [
    (lambda path: None, "is not a run directory (no manifest.json and events.jsonl): --replay "
                        "names the directory of an ended run"),
    (lambda path: path.mkdir(), "is not a run directory"),
    (_open, "has not ended: its secret is not revealed yet; finish it first"),
    (_interrupted, "was interrupted, not finished: --replay needs a run that ended in one segment"),
    (_resumed, "was resumed (2 segments, each with its own secret): --replay needs a run of one "
               "segment"),
    (_mismatched, "its revealed secret does not match its commitment"),
    (_old_version, "has no run_start committing to its secret"),
])
def test_a_replay_needs_a_run_that_ended_in_one_segment(tmp_path, make, words):
    source = tmp_path / "source"
    make(source)
    with pytest.raises(RunError) as caught:
        Replay.of(source)
    message = str(caught.value)
    assert message.startswith(str(source)) and words in message and "\n" not in message
    assert not (tmp_path / "b").exists()


def test_a_resumed_replay_run_keeps_the_replayed_secret(tmp_path):
    """The point of a replay is identical inputs: every segment uses the replayed secret,
    commits to it and reveals it, and the audit verifies them all."""
    source = _ended(tmp_path / "a")
    first = RunDir.open(tmp_path / "b", CONFIG, replay=Replay.of(tmp_path / "a"))
    first.interrupt(signal="SIGINT")
    second = RunDir.open(tmp_path / "b", CONFIG, replay=Replay.of(tmp_path / "a"))
    assert second.secret == source.secret and second.run_id == first.run_id
    second.finish()
    starts = [e for e in read_events(tmp_path / "b") if e["type"] == "run_start"]
    assert [s["secret_sha256"] for s in starts] == [_sha(source.secret)] * 2
    assert starts[1]["resumed"] is True and starts[1]["replay_of"]["run"] == str(tmp_path / "a")
    assert audit_secret(_manifest(tmp_path / "b"), read_events(tmp_path / "b")).states == (
        "verified", "verified")
    assert verify_secret(tmp_path / "b") is True
    # its segments all drew from one secret: it can be replayed too
    assert Replay.of(tmp_path / "b").secret == source.secret


def test_a_resume_that_would_change_the_inputs_is_refused(tmp_path):
    _ended(tmp_path / "a")
    _ended(tmp_path / "other")
    RunDir.open(tmp_path / "b", CONFIG, replay=Replay.of(tmp_path / "a")).interrupt(signal="SIGINT")
    with pytest.raises(RunError, match=r"b replays the inputs of .*a: resume it with --replay "
                                       r".*a \(without it, its inputs would change mid-run\)"):
        RunDir.open(tmp_path / "b", CONFIG)
    with pytest.raises(RunError, match=r"replays the inputs of .*a, not those of .*other "
                                       r"\(another secret\): resume it with --replay"):
        RunDir.open(tmp_path / "b", CONFIG, replay=Replay.of(tmp_path / "other"))
    _interrupted(tmp_path / "c")
    with pytest.raises(RunError, match="holds a run that drew inputs of its own: resuming it "
                                       "with --replay would change its inputs mid-run"):
        RunDir.open(tmp_path / "c", CONFIG, replay=Replay.of(tmp_path / "a"))
    # nothing was appended by the refusals: each run resumes as it should
    assert [e["type"] for e in read_events(tmp_path / "b")] == ["run_start", "run_end"]
    RunDir.open(tmp_path / "b", CONFIG, replay=Replay.of(tmp_path / "a")).finish()
    RunDir.open(tmp_path / "c", CONFIG).finish()
    assert verify_secret(tmp_path / "b") and verify_secret(tmp_path / "c")


def test_run_replay_on_the_command_line(tmp_path, monkeypatch):
    """`jaxbench run --replay DIR` hands the evaluator DIR's secret (an instant fake stands in
    for the judge), refuses a directory that is no ended run with one line (exit 2), and a
    resume without --replay is refused rather than drawing other inputs."""
    from click.testing import CliRunner

    from jaxbench.cli import main
    from jaxbench.contract import EvaluationResult
    from jaxbench.runs import jobs

    secrets_seen: list[bytes] = []

    class Instant:
        def evaluate(self, source, task_id, settings):
            return EvaluationResult(task=task_id, target=settings.target, mode=settings.mode,
                                    size=settings.size, status="correct", stage="correct")

        def close(self):
            pass

    def make_evaluator(executor, secret, **options):
        secrets_seen.append(secret)
        return Instant()

    monkeypatch.setattr(jobs, "make_evaluator", make_evaluator)
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "12p_rmsnorm.py").write_text(
        (Path(__file__).parents[1] / "src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_tpu.py").read_text())
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(main, ["run", "--kernels", str(kernels), "--mode", "interpret",
                                    "--trials", "1", "--unsealed", "--json", *args])

    first = run("--out", str(tmp_path / "a"))
    assert first.exit_code == 0, first.output
    again = run("--out", str(tmp_path / "b"), "--replay", str(tmp_path / "a"))
    assert again.exit_code == 0, again.output
    assert secrets_seen[0] == secrets_seen[1]
    assert _manifest(tmp_path / "b")["replay_of"] == {
        "run": str(tmp_path / "a"), "secret_sha256": _sha(secrets_seen[0])}
    refused = run("--out", str(tmp_path / "c"), "--replay", str(tmp_path / "nope"))
    assert refused.exit_code == 2 and not (tmp_path / "c").exists()
    assert refused.stderr.strip().splitlines() == [
        f"jaxbench: error: {tmp_path / 'nope'} is not a run directory (no manifest.json and "
        "events.jsonl): --replay names the directory of an ended run"]
    # a replay run stopped part way (as an interrupt leaves it), then resumed without --replay
    RunDir.open(tmp_path / "d", _manifest(tmp_path / "b")["config"],
                replay=Replay.of(tmp_path / "a")).interrupt(signal="SIGINT")
    resumed = run("--out", str(tmp_path / "d"))
    assert resumed.exit_code == 2 and len(secrets_seen) == 2
    assert "replays the inputs of" in resumed.stderr and "--replay" in resumed.stderr
