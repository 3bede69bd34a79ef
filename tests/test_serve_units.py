"""The service's parts without a server: the reward table, tokens, quotas, metrics, and the Ray
connection deadline (run/optimize/validate and the service all connect through it)."""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from jaxbench.contract import EvaluationResult
from jaxbench.serve.auth import ANONYMOUS, Authenticator, TokenError, parse_tokens
from jaxbench.serve.limits import QuotaWindows, concurrency_refusal
from jaxbench.serve.metrics import Metrics, quantile
from jaxbench.serve.rewards import INTERPRET_NOTE, STATUSES, RewardTable, reward

# -- rewards ---------------------------------------------------------------------------------------


def test_only_a_correct_verdict_earns_the_correctness_reward():
    table = RewardTable()
    for status in STATUSES:
        for mode in ("interpret", "device"):
            got = reward({"status": status, "mode": mode, "speedup": 3.0}, table)
            if status == "correct":
                assert got["correctness"] == table.correct
            else:
                assert got["correctness"] < table.correct and got["speedup_term"] == 0.0, (status, mode)
                assert got["value"] == table.statuses[status]
    assert reward({"status": "unverified", "mode": "interpret"})["value"] == 0.0
    assert reward({"status": "rejected", "mode": "device", "speedup": 10.0})["value"] == -1.0
    assert reward({"status": "no_pallas", "mode": "interpret"})["value"] == -0.5
    assert reward({"status": "something_new"})["value"] == 0.0
    # a debug run is judged on the untrusted side: never rewarded, whatever it claims
    assert reward({"status": "correct", "mode": "interpret", "debug": True})["correctness"] == 0.0


def test_speedup_counts_in_device_mode_only_and_interpret_says_so():
    device = reward({"status": "correct", "mode": "device", "speedup": 2.0})
    assert device == {"value": 2.0, "correctness": 1.0, "speedup_term": 1.0,
                      "basis": "correctness+speedup"}
    assert reward({"status": "correct", "mode": "device", "speedup": 0.5})["value"] == 0.0
    assert reward({"status": "correct", "mode": "device", "speedup": 1e9})["value"] == 4.0  # capped
    assert reward({"status": "correct", "mode": "device", "speedup": 1e-9})["value"] == 0.0  # floored
    for bad in (None, float("nan"), float("inf"), -1.0, 0.0, "fast", True):
        assert reward({"status": "correct", "mode": "device", "speedup": bad})["value"] == 1.0
    interpret = reward({"status": "correct", "mode": "interpret", "speedup": 5.0})
    assert interpret["value"] == 1.0 and interpret["basis"] == "correctness"
    assert interpret["note"] == INTERPRET_NOTE and "correctness only" in INTERPRET_NOTE
    assert "note" not in device


def test_a_result_and_its_event_earn_the_same_reward():
    """``reward`` reads an :class:`EvaluationResult` (the service's verdicts) or a record of one
    (a run's event, read offline) the same way."""
    base = EvaluationResult(task="8p_gemm", target="tpu", mode="device", size="small",
                            status="correct", speedup=2.0)
    for result in (base, base.replace(mode="interpret"), base.replace(debug=True),
                   base.replace(status="rejected", rule="outside_flops"),
                   base.replace(speedup=float("nan")), base.replace(status="timeout")):
        assert reward(result) == reward(result.to_event()), result
    assert reward(base)["value"] == 2.0 and reward(base.replace(debug=True))["value"] == 0.0


def test_the_reward_table_can_be_changed_but_not_to_reward_a_failure_as_correct(tmp_path):
    path = tmp_path / "rewards.json"
    path.write_text('{"correct": 2, "statuses": {"rejected": -5}, "speedup_weight": 0.5}')
    table = RewardTable.from_file(path)
    assert reward({"status": "correct", "mode": "device", "speedup": 4.0}, table)["value"] == 3.0
    assert reward({"status": "rejected", "mode": "interpret"}, table)["value"] == -5
    assert reward({"status": "incorrect", "mode": "interpret"}, table)["value"] == 0.0  # default kept
    with pytest.raises(ValueError, match="own entry"):
        RewardTable.from_dict({"statuses": {"correct": 5}})
    with pytest.raises(ValueError, match="unknown keys"):
        RewardTable.from_dict({"bonus": 1})
    with pytest.raises(ValueError, match="finite"):
        RewardTable.from_dict({"statuses": {"timeout": math.inf}})


# -- tokens and limits -----------------------------------------------------------------------------

def test_tokens_file_format_and_constant_time_lookup():
    tokens = parse_tokens("# comment\ntrainer:aaaaaaaaaaaaaaaaaaaa quota=5 concurrency=2\n"
                          "bbbbbbbbbbbbbbbbbbbb\n", "tokens")
    auth = Authenticator(tokens)
    assert auth.principal("Bearer aaaaaaaaaaaaaaaaaaaa").name == "trainer"
    assert auth.principal("Bearer aaaaaaaaaaaaaaaaaaaa").quota == 5
    assert auth.principal("bearer bbbbbbbbbbbbbbbbbbbb").name == "token2"
    for header in (None, "", "Bearer", "Bearer aaaaaaaaaaaaaaaaaaab", "Basic aaaaaaaaaaaaaaaaaaaa",
                   "Bearer aaaaaaaaaaaaaaaaaaaa extra", "aaaaaaaaaaaaaaaaaaaa"):
        assert auth.principal(header) is None, header
    assert Authenticator({}).principal(None).name == ANONYMOUS
    for bad in ("short", "a:aaaaaaaaaaaaaaaaaaaa\na:bbbbbbbbbbbbbbbbbbbb", "a:aaaaaaaaaaaaaaaaaaaa quota=0",
                "a:aaaaaaaaaaaaaaaaaaaa speed=3", "anonymous:aaaaaaaaaaaaaaaaaaaa"):
        with pytest.raises(TokenError):
            parse_tokens(bad, "tokens")
    assert set(parse_tokens("x:aaaaaaaaaaaaaaaaaaaa,y:bbbbbbbbbbbbbbbbbbbb", "env")) == {
        "aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb"}


