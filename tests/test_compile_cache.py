"""The judge's persistent compile cache (evaluator/judge/xla_cache.py): the task's programs
(reference, float32 truth, input drawing) compiled once are read back by a later runner, a
candidate's module is never written, the directory is the user's alone (0700) and no tracer
is told where it is."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

# One runner's work on a device request's task programs (the CPU standing in for the chip),
# twice in the same process (its in-memory caches cleared between), then a module of its
# own compiled outside task_side: the compile cache's counts of each, as JSON.
RUNNER_SIDE = """
import json, sys
import jax, jax.numpy as jnp
from jaxbench.contract import JudgeRequest
from jaxbench.evaluator.judge import fitting, runner, xla_cache

def judged(cache):
    request = JudgeRequest(dir=sys.argv[1], task="12p_rmsnorm", size="small", platform="cpu",
                           target="tpu", mode="device", trial_keys=[], recheck_keys=[],
                           xla_cache=cache)
    judging = runner._Judging(request, lambda kind: None)
    judging.fits()
    fitting._KEPT.clear()
    jax.clear_caches()
    return judging.response.stages.get("compile_cache")

out = {"first": judged(True), "again": judged(True)}
before = len(list(xla_cache.directory().iterdir()))
with xla_cache.counting() as counts:  # a candidate's module: compiled outside task_side
    jax.jit(lambda x: jnp.tanh(x) * 3.0 + 1.0).lower(jnp.ones((8, 128))).compile()
out["kernel"] = {**counts, "written": len(list(xla_cache.directory().iterdir())) - before}
out["off"] = judged(False)
print(json.dumps(out))
"""


def _runner_side(tmp_path, cache_dir):
    env = {**os.environ, "JAXBENCH_XLA_CACHE": str(cache_dir), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", RUNNER_SIDE, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_runner_compiles_none_of_the_task_programs_the_first_compiled(tmp_path):
    cache_dir = tmp_path / "cache" / "xla"
    first = _runner_side(tmp_path, cache_dir)
    # the first compile of the reference, truth and drawing misses and writes them
    assert first["first"]["misses"] >= 3 and first["first"]["hits"] == 0, first
    written = sorted(p.name for p in cache_dir.iterdir())
    assert written
    # the same runner, its in-memory caches cleared: every one is read back
    assert first["again"]["misses"] == 0 and first["again"]["hits"] >= 3, first
    # a module compiled outside task_side (a candidate's) is never written
    assert first["kernel"]["written"] == 0 and first["kernel"]["hits"] == 0, first
    # asked not to use it: no counts recorded for the request
    assert first["off"] is None
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    # a second run (a fresh process): nothing the first compiled is compiled again
    second = _runner_side(tmp_path, cache_dir)
    assert second["first"]["misses"] == 0 and second["first"]["hits"] >= 3, second
    assert sorted(p.name for p in cache_dir.iterdir()) == written


def test_the_directory_must_be_the_users_own(tmp_path, monkeypatch):
    from jaxbench.evaluator.judge import xla_cache

    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    assert xla_cache.prepare(loose) == ""
    assert stat.S_IMODE(loose.stat().st_mode) == 0o700  # tightened
    link = tmp_path / "link"
    link.symlink_to(loose)
    assert "link" in xla_cache.prepare(link)
    monkeypatch.setenv(xla_cache.ENV, "off")
    assert xla_cache.directory() is None and xla_cache.describe().startswith("off")
    monkeypatch.setenv(xla_cache.ENV, str(tmp_path / "fresh"))
    assert "not made yet" in xla_cache.describe()  # the doctor makes nothing
    assert not (tmp_path / "fresh").exists()
    monkeypatch.delenv(xla_cache.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert xla_cache.directory() == tmp_path / "xdg" / "jaxbench" / "xla"


def test_no_tracer_is_told_where_the_cache_is(monkeypatch, tmp_path):
    from jaxbench.evaluator.judge import xla_cache
    from jaxbench.evaluator.parent.pool import runner_env, tracer_env

    monkeypatch.setenv(xla_cache.ENV, str(tmp_path / "secret-cache"))
    assert xla_cache.ENV in runner_env()  # the trusted runner finds it
    tracer = tracer_env()
    assert not any(str(tmp_path / "secret-cache") in value for value in tracer.values())


@pytest.mark.parametrize("command", ["run", "eval", "optimize"])
def test_no_cache_is_an_option_of_the_commands_that_judge(command):
    from click.testing import CliRunner

    from jaxbench.cli import main

    out = CliRunner().invoke(main, [command, "--help"])
    assert out.exit_code == 0 and "--no-cache" in out.output and "compile cache" in out.output
