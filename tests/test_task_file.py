"""Bring your own task: a task file outside the repository (a reference and its input specs,
in the form of a shipped task.py) evaluated, validated, run and optimized from the command
line as docs/tasks.md shows; it loads where references run (the command, the trusted runner)
and never in the sandboxed tracer."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agent_fakes import script

# The task file logs every process that loads it (sys.argv[0]: the command's __main__, the
# trusted runner's module; a tracer could not even write here, and its import would fail).
TASK_FILE = '''"""my_scaled_silu: x * sigmoid(x) * scale over the last axis (a task of my own)."""

import sys

import jax
import jax.numpy as jnp

from jaxbench.tasks.spec import Task, normal, uniform

with open(__file__ + ".loaded", "a") as log:
    log.write(sys.argv[0] + "\\n")


def reference(x, scale):
    xf = x.astype(jnp.float32)
    return (xf * jax.nn.sigmoid(xf)).astype(x.dtype) * scale


TASK = Task(
    "my_scaled_silu",
    reference=reference,
    sizes={"small": dict(R=512, H=256), "full": dict(R=16384, H=4096)},
    inputs=lambda d: [normal("x", (d.R, d.H)), uniform("scale", (d.H,), 0.5, 1.5)],
    flops=lambda d: 5 * d.R * d.H,
)
'''

KERNEL = '''import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _body(x_ref, s_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    o_ref[...] = (x * jax.nn.sigmoid(x)).astype(o_ref.dtype) * s_ref[...]


def kernel(x, scale):
    rows, h = x.shape
    return pl.pallas_call(
        _body,
        grid=(rows // 128,),
        in_specs=[pl.BlockSpec((128, h), lambda i: (i, 0)), pl.BlockSpec((1, h), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((128, h), lambda i: (i, 0)),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    )(x, scale.reshape(1, h))
'''


def _jaxbench(*args, cwd):
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAXBENCH_CACHE": str(Path(cwd) / "cache")}
    return subprocess.run([sys.executable, "-m", "jaxbench.cli", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture()
def own(tmp_path):
    """A folder outside the repository with the task file and a kernel for it."""
    (tmp_path / "my_task.py").write_text(TASK_FILE)
    (tmp_path / "my_kernel.py").write_text(KERNEL)
    return tmp_path


def _loaders(own):
    return Path(str(own / "my_task.py") + ".loaded").read_text().split()


def test_a_task_file_is_evaluated_and_loads_in_the_trusted_runner_never_in_the_tracer(own):
    out = _jaxbench("eval", "my_kernel.py", "--task-file", "my_task.py", "--trials", "1",
                    "--json", cwd=own)
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout)
    assert (result["task"], result["status"], result["judged_on"]) == (
        "my_scaled_silu", "correct", "trusted_export")
    loaders = _loaders(own)
    assert any(p.endswith("jaxbench/cli/__main__.py") for p in loaders), loaders
    assert any(p.endswith("judge/runner.py") for p in loaders), loaders  # handed its path
    assert not any("sandbox" in p for p in loaders), loaders  # never the tracer

    # A wrong kernel is judged against the file's reference: incorrect, with where.
    (own / "wrong.py").write_text(KERNEL.replace("* s_ref[...]", "* 2"))
    out = _jaxbench("eval", "wrong.py", "--task-file", "my_task.py", "--trials", "1", cwd=own)
    assert out.returncode == 1 and "incorrect at stage correct" in out.stdout, out.stdout


def test_a_task_file_is_validated_as_shipped_tasks_are(own):
    out = _jaxbench("validate", "--task-file", "my_task.py", "--json", cwd=own)
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["task"] == "my_scaled_silu" and not report["flagged"]
    # A reference that ignores an input is flagged, as a shipped task would be.
    (own / "bad_task.py").write_text(TASK_FILE.replace("my_scaled_silu", "my_bad").replace(
        ".astype(x.dtype) * scale", ".astype(x.dtype) * 1"))
    out = _jaxbench("validate", "--task-file", "bad_task.py", cwd=own)
    assert out.returncode == 1 and "my_bad" in out.stdout, out.stdout + out.stderr


def test_a_task_file_is_run_and_optimized_and_the_run_resumes_only_with_that_file(own):
    (own / "kernels").mkdir()
    (own / "kernels/my_scaled_silu.py").write_text(KERNEL)
    out = _jaxbench("run", "--task-file", "my_task.py", "--kernels", "kernels", "--trials", "1",
                    "--out", "runs/run", cwd=own)
    assert out.returncode == 0 and "1/1 correct" in out.stdout, out.stdout + out.stderr

    model = script(own / "answers", f"```python\n{KERNEL}```\n")
    args = ["optimize", "--method", "iterative", "--model", model, "--task-file", "my_task.py",
            "--budget", "2", "--mode", "interpret", "--trials", "1", "--out", "runs/opt"]
    out = _jaxbench(*args, cwd=own)
    assert out.returncode == 0, out.stdout + out.stderr
    events = [json.loads(line) for line in (own / "runs/opt/events.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["type"] == "llm_call"]
    assert len(calls) == 2 and "def reference(x, scale)" in calls[0]["prompt"]
    assert [e["status"] for e in events if e["type"] == "evaluation"] == ["correct", "correct"]
    assert (own / "runs/opt/best/my_scaled_silu.py").read_text() == KERNEL
    config = json.loads((own / "runs/opt/manifest.json").read_text())["config"]
    assert config["tasks"] == ["my_scaled_silu"]
    assert config["task_files"][0][:2] == ["my_scaled_silu", str((own / "my_task.py").resolve())]

    # Another version of the task file is another run: the directory refuses it.
    (own / "my_task.py").write_text(TASK_FILE.replace("0.5, 1.5", "0.5, 2.0"))
    out = _jaxbench(*args[:-1], "runs/opt2", cwd=own)  # a new run with the new file: fine
    assert out.returncode == 0, out.stderr
    (own / "runs/opt2/.secret").write_text("00" * 32)  # reopen it as an unfinished run
    (own / "my_task.py").write_text(TASK_FILE)
    out = _jaxbench(*args[:-1], "runs/opt2", cwd=own)
    assert out.returncode == 2 and "another configuration" in out.stderr, out.stderr


def test_task_file_mistakes_are_one_line_usage_errors(own):
    (own / "empty.py").write_text("x = 1\n")
    (own / "taken.py").write_text(TASK_FILE.replace('"my_scaled_silu",', '"8p_gemm",'))
    (own / "broken.py").write_text(TASK_FILE.replace("def reference(x, scale):",
                                                     "def reference(x, scale)"))
    for file, words in (("missing.py", "cannot be read"), ("empty.py", "defines no TASK"),
                        ("taken.py", "is a shipped task's ID"),
                        ("broken.py", "failed to load (line 14): SyntaxError: expected ':'")):
        out = _jaxbench("eval", "my_kernel.py", "--task-file", file, cwd=own)
        assert out.returncode == 2, out.stderr
        assert out.stderr.startswith("jaxbench: error: ") and words in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    out = _jaxbench("eval", "my_kernel.py", cwd=own)
    assert out.returncode == 2 and "--task ID" in out.stderr and "--task-file" in out.stderr
    out = _jaxbench("eval", "my_kernel.py", "--task-file", "my_task.py", "--debug", cwd=own)
    assert out.returncode == 2 and "never loaded" in out.stderr, out.stderr


def test_the_registry_loads_a_task_file_once_and_checks_its_text(own):
    from jaxbench.tasks import (
        FILE_SUITE,
        TaskFileError,
        get_task,
        load_task,
        load_task_file,
        task_file_of,
    )

    task = load_task_file(own / "my_task.py")
    assert get_task("my_scaled_silu") is task and task.suite == FILE_SUITE
    assert task.description.startswith("my_scaled_silu: x * sigmoid(x)")
    assert task.kernel_files() == {}  # no shipped kernels beside a task file
    path, digest = task_file_of("my_scaled_silu")
    assert load_task("my_scaled_silu", [path, digest]) is task  # what the trusted runner does
    assert task_file_of("8p_gemm") is None
    with pytest.raises(TaskFileError, match="changed after the run loaded it"):
        load_task("my_scaled_silu", [path, "0" * 64])
