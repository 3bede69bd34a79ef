"""The trust boundary is visible in the layout and holds at run time.

The judge (``evaluator/judge/``) and the parent (``evaluator/__init__.py``) never import
the untrusted side's modules that load candidates, never exec/compile source, and the
runner process never has a candidate module loaded.
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import jaxbench.evaluator as evaluator_pkg

EVALUATOR = Path(evaluator_pkg.__file__).parent
TRUSTED = sorted((EVALUATOR / "judge").glob("*.py")) + [
    EVALUATOR / "__init__.py", EVALUATOR / "compare.py", EVALUATOR / "arrays.py",
    EVALUATOR / "pool.py", EVALUATOR / "timing.py", EVALUATOR / "result.py"]
UNTRUSTED_LOADERS = ("jaxbench.evaluator.sandbox.tracer", "jaxbench.evaluator.inprocess")


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def _calls(path: Path) -> set[str]:
    return {n.func.id for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def test_trusted_modules_never_import_candidate_loaders_or_exec():
    for path in TRUSTED:
        imported = _imports(path)
        bad = {m for m in imported if m.startswith(UNTRUSTED_LOADERS)
               or m.startswith("jaxbench.evaluator.sandbox")}
        assert not bad, f"{path.name} imports {bad}"
        assert not _calls(path) & {"exec", "eval", "compile", "__import__"}, path.name


def test_judge_package_stands_alone():
    """Importing the whole judge and running a request loads no sandbox module."""
    code = (
        "import sys, json\n"
        "import jaxbench.evaluator.judge.runner, jaxbench.evaluator.judge.client\n"
        "import jaxbench.evaluator.judge.rules, jaxbench.evaluator.judge.structure\n"
        "print(json.dumps(sorted(m for m in sys.modules if 'sandbox' in m or m == 'candidate')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_runner_never_holds_a_candidate(evaluator):
    """After a real evaluation, the warm runner process has no candidate or sandbox module."""
    seed = Path(evaluator_pkg.__file__).parents[1] / "tasks/jaxbench/p12_rmsnorm/seed_tpu.py"
    result = evaluator.evaluate(seed, "12p_rmsnorm", trials=1, tpu_interpret=False)
    assert result["status"] == "correct" and result["judged_on"] == "trusted_export"
    runner = evaluator.runners._idle.queue[0]
    loaded = runner.request({"op": "modules"}, 60, None).response["modules"]
    assert "jaxbench.evaluator.judge.rules" in loaded and "jaxbench.tasks" in loaded
    assert not [m for m in loaded if "sandbox" in m or m in ("candidate", "trusted_kernel")]
