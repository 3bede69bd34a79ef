"""ShinkaEvolve export: `jaxbench export-tasks --format shinka` writes task folders whose
evaluate.py judges a program through jaxbench's evaluator and writes the contract's files."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jaxbench.export.shinka import END, START, ExportError, export_task, initial_program
from jaxbench.tasks import get_task

TASK = "l1_relu"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("shinka")
    proc = subprocess.run([sys.executable, "-m", "jaxbench.cli", "export-tasks", str(out),
                           "--tasks", f"{TASK},12p_rmsnorm", "--target", "gpu"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return out


def _without_this_checkout() -> dict[str, str]:
    """The environment less PYTHONPATH, which the suite points at this checkout's src
    (tests/conftest.py): another interpreter then finds only what it has installed."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _evaluate(folder: Path, program: Path, results: Path, *, python: list[str] | None = None,
              exit_code: int = 0) -> tuple[dict, dict]:
    env = {**(os.environ if python is None else _without_this_checkout()), "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([*(python or [sys.executable]), str(folder / "evaluate.py"), "--program_path",
                           str(program), "--results_dir", str(results)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=results.parent)
    assert proc.returncode == exit_code, proc.stderr[-2000:]
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


def test_config_names_the_exporting_interpreter_and_turns_feedback_on(exported):
    config = (exported / TASK / "shinka.yaml").read_text()
    # ShinkaEvolve's LocalJobConfig.python_executable: the interpreter that ran export-tasks
    assert f"  python_executable: {json.dumps(sys.executable)}\n" in config
    assert "\njob_config:\n" in config
    assert "  use_text_feedback: true\n" in config
    # the embedding model needs an API; the offline settings are said beside it
    embedding = config.index("  embedding_model:")
    assert "null" in config[config.rindex("evo_config:"):embedding].split("llm_models:")[-1]
    assert json.loads((exported / "tasks.json").read_text())["python"] == sys.executable
    yaml = pytest.importorskip("yaml")
    loaded = yaml.safe_load(config)
    assert set(loaded) == {"evo_config", "db_config", "job_config"}
    assert loaded["job_config"] == {"python_executable": sys.executable}
    assert loaded["evo_config"]["use_text_feedback"] is True
    assert loaded["evo_config"]["embedding_model"] == "text-embedding-3-small"
    assert loaded["evo_config"]["task_sys_msg"].startswith("You optimize a JAX Pallas kernel")


def test_python_option_names_another_interpreter(tmp_path):
    folder = export_task(get_task(TASK), "gpu", tmp_path, python="/opt/conda/envs/jb/bin/python")
    assert '  python_executable: "/opt/conda/envs/jb/bin/python"\n' in (folder / "shinka.yaml").read_text()
    with pytest.raises(ExportError, match="must name an interpreter"):
        export_task(get_task(TASK), "gpu", tmp_path, python=" ")
    # the command's --python does the same; without it, the interpreter that ran the command
    from click.testing import CliRunner

    from jaxbench.cli import main

    out = CliRunner().invoke(main, ["export-tasks", str(tmp_path / "cli"), "--tasks", TASK,
                                    "--target", "gpu", "--python", "/usr/bin/python3.12"])
    assert out.exit_code == 0, out.output
    yaml = (tmp_path / "cli" / TASK / "shinka.yaml").read_text()
    assert '  python_executable: "/usr/bin/python3.12"\n' in yaml


def test_generated_files_say_why_run_shinka_eval_cannot_call_the_program(exported):
    for name in ("initial.py", "evaluate.py"):
        text = (exported / TASK / name).read_text()
        assert "run_shinka_eval" in text and "interpret mode" in text, name
    assert "kernel(*inputs)" in (exported / TASK / "evaluate.py").read_text()


def _bare_venv(tmp_path: Path) -> list[str]:
    """A new virtual environment without pip or site packages: Python without jaxbench."""
    import venv

    venv.create(tmp_path / "bare", with_pip=False, symlinks=True)
    return [str(tmp_path / "bare" / "bin" / "python")]


@pytest.mark.parametrize("interpreter", ["isolated", "bare_venv"])
def test_evaluate_without_jaxbench_writes_both_files_with_the_import_error(exported, tmp_path, interpreter):
    python = [sys.executable, "-I", "-S"] if interpreter == "isolated" else _bare_venv(tmp_path)
    probe = subprocess.run([*python, "-c", "import jaxbench"], capture_output=True, text=True,
                           env=_without_this_checkout())
    assert probe.returncode != 0  # the interpreter really lacks jaxbench
    folder = exported / TASK
    correct, metrics = _evaluate(folder, folder / "initial.py", tmp_path / "res", python=python, exit_code=2)
    assert correct["correct"] is False
    assert "jaxbench cannot be imported" in correct["error"]
    assert "No module named 'jaxbench'" in correct["error"] and "python_executable" in correct["error"]
    assert metrics["combined_score"] == 0.0 and metrics["text_feedback"] == correct["error"]
    assert metrics["public"]["status"] == "no_jaxbench"
    assert set(metrics) == {"combined_score", "public", "private", "text_feedback", "extra_data"}


def test_evaluate_when_the_harness_fails_writes_both_files(exported, tmp_path):
    folder = exported / TASK
    correct, metrics = _evaluate(folder, tmp_path / "no_such_program.py", tmp_path / "res", exit_code=1)
    assert correct["correct"] is False and "FileNotFoundError" in correct["error"]
    assert metrics["public"]["status"] == "harness_error" and metrics["combined_score"] == 0.0


def test_evaluate_when_the_evaluation_crashes_writes_both_files(exported, tmp_path, monkeypatch):
    """Anything escaping the evaluator (here a SystemExit from inside it) still leaves a verdict."""
    import importlib.util

    import jaxbench.evaluator

    spec = importlib.util.spec_from_file_location("exported_evaluate", exported / TASK / "evaluate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def crash(*args, **kwargs):
        raise SystemExit("the judge went away")

    monkeypatch.setattr(jaxbench.evaluator, "evaluate", crash)
    assert module.main(str(exported / TASK / "initial.py"), str(tmp_path / "res")) == 1
    correct = json.loads((tmp_path / "res" / "correct.json").read_text())
    metrics = json.loads((tmp_path / "res" / "metrics.json").read_text())
    assert correct["correct"] is False
    assert correct["error"].startswith("the evaluation crashed: SystemExit: the judge went away")
    assert metrics["public"]["status"] == "crashed" and metrics["combined_score"] == 0.0
