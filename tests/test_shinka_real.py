"""The exported ShinkaEvolve folders with the real ShinkaEvolve (shinka-evolve 0.0.7): its own
runner (`shinka_run`'s main) evolves one PallasBench task for two generations after the seed,
with its LLM client replaced by an offline stub that proposes one full rewrite and one diff;
every program is judged by jaxbench through the exported evaluate.py, under the interpreter
shinka.yaml names. Skipped where `shinka` does not import (`pip install shinka-evolve`)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

pytest.importorskip("shinka.cli.run", reason="shinka-evolve is not installed (pip install shinka-evolve)")

TASK = "l1_relu"  # the smallest task: an elementwise level-1 op, checked at size small

# Run in a fresh process: ShinkaEvolve's runner takes over logging and runs its own event loop.
DRIVER = textwrap.dedent('''
    import json
    import sys
    import threading

    import shinka.core.async_runner as async_runner
    from shinka.cli.run import main
    from shinka.core.sampler import PromptSampler
    from shinka.llm import QueryResult

    task_dir, results_dir, prompts_log = sys.argv[1:4]

    # One full rewrite, then one diff: the sampler draws the patch type at random, so each
    # proposal is pinned to the next kind in turn (the runner asks for them one at a time).
    kinds = iter(["full", "diff"])
    lock = threading.Lock()
    sample = PromptSampler.sample

    def pinned_sample(self, *args, **kwargs):
        with lock:
            kind = next(kinds)
        self.patch_types, self.patch_type_probs = [kind], [1.0]
        return sample(self, *args, **kwargs)

    PromptSampler.sample = pinned_sample


    def current_program(msg):
        """The parent program ShinkaEvolve put into the prompt."""
        body = msg.split("# Current program", 1)[1]
        return body.split("```python\\n", 1)[1].split("\\n```", 1)[0]


    def store_line(code):
        return next(line for line in code.splitlines() if line.strip().startswith("o_ref[...] ="))


    class OfflineLLM:
        """Stands in for shinka.llm.AsyncLLMClient: answers in ShinkaEvolve's formats."""

        def __init__(self, model_names="stub", **kwargs):
            self.model_names = [model_names] if isinstance(model_names, str) else list(model_names)

        def get_kwargs(self, model_sample_probs=None):
            return {"model_name": self.model_names[0], "temperature": 0.0, "max_tokens": 4096}

        async def query(self, msg, system_msg, msg_history=(), llm_kwargs=None,
                        model_sample_probs=None, model_posterior=None):
            code = current_program(msg)
            line = store_line(code)
            indent = line[:len(line) - len(line.lstrip())]
            if "SEARCH/REPLACE" in system_msg:  # a diff: copy the input (an identity kernel)
                kind = "diff"
                content = ("<NAME>copy_input</NAME>\\n<DESCRIPTION>store the input</DESCRIPTION>\\n"
                           f"<DIFF>\\n<<<<<<< SEARCH\\n{line}\\n=======\\n{indent}o_ref[...] = x_ref[...]\\n"
                           ">>>>>>> REPLACE\\n</DIFF>\\n")
            elif "<CODE>" in system_msg:  # a full rewrite: relu as a select (still correct)
                kind = "full"
                new = code.replace(line, f"{indent}x = x_ref[...]\\n"
                                         f"{indent}o_ref[...] = jnp.where(x > 0, x, jnp.zeros_like(x))")
                content = ("<NAME>relu_select</NAME>\\n<DESCRIPTION>a select</DESCRIPTION>\\n"
                           f"<CODE>\\n```python\\n{new}\\n```\\n</CODE>\\n")
            else:
                raise AssertionError("a prompt of neither kind: " + system_msg[-300:])
            with open(prompts_log, "a") as f:
                f.write(json.dumps({"kind": kind, "system": system_msg, "msg": msg}) + "\\n")
            return QueryResult(content=content, msg=msg, system_msg=system_msg,
                               new_msg_history=[{"role": "user", "content": msg},
                                                {"role": "assistant", "content": content}],
                               model_name=self.model_names[0], kwargs=llm_kwargs or {},
                               input_tokens=len(msg) // 4, output_tokens=len(content) // 4)


    async_runner.AsyncLLMClient = OfflineLLM
    sys.exit(main([
        "--task-dir", task_dir, "--results_dir", results_dir, "--num_generations", "3",
        "--config-fname", "shinka.yaml",
        # offline: a model name that needs no API key (never called: the stub answers) and
        # no embeddings, as shinka.yaml's comments say
        "--set", 'evo.llm_models=["local/stub@http://127.0.0.1:9/v1"]',
        "--set", "evo.embedding_model=null",
        "--max-evaluation-jobs", "1", "--max-proposal-jobs", "1", "--no-verbose",
    ]))
''')


@pytest.fixture(scope="module")
def evolved(tmp_path_factory):
    """Export l1_relu, run ShinkaEvolve on it; returns (programs by generation, prompts, seconds)."""
    from jaxbench.export import export_tasks
    from jaxbench.tasks import get_task

    root = tmp_path_factory.mktemp("shinka_real")
    # The interpreter shinka.yaml names: this one, behind a wrapper that logs each call.
    python = root / "python"
    python.write_text(f'#!/bin/sh\necho "$@" >> "{root}/python_calls.log"\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    export_tasks([get_task(TASK)], "gpu", root / "tasks", size="small", mode="interpret",
                 python=str(python))
    driver = root / "driver.py"
    driver.write_text(DRIVER)
    prompts = root / "prompts.jsonl"
    results = root / "results"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAXBENCH_TRITON_COMPILE": "0"}
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        env.pop(key, None)  # nothing may reach a provider
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(driver), str(root / "tasks" / TASK), str(results),
                           str(prompts)], capture_output=True, text=True, timeout=400, env=env,
                          cwd=root)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    with sqlite3.connect(results / "programs.sqlite") as db:
        db.row_factory = sqlite3.Row
        rows = [dict(r) for r in db.execute(
            "SELECT id, parent_id, generation, code, correct, combined_score, public_metrics, "
            "text_feedback, metadata FROM programs ORDER BY generation")]
    logs = [json.loads(line) for line in prompts.read_text().splitlines()] if prompts.exists() else []
    return rows, logs, seconds, results


def test_seed_and_both_proposals_are_judged_by_jaxbench(evolved):
    rows, logs, seconds, _ = evolved
    for row in rows:
        row["public"] = json.loads(row["public_metrics"])
        row["meta"] = json.loads(row["metadata"] or "{}")
    # generation 0 is the seed, copied to the second island (db_config.num_islands: 2)
    seeds = [r for r in rows if r["generation"] == 0]
    assert len(seeds) == 2 and [r["meta"].get("_is_island_copy") for r in seeds] == [None, True]
    assert [r["generation"] for r in rows if r["generation"]] == [1, 2]
    seed, full, diff = seeds[0], *rows[2:]
    # the seed: initial.py, correct in interpret mode (score 1.0, no timing on a CPU)
    assert seed["code"] == seeds[1]["code"] == (evolved[3].parent / "tasks" / TASK / "initial.py").read_text()
    for s in seeds:
        assert s["correct"] == 1 and s["combined_score"] == 1.0
        assert s["public"]["status"] == "correct" and s["public"]["mode"] == "interpret"
        assert s["text_feedback"] == "status correct at stage correct"
    # the full rewrite: relu as a select, still correct
    assert full["meta"].get("patch_type") == "full" and "jnp.where(x > 0" in full["code"]
    assert full["correct"] == 1 and full["combined_score"] == 1.0
    assert full["public"]["status"] == "correct"
    # the diff: an identity kernel, which jaxbench's judge finds incorrect (with its message)
    assert diff["meta"].get("patch_type") == "diff" and "o_ref[...] = x_ref[...]" in diff["code"]
    assert diff["correct"] == 0 and diff["combined_score"] == 0.0
    assert diff["public"]["status"] == "incorrect" and diff["public"]["max_abs_err"] > 0
    assert diff["text_feedback"].startswith("status incorrect at stage correct:")
    assert "exceed atol" in diff["text_feedback"]
    assert {full["parent_id"], diff["parent_id"]} <= {r["id"] for r in rows}
    # the stub was asked once per kind; with use_text_feedback on (shinka.yaml), jaxbench's
    # verdict of the parent was in the prompt
    assert [log["kind"] for log in logs] == ["full", "diff"]
    assert all("status correct at stage correct" in log["msg"] for log in logs)
    print(f"ShinkaEvolve run: {seconds:.0f} s for 3 evaluations")


def test_evaluate_ran_under_the_interpreter_shinka_yaml_names(evolved):
    _, _, _, results = evolved
    calls = (results.parent / "python_calls.log").read_text().splitlines()
    # once per program (the seed, the two proposals), on ShinkaEvolve's copy of evaluate.py
    assert len(calls) == 3
    assert all(c.startswith(f"{results / 'evaluate.py'} --program_path ") for c in calls)
    for generation in range(3):
        folder = results / f"gen_{generation}" / "results"
        assert f"--results_dir {folder}" in " ".join(calls)
        assert json.loads((folder / "metrics.json").read_text())["private"]["judged_on"] == "trusted_export"


def test_shinka_yaml_is_accepted_by_shinkas_own_loader(tmp_path):
    from shinka.cli.run import _field_types
    from shinka.cli.run_config import load_optional_yaml_config
    from shinka.core import EvolutionConfig
    from shinka.database import DatabaseConfig
    from shinka.launch import LocalJobConfig

    from jaxbench.export import export_tasks
    from jaxbench.tasks import get_task

    export_tasks([get_task(TASK)], "gpu", tmp_path, python="/opt/py/bin/python3")
    parsed, runner = load_optional_yaml_config(task_dir=tmp_path / TASK, config_fname="shinka.yaml",
                                               allowed_field_types=_field_types())
    evo, db, job = (EvolutionConfig(**parsed["evo"]), DatabaseConfig(**parsed["db"]),
                    LocalJobConfig(**parsed["job"]))
    assert evo.use_text_feedback is True and evo.embedding_model == "text-embedding-3-small"
    assert job.python_executable == "/opt/py/bin/python3" and db.num_islands == 2
    assert runner == {}
