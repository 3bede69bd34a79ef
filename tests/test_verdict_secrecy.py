"""Issue 46, items 3 and 4, in-process: optimize's agents evaluate with fresh trial keys; a run
directory the tracers could read is refused; the tracers' read roots hold no ``sys.path`` entry
outside the Python installation."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from agent_fakes import FakeEvaluator, script

from jaxbench.agents import get_method, optimize
from jaxbench.runs import RunDir, RunError

pytestmark = pytest.mark.quick

KERNEL = ("```python\nimport jax\nfrom jax.experimental import pallas as pl\nTARGET = 'tpu'\n\n"
          "def kernel(a, b):\n    return pl.pallas_call(None)  # {i}\n```\n")


class Recording(FakeEvaluator):
    def __init__(self) -> None:
        super().__init__()
        self.settings: list = []

    def evaluate(self, code, task_id, settings):
        self.settings.append(settings)
        return super().evaluate(code, task_id, settings)


def test_optimize_evaluates_every_candidate_with_fresh_keys(tmp_path):
    evaluator = Recording()
    run = RunDir.open(tmp_path / "run", {})
    model = script(tmp_path / "script", *(KERNEL.format(i=i) for i in range(3)))
    from jaxbench.llm import get_model

    optimize(["8p_gemm"], get_method("iterative", chains=1), get_model(model), run, budget=3,
             target="tpu", mode="interpret", trials=1, workers=1, evaluator=evaluator)
    assert len(evaluator.settings) == 3
    assert all(s.fresh_keys for s in evaluator.settings), evaluator.settings


def test_a_run_directory_inside_the_tracers_read_roots_is_refused(tmp_path):
    import shutil
    import uuid

    inside = Path(sys.prefix).resolve() / f"jaxbench-test-run-never-made-{uuid.uuid4().hex}"
    try:
        with pytest.raises(RunError, match="sandboxed tracers may read"):
            RunDir.open(inside, {"command": "test"})
        assert not inside.exists()
    finally:  # where the refusal is missing (a mutant), the run is not left in the installation
        shutil.rmtree(inside, ignore_errors=True)
    RunDir.open(tmp_path / "run", {"command": "test"})  # anywhere else: fine


def test_read_roots_hold_no_path_entry_outside_the_installation(tmp_path, monkeypatch):
    from jaxbench.evaluator.sandbox.isolation import python_read_roots

    extra = tmp_path / "on_sys_path"
    extra.mkdir()
    monkeypatch.syspath_prepend(str(extra))
    monkeypatch.chdir(extra)
    roots = python_read_roots()
    assert not any(str(extra.resolve()).startswith(r.rstrip("/") + "/") or r == str(extra.resolve())
                   for r in roots), roots
    assert all(Path(r).exists() for r in roots)


def test_library_directories_never_include_the_working_directory(tmp_path, monkeypatch):
    """``JAXBENCH_TRACER_LIBRARY_PATH`` adds kernel libraries that are not installed to the
    tracers' read roots, never the working directory nor a directory holding it (in the
    tracer, by its own; in the pool, by the host's: ``tracer_env``)."""
    import os

    from jaxbench.evaluator.parent.pool import tracer_env
    from jaxbench.evaluator.sandbox.isolation import LIBRARY_PATH, library_roots

    work, lib = tmp_path / "work", tmp_path / "lib"
    work.mkdir()
    lib.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv(LIBRARY_PATH, os.pathsep.join([str(lib), str(work), str(tmp_path), "lib"]))
    assert library_roots() == [str(lib.resolve())]
    assert tracer_env()[LIBRARY_PATH] == str(lib.resolve())
    monkeypatch.setenv(LIBRARY_PATH, str(tmp_path))
    assert LIBRARY_PATH not in tracer_env() and library_roots() == []
    assert library_roots(cwd=str(tmp_path.parent / "elsewhere")) == [str(tmp_path.resolve())]
