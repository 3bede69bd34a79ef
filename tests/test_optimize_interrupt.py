"""Ctrl-C on `jaxbench optimize` with a slow model: a local OpenAI-compatible server (stdlib
HTTP, 127.0.0.1) that takes seconds per answer and counts the requests it gets. After the
signal no request reaches it, the call in flight is abandoned (the server sees the client go),
the command exits 130 within 3 s with a `run_end` that says it was interrupted and the command
that resumes, and the resume reuses every finished sample."""

import json
import os
import select
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from signal_helpers import cpu_seconds, descendants, stop, wait_for

ROOT = Path(__file__).parents[1]
SEEDS = {"12p_rmsnorm": ROOT / "src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_gpu.py",
         "8p_gemm": ROOT / "src/jaxbench/tasks/jaxbench/8p_gemm/seed_gpu.py"}


class _SlowModel(BaseHTTPRequestHandler):
    """Chat completions after ``latency`` seconds; an answer is the task's GPU seed (a real
    evaluation), or, with ``junk``, text without code (no evaluation). A client that goes
    away while the answer is being "generated" is counted in ``abandoned``."""

    latency = 2.0
    junk = False
    requests: list = []  # (monotonic arrival time, task named in the prompt)
    abandoned: list = []

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][0]["content"]
        task = next((t for t in SEEDS if f"Task {t}" in prompt), "?")
        type(self).requests.append((time.monotonic(), task))
        deadline = time.monotonic() + self.latency
        while time.monotonic() < deadline:  # "generating"; a real server stops when the client goes
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable and not self.connection.recv(1, socket.MSG_PEEK):
                type(self).abandoned.append(task)
                return
        text = "no code this time" if self.junk else \
            f"Here it is.\n```python\n{SEEDS[task].read_text()}```\n"
        reply = {"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": text}}],
                 "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}}
        data = json.dumps(reply).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            type(self).abandoned.append(task)

    def log_message(self, *args):
        pass


