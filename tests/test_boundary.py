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


def test_tracers_and_runners_die_with_their_parent(tmp_path):
    """SIGKILL the process that owns the pools: its warm tracer and runner go with it. (The
    owner cannot clean up after a SIGKILL: its files go to tmp_path.)"""
    import os
    import signal
    import time

    # The runner is busy (an endless loop inside a kernel) when its owner dies: it cannot
    # notice its closed input, only the parent-death signal stops it.
    endless = Path(__file__).parent / "adversarial/kernels/endless_kernel_loop.py"
    code = ("import sys, time\n"
            "from jaxbench.evaluator import Evaluator\n"
            "ev = Evaluator(spares=1)\n"
            "print(ev.pool._spares.queue[0].proc.pid, ev.runners._idle.queue[0].proc.pid,"
            " flush=True)\n"
            f"ev.evaluate({str(endless)!r}, '8p_gemm', trials=1, timeout_s=120, "
            "tpu_interpret=False)\n")
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "JAX_PLATFORMS": "cpu", "TMPDIR": str(tmp_path)})
    try:
        children = [int(p) for p in owner.stdout.readline().split()]
        assert len(children) == 2 and all(Path(f"/proc/{p}").exists() for p in children)
        time.sleep(15)  # the tracer is done and the runner is spinning in the kernel's loop
        assert _alive(children[1])
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(p) for p in children):
        time.sleep(0.2)
    assert not any(_alive(p) for p in children), "a child outlived its parent"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
