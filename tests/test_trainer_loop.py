"""The trainer's loop as users run it (issue 57, item 1): one real ``trl.GRPOTrainer`` step of
``examples/grpo_trl.py`` (a random 2-layer Llama, a byte-level tokenizer built in-process,
nothing downloaded) against a real ``jaxbench serve`` on loopback, with ``KernelReward`` passed
to ``reward_funcs`` as it is; and verl's reward hook called as verl's reward managers call it.

A random model writes junk, so generation goes through TRL's ``rollout_func`` hook: the first
completion of each group is the task's seed kernel in a code block (what a good policy would
answer), the others are the model's own sampled tokens. The test reads the trainer's logs: the
seed's reward (1.0, ``correct``) is in the group's mean and the verdicts' shares are logged."""

from __future__ import annotations

import importlib.util
import uuid

import pytest

RL_INSTALL = "pip install -e '.[rl]'  (torch==2.13.0 CPU build, trl, transformers)"
for _module in ("torch", "trl", "transformers", "datasets"):
    pytest.importorskip(_module, reason=f"{_module} is not installed: {RL_INSTALL}")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from serve_helpers import REPO, Server  # noqa: E402

NORM = "12p_rmsnorm"
GENERATIONS = 4


def example():
    spec = importlib.util.spec_from_file_location("grpo_trl", REPO / "examples/grpo_trl.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    service = Server(tmp_path_factory.mktemp("judge") / "run", "--workers", "2")
    yield service
    service.stop()


def seeded_rollout(seed_answer: str, generations: int):
    """TRL's ``rollout_func``: the first completion of each group is ``seed_answer``, the
    others the model's own sampled tokens."""
    import torch

    def rollout(prompts: list[str], trainer) -> dict:
        tokenizer = trainer.processing_class
        prompt_ids = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        seed_ids = tokenizer(seed_answer, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        completion_ids = []
        for index, ids in enumerate(prompt_ids):
            if index % generations == 0:
                completion_ids.append(seed_ids)
                continue
            with torch.no_grad():
                out = trainer.model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=True,
                                             pad_token_id=tokenizer.pad_token_id)
            completion_ids.append(out[0, len(ids):].tolist())
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None}

    return rollout


def test_one_grpo_step_logs_the_reward_of_a_seed_kernel_in_a_group(server, tmp_path, monkeypatch):
    from jaxbench.serve import Client, KernelReward

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is marked experimental
    grpo = example()
    with Client(server.url) as judge:
        dataset = grpo.build_dataset(judge, [NORM])
        seed = judge.seed(NORM, target="tpu") + f"\n# {uuid.uuid4().hex}\n"  # judged afresh
    assert dataset.column_names == ["prompt", "task"] and dataset[0]["task"] == NORM
    assert "```python" in dataset[0]["prompt"]  # the service's prompt, answer format included
    model, tokenizer = grpo.tiny_model()
    assert tokenizer.decode(tokenizer("a ```b```\n")["input_ids"]) == "a ```b```\n"
    reward = KernelReward(server.url, target="tpu", timeout_s=300)
    trainer = grpo.make_trainer(model, tokenizer, dataset, reward, output_dir=str(tmp_path / "out"),
                                num_generations=GENERATIONS,
                                rollout_func=seeded_rollout(f"```python\n{seed}```", GENERATIONS))
    trainer.train()

    logged = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert len(logged) == 1, trainer.state.log_history
    step = logged[0]
    assert reward.last_statuses[0] == "correct", reward.last_statuses
    assert reward.last_results[0].reward_value == 1.0
    values = [r.reward_value for r in reward.last_results]
    assert step["rewards/jaxbench_kernel_reward/mean"] == pytest.approx(sum(values) / GENERATIONS)
    assert step["jaxbench/correct"] == pytest.approx(1 / GENERATIONS)
    assert step["jaxbench/unjudged"] == 0.0 and step["jaxbench/refused"] == 0.0
    assert sum(v for k, v in step.items() if k.startswith("jaxbench/")) == pytest.approx(1.0)
    # the model's own junk never earns more than the seed
    assert max(values[1:]) < 1.0 and step["reward_std"] > 0.0


# -- verl ------------------------------------------------------------------------------------------------

def test_verl_compute_score_as_verls_reward_managers_call_it(server, monkeypatch):
    """verl's naive reward manager calls ``compute_score(data_source=..., solution_str=...,
    ground_truth=..., extra_info=...)`` per sample (keywords); its batch manager calls it once
    with ``data_sources=``, ``solution_strs=``, ``ground_truths=``, ``extra_infos=`` and reads a
    list of floats (no None: verl adds scores into a tensor)."""
    from jaxbench.serve import trainer

    monkeypatch.setenv("JAXBENCH_SERVE_URL", server.url)
    monkeypatch.delenv("JAXBENCH_SERVE_TOKEN", raising=False)
    monkeypatch.setattr(trainer, "_verl", None)
    seed = (REPO / "src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_tpu.py").read_text()
    one = trainer.compute_score(data_source="jaxbench", solution_str=f"```python\n{seed}```",
                                ground_truth=NORM, extra_info={"split": "train", "index": 0})
    assert one == 1.0
    solutions = [f"```python\n{seed}```", "no code", "```python\nx = (\n```"]
    scores = trainer.compute_score(data_sources=["jaxbench"] * 3, solution_strs=solutions,
                                   ground_truths=[NORM, NORM, "ignored"],
                                   extra_infos=[None, None, {"task": NORM}])
    assert isinstance(scores, list) and all(isinstance(s, float) for s in scores)
    assert scores[0] == 1.0 and scores[1] < 0.0 and scores[2] < 0.0
