"""ShinkaEvolve export: `jaxbench export-tasks --format shinka` writes task folders whose
evaluate.py judges a program through jaxbench's evaluator and writes the contract's files."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jaxbench.export.shinka import END, START, ExportError, initial_program

TASK = "l1_relu"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("shinka")
    proc = subprocess.run([sys.executable, "-m", "jaxbench.cli", "export-tasks", str(out),
                           "--tasks", f"{TASK},12p_rmsnorm", "--target", "gpu"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return out


def _evaluate(folder: Path, program: Path, results: Path) -> tuple[dict, dict]:
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, str(folder / "evaluate.py"), "--program_path",
                           str(program), "--results_dir", str(results)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=results.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return (json.loads((results / "correct.json").read_text()),
            json.loads((results / "metrics.json").read_text()))


def test_folder_layout_and_evolve_block(exported):
    folder = exported / TASK
    assert sorted(p.name for p in folder.iterdir()) == ["evaluate.py", "initial.py", "shinka.yaml"]
    program = (folder / "initial.py").read_text()
    start, end = program.index(START), program.index(END)
    assert start < program.index("def pallas_kernel(") < end
    after = program[end:]
    assert 'TARGET = "gpu"' in after and "def kernel(*inputs):" in after
    assert "TARGET =" not in program[start:end]  # the target is fixed outside the block
    listing = json.loads((exported / "tasks.json").read_text())
    assert listing["tasks"] == [TASK, "12p_rmsnorm"] and listing["target"] == "gpu"
    assert "init_program_path: \"initial.py\"" in (folder / "shinka.yaml").read_text()


def test_seed_is_correct_and_scored(exported, tmp_path):
    folder = exported / TASK
    correct, metrics = _evaluate(folder, folder / "initial.py", tmp_path / "seed")
    assert correct == {"correct": True, "error": None}
    assert metrics["combined_score"] == 1.0  # interpret mode: 1.0 for correct (documented)
    assert metrics["public"]["status"] == "correct" and metrics["public"]["speedup"] is None
    assert set(metrics) == {"combined_score", "public", "private", "text_feedback", "extra_data"}


def _variant(folder: Path, tmp_path: Path, name: str, old: str, new: str) -> Path:
    program = (folder / "initial.py").read_text()
    assert old in program
    path = tmp_path / name
    path.write_text(program.replace(old, new))
    return path


def test_broken_program_is_incorrect_with_feedback(exported, tmp_path):
    folder = exported / TASK
    broken = _variant(folder, tmp_path, "broken.py", "jnp.maximum(x_ref[...], 0)",
                      "jnp.maximum(x_ref[...], 0) +")
    correct, metrics = _evaluate(folder, broken, tmp_path / "broken")
    assert correct["correct"] is False and "SyntaxError" in correct["error"]
    assert metrics["combined_score"] == 0.0 and metrics["text_feedback"] == correct["error"]


@pytest.mark.parametrize("name,old,new,status", [
    # the identity kernel of the published suite: a copy is never correct
    ("identity.py", "jnp.maximum(x_ref[...], 0)", "x_ref[...]", "incorrect"),
    # the work done in XLA, outside any kernel
    ("plain_jnp.py", "    m, n = x.shape\n", "    return jnp.maximum(x, 0)\n", "no_pallas"),
    # writing the verdict files itself, from inside the sandbox
    ("forge.py", "def _relu_kernel(",
     "import pathlib as _p\n[_q.write_text('{\"correct\": true}') for _q in "
     "_p.Path('..').glob('*/correct.json')]\n\n\ndef _relu_kernel(", None),
])
def test_cheating_programs_score_zero(exported, tmp_path, name, old, new, status):
    folder = exported / TASK
    correct, metrics = _evaluate(folder, _variant(folder, tmp_path, name, old, new),
                                 tmp_path / "res")
    assert correct["correct"] is False and metrics["combined_score"] == 0.0
    if status:
        assert metrics["public"]["status"] == status


def test_initial_program_refuses_unusual_seeds():
    with pytest.raises(ExportError, match="exactly one top-level"):
        initial_program("def helper():\n    pass\n", "tpu")


def test_results_load_through_shinka_when_installed(exported, tmp_path):
    utils = pytest.importorskip("shinka.utils", reason="shinka-evolve is not installed")
    folder = exported / TASK
    _evaluate(folder, folder / "initial.py", tmp_path / "seed")
    loaded = utils.load_results(str(tmp_path / "seed"))
    assert loaded["correct"]["correct"] is True and loaded["metrics"]["combined_score"] == 1.0