def test_quota_window_and_retry_after():
    windows = QuotaWindows(window_s=100)
    assert windows.take("a", 2, quota=3, now=0) is None
    assert windows.take("a", 1, quota=3, now=10) is None
    refusal = windows.take("a", 1, quota=3, now=20)
    assert refusal is not None and refusal.retry_after_s == 80  # when the first two leave
    assert windows.take("b", 3, quota=3, now=20) is None  # callers are counted apart
    assert windows.take("a", 1, quota=3, now=100) is None
    assert windows.take("a", 5, quota=3, now=100).retry_after_s == 100
    assert windows.take("a", 100, quota=None) is None
    assert concurrency_refusal("a", 3, 1, 4, 2) is None
    refused = concurrency_refusal("a", 3, 2, 4, 2)
    assert refused is not None and refused.retry_after_s == 2 and "at most 4" in refused.message


def test_metrics_quantiles_and_exposition():
    assert quantile([], 0.5) is None
    assert quantile(range(1, 101), 0.5) == 50 and quantile(range(1, 101), 0.9) == 90
    metrics = Metrics()
    for seconds in (1.0, 2.0, 3.0, 4.0):
        metrics.verdict("correct", seconds, seconds / 2)
    metrics.verdict("rejected", 0.1, 0.05)
    metrics.refusal("429")
    text = metrics.render({"queue_length": 3}, {"executor": 'lo"cal'})
    assert 'jaxbench_serve_verdicts_total{status="correct"} 4' in text
    assert 'jaxbench_serve_refused_total{reason="429"} 1' in text
    assert "jaxbench_serve_queue_length 3" in text and 'executor="lo\\"cal"' in text
    assert 'jaxbench_serve_latency_seconds{quantile="0.5"} 2' in text
    assert "jaxbench_serve_latency_seconds_count 5" in text


# -- the Ray connection deadline -----------------------------------------------------------------------

CONNECT = """
import sys, time
from jaxbench.executors.ray import RayUnavailable, connect
started = time.monotonic()
try:
    connect(sys.argv[1], timeout_s=float(sys.argv[2]))
except RayUnavailable as exc:
    print(f"{time.monotonic() - started:.1f} {exc}")
    sys.exit(3)
print("connected")
"""


def _connect(address: str, timeout_s: float) -> tuple[float, str, float]:
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", CONNECT, address, str(timeout_s)], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert out.returncode == 3, out.stdout + out.stderr
    seconds, _, message = out.stdout.strip().partition(" ")
    return float(seconds), message, time.monotonic() - started


def test_ray_unreachable_cluster_is_a_clear_error_at_once():
    pytest.importorskip("ray")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    seconds, message, _ = _connect(f"127.0.0.1:{port}", 60)
    assert seconds < 15 and "nothing answers there" in message


def test_ray_cluster_that_never_answers_fails_within_the_deadline():
    """A GCS address that accepts connections and never answers (a cluster shutting down):
    Ray alone retries it for ever; jaxbench gives up at the deadline and the process exits."""
    pytest.importorskip("ray")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held = []
    threading.Thread(target=lambda: [held.append(server.accept()) for _ in range(64)], daemon=True).start()
    try:
        seconds, message, wall = _connect(f"127.0.0.1:{server.getsockname()[1]}", 4)
    finally:
        server.close()
    assert 4 <= seconds < 15 and "no connection within 4 s" in message
    assert wall < 60  # and the process did not hang on its way out


def test_ray_connect_timeout_setting(monkeypatch):
    from jaxbench.executors.ray import (
        CONNECT_TIMEOUT_ENV,
        DEFAULT_CONNECT_TIMEOUT_S,
        RayUnavailable,
        connect_timeout,
    )

    monkeypatch.delenv(CONNECT_TIMEOUT_ENV, raising=False)
    assert connect_timeout() == DEFAULT_CONNECT_TIMEOUT_S and connect_timeout(7) == 7
    monkeypatch.setenv(CONNECT_TIMEOUT_ENV, "12.5")
    assert connect_timeout() == 12.5
    for bad in ("soon", "0", "-3"):
        monkeypatch.setenv(CONNECT_TIMEOUT_ENV, bad)
        with pytest.raises(RayUnavailable):
            connect_timeout()


def test_serve_refuses_an_open_address_without_tokens_and_an_unreachable_cluster(tmp_path):
    pytest.importorskip("fastapi")
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    env.pop("JAXBENCH_SERVE_TOKENS", None)
    command = [sys.executable, "-m", "jaxbench.cli", "serve", "--port", "0", "--out", str(tmp_path / "r")]
    open_host = subprocess.run(command + ["--host", "0.0.0.0"], capture_output=True, text=True,
                               timeout=120, env=env)
    assert open_host.returncode == 2 and "tokens" in open_host.stderr
    started = time.monotonic()
    ray = subprocess.run(command + ["--executor", "ray", "--ray-address", "127.0.0.1:1"],
                         capture_output=True, text=True, timeout=120, env=env)
    if "needs Ray" not in ray.stderr:
        assert ray.returncode == 2 and "nothing answers there" in ray.stderr, ray.stderr
        assert time.monotonic() - started < 60
