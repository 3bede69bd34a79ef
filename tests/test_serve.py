"""``jaxbench serve`` over real HTTP on loopback: one service for the module (two workers,
tokens with their own limits), driven by raw HTTP, the package's clients, the OpenEnv client
and the trainers' reward function. Few real evaluations: most requests are refused before one,
fail at the static stage, or are answered from the verdict cache."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from serve_helpers import ADVERSARIAL, GEMM_SEED, NORM_SEED, Server, evaluations_of, events  # noqa: E402

from jaxbench.contract import EvaluationResult  # noqa: E402
from jaxbench.serve.wire import SubmissionReply  # noqa: E402

TOKENS = {"trainer": "trainer-token-0123456789abcdef", "tight": "tight-token-0123456789abcdef",
          "narrow": "narrow-token-0123456789abcdef"}
REJECTED = "import os\n\ndef kernel(a, b):\n    return a\n"  # static policy: refused at once
NORM, GEMM = "12p_rmsnorm", "8p_gemm"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    tokens = root / "tokens"
    tokens.write_text(f"# name:token [limits]\ntrainer:{TOKENS['trainer']}\n"
                      f"tight:{TOKENS['tight']} quota=1\nnarrow:{TOKENS['narrow']} concurrency=1\n")
    service = Server(root / "run", "--workers", "2", "--tokens", str(tokens),
                     "--max-source-bytes", "65536")
    yield service
    # uvicorn ends a SIGTERM'd server by the signal once it has shut down cleanly
    assert service.stop() in (0, -15), service.log()
    stop, end = events(service.out)[-2:]
    assert (stop["type"], end["type"], end.get("interrupted")) == ("serve_stop", "run_end", True)
    from jaxbench.runs import verify_secret

    assert verify_secret(service.out)  # a clean stop reveals the segment's secret
    assert "Traceback" not in service.log(), service.log()


def auth(name: str = "trainer") -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


def http(server: Server) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=120, trust_env=False)


def client(server: Server, name: str = "trainer"):
    from jaxbench.serve import Client

    return Client(server.url, token=TOKENS[name], retries=0)


# -- the service's own pages --------------------------------------------------------------------

def test_health_metrics_and_openapi_are_served(server):
    with http(server) as h:
        health = h.get("/v1/health").json()
        assert health["status"] == "ok" and health["workers"] == 2 and health["executor"] == "local"
        metrics = h.get("/metrics")
        assert metrics.headers["content-type"].startswith("text/plain")
        for name in ("jaxbench_serve_queue_length", "jaxbench_serve_in_flight",
                     "jaxbench_serve_latency_seconds{quantile=\"0.9\"}", "jaxbench_serve_failures_total"):
            assert name in metrics.text
        schema = h.get("/openapi.json").json()
    for path in ("/v1/submissions", "/v1/batches", "/v1/submissions/{sub_id}",
                 "/v1/batches/{batch_id}/stream", "/v1/tasks", "/v1/tasks/{task_id}"):
        assert path in schema["paths"], path
    assert "HTTPBearer" in schema["components"]["securitySchemes"]


def test_no_token_or_a_wrong_token_is_401(server):
    with http(server) as h:
        for headers in ({}, {"Authorization": "Bearer not-a-token-of-this-service"},
                        {"Authorization": f"Basic {TOKENS['trainer']}"}):
            for method, path, body in (("GET", "/v1/tasks", None),
                                       ("POST", "/v1/submissions", {"task": NORM, "source": REJECTED}),
                                       ("GET", "/v1/submissions/anything", None)):
                response = h.request(method, path, json=body, headers=headers)
                assert response.status_code == 401, (headers, path, response.text)
                assert response.headers["www-authenticate"] == "Bearer"
        assert h.get("/v1/tasks", params={"suite": "jaxbench"}, headers=auth()).status_code == 200


def test_tasks_are_listed_with_the_agents_prompts(server):
    from jaxbench.agents.prompts import ANSWER_FORMAT, task_statement
    from jaxbench.tasks import get_task, list_tasks

    with client(server) as c:
        listed = c.tasks(suite="jaxbench", prompts=True, target="gpu")
        one = c.task(NORM, target="tpu")
        seed = c.seed(NORM, "tpu")
    assert [t["id"] for t in listed] == [t.id for t in list_tasks("jaxbench")]
    gemm = next(t for t in listed if t["id"] == GEMM)
    statement = task_statement(get_task(GEMM), "gpu", "small", "interpret")
    assert gemm["prompt"] == statement + "\n\n" + ANSWER_FORMAT
    assert one["prompt"].startswith(task_statement(get_task(NORM), "tpu", "small", "interpret"))
    assert seed == NORM_SEED.read_text()


# -- verdicts, the cache, concurrency -----------------------------------------------------------

def test_seed_kernels_of_two_tasks_are_correct_and_a_resubmission_is_cached(server):
    with client(server) as c:
        first = [c.evaluate(path.read_text(), task) for path, task in ((NORM_SEED, NORM), (GEMM_SEED, GEMM))]
        again = c.evaluate(NORM_SEED.read_text(), NORM)
    for view in first:
        assert view.state == "done" and view.status == "correct", view
        assert isinstance(view.result, EvaluationResult) and view.result.status == "correct"
        assert view.mode == "interpret" and view.result.mode == "interpret"
        assert view.result.source_sha256 == view.source_sha256 and view.result.kernel_file is None
        assert view.reward_value == 1.0 and view.reward["basis"] == "correctness"
        assert "correctness only" in view.reward["note"]
    assert again.cached_from == first[0].id and again.status == "correct"
    assert again.result == first[0].result  # the same verdict, read back whole
    assert evaluations_of(server.out, first[0].source_sha256) == 1


def test_many_concurrent_clients_get_one_evaluation_of_one_kernel(server):
    """24 clients (16 threads with the blocking client, 8 coroutines with the async one)
    submit the same new kernel at once: every one gets the verdict, evaluated once."""
    from jaxbench.serve import AsyncClient

    source = NORM_SEED.read_text() + "\n# concurrent clients\n"
    views: list[SubmissionReply] = []
    errors: list[BaseException] = []

    def blocking() -> None:
        try:
            with client(server) as c:
                views.append(c.evaluate(source, NORM, timeout_s=600))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    async def concurrent() -> list[SubmissionReply]:
        async with AsyncClient(server.url, token=TOKENS["trainer"]) as c:
            return list(await asyncio.gather(*(c.evaluate(source, NORM, timeout_s=600) for _ in range(8))))

    threads = [threading.Thread(target=blocking) for _ in range(16)]
    for t in threads:
        t.start()
    views.extend(asyncio.run(concurrent()))
    for t in threads:
        t.join(600)
    assert not errors, errors
    assert len(views) == 24 and len({v.id for v in views}) == 24
    assert all(v.status == "correct" and v.reward_value == 1.0 for v in views)
    assert all(v.result is not None and v.result.status == "correct" for v in views)
    assert evaluations_of(server.out, views[0].source_sha256) == 1
    assert sum(v.cached_from is None for v in views) == 1


def test_batch_is_streamed_as_it_finishes(server):
    with client(server) as c:
        batch = c.submit_batch([NORM_SEED.read_text(), REJECTED, {"source": REJECTED, "task": GEMM}],
                               task=NORM)
        ids = batch.ids
        streamed = list(c.stream(batch=batch.batch, timeout_s=300))
        final = c.batch(batch.batch)
    assert sorted(v.id for v in streamed) == sorted(ids)
    assert all(v.state == "done" for v in streamed)
    assert final.done
    assert [s.status for s in final.submissions] == ["correct", "rejected", "rejected"]
    assert [s.result.status for s in final.submissions] == ["correct", "rejected", "rejected"]
    assert [s.task for s in final.submissions] == [NORM, NORM, GEMM]
    assert final.submissions[1].reward_value == -1.0  # gaming the check is penalised


# -- idempotency, limits, bad input ----------------------------------------------------------------

def test_a_retried_submission_is_not_evaluated_twice(server):
    body = {"task": NORM, "source": REJECTED + "# retried\n", "id": "retry-me-1"}
    with http(server) as h:
        first = h.post("/v1/submissions", json=body, headers=auth())
        second = h.post("/v1/submissions", json=body, headers=auth())
        keyed = [h.post("/v1/submissions", json={k: v for k, v in body.items() if k != "id"},
                        headers={**auth(), "Idempotency-Key": "retry-me-2"}) for _ in range(2)]
        changed = h.post("/v1/submissions", json={**body, "source": REJECTED + "# other\n"}, headers=auth())
        stolen = h.post("/v1/submissions", json=body, headers=auth("narrow"))
    assert first.status_code in (200, 202) and second.status_code == 200, (first.text, second.text)
    assert second.json()["id"] == "retry-me-1" and second.json()["duplicate"] is True
    assert first.json().get("duplicate") is None
    assert [r.json()["id"] for r in keyed] == ["retry-me-2"] * 2 and keyed[1].json()["duplicate"]
    assert changed.status_code == 409 and stolen.status_code == 409
    accepted = [e["submission"] for e in events(server.out) if e.get("type") == "serve_submission"]
    assert accepted.count("retry-me-1") == 1 and accepted.count("retry-me-2") == 1


def test_quota_and_concurrency_limits_answer_429_with_retry_after(server):
    with http(server) as h:
        ok = h.post("/v1/submissions", json={"task": NORM, "source": REJECTED, "id": "tight-1"},
                    headers=auth("tight"))
        over = h.post("/v1/submissions", json={"task": NORM, "source": REJECTED, "id": "tight-2"},
                      headers=auth("tight"))
        retried = h.post("/v1/submissions", json={"task": NORM, "source": REJECTED, "id": "tight-1"},
                         headers=auth("tight"))
        batch = h.post("/v1/batches", json={"task": NORM, "items": [{"source": REJECTED},
                                                                  {"source": REJECTED + "#2\n"}]},
                       headers=auth("narrow"))
    assert ok.status_code in (200, 202), ok.text
    assert over.status_code == 429 and "quota" in over.json()["detail"]
    assert 3000 <= int(over.headers["retry-after"]) <= 3600
    assert retried.status_code == 200 and retried.json()["duplicate"]  # a retry costs no quota
    assert batch.status_code == 429 and "concurrency" in batch.json()["detail"]
    assert int(batch.headers["retry-after"]) >= 1


def test_a_50_mb_source_is_refused_before_it_is_read(server):
    huge = {"task": NORM, "source": "#" * (50 << 20)}
    with http(server) as h:
        started = time.monotonic()
        response = h.post("/v1/submissions", json=huge, headers=auth())
        assert response.status_code == 413
        assert "request body of" in response.json()["detail"]
        assert time.monotonic() - started < 30

        def chunks():  # no Content-Length: cut off while it streams in
            yield b'{"task": "12p_rmsnorm", "source": "'
            for _ in range(50):
                yield b"#" * (1 << 20)
            yield b'"}'

        streamed = h.post("/v1/submissions", content=chunks(),
                          headers={**auth(), "content-type": "application/json"})
        assert streamed.status_code == 413 and "request body over" in streamed.json()["detail"]
        over_source = h.post("/v1/submissions", json={"task": NORM, "source": "#" * 70_000},
                             headers=auth())
        assert over_source.status_code == 413 and "source of 70000 bytes" in over_source.json()["detail"]
        assert h.get("/v1/health").json()["status"] == "ok"
    assert not any(e.get("type") == "serve_submission" and e.get("source_sha256") is None
                   for e in events(server.out))


@pytest.mark.parametrize("body, status, words", [
    (b'{"task": "12p_rmsnorm", "source": ', 400, "malformed JSON"),
    (b"not json at all", 400, "malformed JSON"),
    (b'["a list"]', 422, ""),
    (b'{"task": "12p_rmsnorm"}', 422, "source"),
    (b'{"source": "x"}', 422, "task"),
    (b'{"task": "no_such_task", "source": "def kernel(): pass"}', 422, "unknown task"),
    (b'{"task": "12p_rmsnorm", "source": "x", "size": "huge"}', 422, "unknown size"),
    (b'{"task": "12p_rmsnorm", "source": "x", "target": "cpu"}', 422, "target"),
    (b'{"task": "12p_rmsnorm", "source": "TARGET = \\"gpu\\"\\n", "target": "tpu"}', 422, "contradicts"),
    (b'{"task": "12p_rmsnorm", "source": "x", "chip": "Z80"}', 422, "Z80"),
    (b'{"task": "12p_rmsnorm", "source": "x", "trials": 0}', 422, "trials"),
    (b'{"task": "12p_rmsnorm", "source": "x", "id": "../../etc"}', 422, "id"),
    (b'{"task": "12p_rmsnorm", "source": "x", "mode": "fast"}', 422, "mode"),
    (b'{"task": "12p_rmsnorm", "source": "x", "unexpected": 1}', 422, "unexpected"),
    (b'{"task": "12p_rmsnorm", "source": "x\\u0000y"}', 422, "NUL"),
    (b'{"task": "12p_rmsnorm", "source": "x", "size": "full", "mode": "interpret", "trials": 20}',
     422, "needs an estimated"),
])
def test_bad_requests_are_refused_with_a_reason(server, body, status, words):
    with http(server) as h:
        response = h.post("/v1/submissions", content=body,
                          headers={**auth(), "content-type": "application/json"})
    assert response.status_code == status, response.text
    assert words in response.json()["detail"]


def test_unknown_ids_and_empty_batches(server):
    with http(server) as h:
        assert h.get("/v1/submissions/nope", headers=auth()).status_code == 404
        assert h.get("/v1/batches/nope", headers=auth()).status_code == 404
        assert h.get("/v1/stream", params={"ids": "nope"}, headers=auth()).status_code == 404
        assert h.post("/v1/batches", json={"items": []}, headers=auth()).status_code == 422
        assert h.post("/v1/batches", json={"items": [{"source": "x"}]}, headers=auth()).status_code == 422
        assert h.get("/v1/tasks/no_such_task", headers=auth()).status_code == 404
        mine = h.post("/v1/submissions", json={"task": NORM, "source": REJECTED}, headers=auth()).json()
        # another caller cannot read it
        assert h.get(f"/v1/submissions/{mine['id']}", headers=auth("narrow")).status_code == 404


# -- hostile kernels: the verdicts of `jaxbench eval` ---------------------------------------------------

HOSTILE = [("os_system_static.py", GEMM), ("pure_callback_static.py", GEMM),
           ("callback_obfuscated.py", GEMM), ("plain_jnp.py", GEMM)]
WRONG_SIGNATURE = ("TARGET = 'tpu'\nimport jax\nfrom jax.experimental import pallas as pl\n\n"
                   "def kernel(x):\n    return x\n")


def test_hostile_kernels_get_the_verdicts_of_jaxbench_eval(server, tmp_path):
    cases = [(ADVERSARIAL / name, task) for name, task in HOSTILE]
    wrong = tmp_path / "wrong_signature.py"
    wrong.write_text(WRONG_SIGNATURE)
    cases.append((wrong, GEMM))
    cli = [subprocess.Popen([sys.executable, "-m", "jaxbench.cli", "eval", str(path), "--task", task,
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
           for path, task in cases]
    with client(server) as c:
        views = c.evaluate_many([{"source": path.read_text(), "task": task} for path, task in cases],
                                timeout_s=600)
    for (path, _), view, proc in zip(cases, views, cli, strict=True):
        out, _ = proc.communicate(timeout=600)
        expected = json.loads(out)
        got = view.result
        assert (got.status, got.stage) == (expected["status"], expected["stage"]), path.name
        assert got.message == expected["message"], path.name
        assert view.reward["correctness"] <= 0.0 and view.status != "correct"


# -- the OpenEnv environment and the trainers' reward function ------------------------------------------

def test_openenv_client_resets_and_steps(server):
    pytest.importorskip("openenv")
    from jaxbench.serve.environment import JaxbenchAction, JaxbenchEnvClient

    async def episode():
        async with JaxbenchEnvClient(server.url, token=TOKENS["trainer"]) as env:
            first = await env.reset(task=NORM, target="tpu", max_steps=2)
            bad = await env.step(JaxbenchAction(source=REJECTED))
            answer = f"Here it is:\n```python\n{NORM_SEED.read_text()}```\n"
            good = await env.step(JaxbenchAction(source=answer))
            state = await env.state()
        return first, bad, good, state

    first, bad, good, state = asyncio.run(episode())
    assert "## Task 12p_rmsnorm" in first.observation.prompt and not first.done
    assert "correctness only" in first.observation.reward_note
    assert bad.observation.status == "rejected" and bad.reward == -1.0 and not bad.done
    assert good.observation.status == "correct" and good.reward == 1.0 and good.done
    assert "correctness only" in good.observation.reward_note
    assert state.step_count == 2 and state.best_status == "correct"

    async def refused():
        async with JaxbenchEnvClient(server.url, token="wrong-token-0123456789") as env:
            await env.reset(task=NORM)

    with pytest.raises((ConnectionError, RuntimeError)):
        asyncio.run(refused())


def test_reward_function_for_trainers(server, monkeypatch):
    from jaxbench.serve import KernelReward, compute_score, trainer

    reward = KernelReward(server.url, token=TOKENS["trainer"], task=NORM, batch_size=3)  # 2 batches
    seed = NORM_SEED.read_text()
    completions = [f"```python\n{seed}```", [{"role": "assistant", "content": f"```py\n{seed}\n```"}],
                   "```python\nimport os\n```", "no code at all"]
    rewards = reward(completions=completions, prompts=["p"] * 4, task=[NORM, NORM, NORM, GEMM])
    assert rewards[:3] == [1.0, 1.0, -1.0] and rewards[3] <= 0.0
    assert len(reward.last_results) == 4 and reward.__name__ == "jaxbench_kernel_reward"
    assert [r.result.status for r in reward.last_results[:3]] == ["correct", "correct", "rejected"]
    monkeypatch.setenv("JAXBENCH_SERVE_URL", server.url)
    monkeypatch.setenv("JAXBENCH_SERVE_TOKEN", TOKENS["trainer"])
    monkeypatch.setattr(trainer, "_verl", None)
    assert compute_score("jaxbench", f"```python\n{seed}```", NORM) == 1.0
    assert compute_score(solution_strs=["```python\nimport os\n```"], ground_truths=[NORM],
                         data_sources=["jaxbench"], extra_infos=[None]) == [-1.0]


# -- the run directory -------------------------------------------------------------------------------

def test_report_and_export_read_the_services_history(server, tmp_path):
    report = subprocess.run([sys.executable, "-m", "jaxbench.cli", "report", str(server.out), "--json"],
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    assert NORM in report.stdout and GEMM in report.stdout
    exported = tmp_path / "serve.jsonl"
    done = subprocess.run([sys.executable, "-m", "jaxbench.cli", "export", str(server.out), "--format",
                           "jsonl", "--out", str(exported)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    assert {r["task"] for r in rows} >= {NORM, GEMM}
    assert any(r["status"] == "rejected" for r in rows) and any(r["status"] == "correct" for r in rows)