@pytest.fixture()
def slow_model():
    _SlowModel.latency, _SlowModel.junk = 2.0, False
    _SlowModel.requests, _SlowModel.abandoned = [], []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _SlowModel)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def _events(out):
    return [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_ctrl_c_stops_optimize_at_once_and_the_resume_reuses_every_finished_sample(
        slow_model, tmp_path):
    pytest.importorskip("openai")
    out = tmp_path / "run"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAXBENCH_CACHE": str(tmp_path / "cache"),
           "OPENAI_API_KEY": "local"}
    command = ["optimize", "--method", "iterative", "--model", f"openai:slow@{slow_model}",
               "--tasks", "12p_rmsnorm,8p_gemm", "--budget", "2", "-O", "chains=1",
               "--parallel-tasks", "1", "--target", "gpu", "--mode", "interpret", "--trials", "1",
               "--workers", "1", "--concurrency", "2", "--no-cache", "--out", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "jaxbench.cli", *command], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The first sample evaluated (a real evaluation), the second turn's request in flight.
        wait_for(lambda: (out / "events.jsonl").exists() and '"evaluation"' in
                 (out / "events.jsonl").read_text() and len(_SlowModel.requests) >= 2, 240,
                 "the first sample and the second request")
        time.sleep(0.3)
        below = descendants(proc.pid)
        stderr, signalled, stopped_in = stop(proc, signal.SIGINT, timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert stopped_in < 3, f"exited {stopped_in:.1f} s after the signal"
    after = [task for arrived, task in _SlowModel.requests if arrived > signalled]
    assert after == [], f"requests after the signal: {after}"
    assert [task for _, task in _SlowModel.requests] == ["12p_rmsnorm", "12p_rmsnorm"]
    wait_for(lambda: _SlowModel.abandoned, 5, "the server to see the call in flight abandoned")
    wait_for(lambda: not (below & descendants(os.getpid())), 10, "the evaluator's processes")
    assert "interrupted by SIGINT: 1 of up to 4 samples are done" in stderr
    assert "1 model call in flight cancelled" in stderr
    resume = stderr.split("resume with:\n", 1)[1].strip().splitlines()[0]
    assert resume.startswith("jaxbench optimize ") and f"--out {out}" in resume

    events = _events(out)
    end = events[-1]
    assert end["type"] == "run_end" and end["interrupted"] is True and end.get("secret")
    assert end["signal"] == "SIGINT" and end["samples"] == 1 and end["resume"] == resume
    assert not (out / ".secret").exists()  # nothing secret on disk; resumable all the same
    calls = [e for e in events if e["type"] == "llm_call"]
    assert [(c["step"], bool(c.get("cancelled"))) for c in calls] == [
        ("chain0/turn0", False), ("chain0/turn1", True)]
    assert calls[0]["input_tokens"] == 100 and calls[1]["cost"] is None
    first = [e for e in events if e["type"] == "evaluation"]
    assert [(e["task"], e["step"], e["status"]) for e in first] == [
        ("12p_rmsnorm", "chain0/turn0", "correct")]
    assert not any(e["type"] == "task_done" for e in events)

    # The resume: the finished sample and call are reused; the cancelled call is asked again,
    # then the second task runs (the model now answers at once, without code).
    _SlowModel.latency, _SlowModel.junk = 0.0, True
    asked_before = len(_SlowModel.requests)
    resumed = subprocess.run([sys.executable, "-m", "jaxbench.cli", *shlex.split(resume)[1:]],
                             env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert (f"jaxbench: resuming {out}: 1 of up to 4 samples, 1 model call and 0 of 2 finished "
            "tasks are reused from it") in resumed.stderr
    asked = [task for _, task in _SlowModel.requests[asked_before:]]
    assert asked == ["12p_rmsnorm", "8p_gemm", "8p_gemm"]
    events = _events(out)
    evaluations = [(e["task"], e["step"]) for e in events if e["type"] == "evaluation"]
    assert evaluations.count(("12p_rmsnorm", "chain0/turn0")) == 1  # not evaluated again
    assert len(evaluations) == 4 and len(set(evaluations)) == 4
    assert events[-1]["type"] == "run_end" and events[-1].get("secret")
    from jaxbench.runs import verify_secret

    assert verify_secret(out) and not (out / ".secret").exists()


def _runner(pid):
    for child in descendants(pid):
        try:
            if b"judge.runner" in Path(f"/proc/{child}/cmdline").read_bytes():
                return child
        except OSError:
            continue
    return None


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_ctrl_c_kills_the_evaluation_in_flight_and_keeps_no_verdict_of_it(tmp_path):
    """The model's kernel never finishes (it spins in the trusted runner once it gets there):
    Ctrl-C during its evaluation kills the evaluator's processes at once, and the killed
    evaluation (which would end `crashed`) is not recorded as a sample."""
    answers = tmp_path / "answers"
    answers.mkdir()
    endless = (ROOT / "tests/adversarial/kernels/endless_kernel_loop.py").read_text()
    (answers / "1.txt").write_text(f"```python\n{endless}```\n")
    out = tmp_path / "run"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAXBENCH_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jaxbench.cli", "optimize", "--method", "best_of_n", "--model",
         f"scripted:{answers}", "--tasks", "8p_gemm", "--budget", "1", "--mode", "interpret",
         "--trials", "1", "--workers", "1", "--out", str(out)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: _runner(proc.pid) is not None, 240, "the trusted runner")
        runner = _runner(proc.pid)
        wait_for(lambda: (out / "events.jsonl").exists() and '"llm_call"' in
                 (out / "events.jsonl").read_text(), 240, "the model's answer")
        busy_from = cpu_seconds(runner)  # the evaluation is under way from here
        wait_for(lambda: cpu_seconds(runner) > busy_from + 2, 240, "the runner to work")
        below = descendants(proc.pid)
        stderr, _, stopped_in = stop(proc, signal.SIGINT, timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and stopped_in < 3, (stopped_in, stderr)
    wait_for(lambda: not (below & descendants(os.getpid())), 10, "the evaluator's processes")
    events = _events(out)
    assert not [e for e in events if e["type"] == "evaluation"]  # killed: no verdict
    assert events[-1]["type"] == "run_end" and events[-1]["interrupted"] is True
    assert "0 of up to 1 samples are done" in stderr


class _Held:
    """A provider whose calls wait until released; counts the calls that reached it."""

    name, offline, spec, model = "held", True, "held", "held"

    def __init__(self, fail_first: int = 0):
        self.calls = 0
        self.fail_first = fail_first
        self.release = threading.Event()
        self.started = threading.Event()

    def complete(self, prompt, sampling, *, sample):
        from jaxbench.llm import Completion

        self.calls += 1
        self.started.set()
        if self.calls <= self.fail_first:
            raise TimeoutError("a transient failure, retried after a backoff")
        self.release.wait(30)
        return Completion(text="answer", model="held", finish_reason="stop")

    def cancel(self):
        pass

    def is_retryable(self, exc):
        return True


def test_no_request_starts_after_the_client_is_cancelled():
    from jaxbench.llm import LLMCancelled, ModelClient

    # A call waiting for its slot when the stop comes never goes out, and neither does a new one.
    provider = _Held()
    client = ModelClient(provider, "held:x", max_concurrency=1)
    first = threading.Thread(target=client.complete, args=("p",), kwargs={"sample": "a"})
    first.start()
    assert provider.started.wait(10)
    outcome = {}

    def second():
        try:
            client.complete("p", sample="b")
        except LLMCancelled as exc:
            outcome["cancelled"] = str(exc)

    waiting = threading.Thread(target=second)
    waiting.start()
    time.sleep(0.2)  # the second call waits for the slot
    client.cancel()
    provider.release.set()
    first.join(10)
    waiting.join(10)
    assert "cancelled" in outcome and provider.calls == 1
    with pytest.raises(LLMCancelled):
        client.complete("p", sample="c")
    assert provider.calls == 1

    # A call between retries stops waiting at the stop, and is not retried.
    provider = _Held(fail_first=1)
    client = ModelClient(provider, "held:x", backoff_s=60.0)
    started = time.monotonic()
    threading.Timer(0.3, client.cancel).start()
    with pytest.raises(LLMCancelled):
        client.complete("p", sample="d")
    assert time.monotonic() - started < 5 and provider.calls == 1


def test_the_driver_stops_at_the_interrupt_and_records_the_calls_it_cut_short(tmp_path):
    """In process, with a model that can be cancelled (scripted, 30 s per answer) and three
    calls in flight: the stop takes well under a second, each call sent is recorded as a
    cancelled `llm_call`, no evaluation or task ends after it, and a resume asks again."""
    from agent_fakes import FakeEvaluator, events_of, kernels, script

    from jaxbench.agents import Interrupted, get_method, optimize
    from jaxbench.llm import get_model
    from jaxbench.runs import RunDir

    answers = kernels("tpu", 4)
    run = RunDir.open(tmp_path / "run", {})
    options = dict(budget=4, target="tpu", mode="interpret", trials=1, workers=2)
    slow = get_model(script(tmp_path / "slow", *answers, latency=30.0), max_concurrency=3)
    interrupt = threading.Event()
    threading.Timer(1.0, interrupt.set).start()
    started = time.monotonic()
    with pytest.raises(Interrupted):
        optimize(["8p_gemm"], get_method("best_of_n"), slow, run, evaluator=FakeEvaluator(),
                 interrupt=interrupt, **options)
    assert time.monotonic() - started < 3
    calls = events_of(run, "llm_call")
    assert len(calls) == 3 and all(c["cancelled"] and c["cost"] is None for c in calls)
    assert not events_of(run, "evaluation") and not events_of(run, "task_done")

    fast = get_model(script(tmp_path / "fast", *answers))
    optimize(["8p_gemm"], get_method("best_of_n"), fast, RunDir.open(tmp_path / "run", {}),
             evaluator=FakeEvaluator(), **options)
    assert fast.provider.calls == 4  # the cancelled calls are asked again
    assert len(events_of(run, "evaluation")) == 4 and len(events_of(run, "task_done")) == 1
