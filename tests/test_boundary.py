"""The trust boundary is visible in the layout and holds at run time.

The judge (``evaluator/judge/``) and the parent (``evaluator/parent/evaluator.py``, ``untrusted.py``)
never import the untrusted side's modules that load candidates, never exec/compile source, and
the runner process never has a candidate module loaded.
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from signal_helpers import alive, cpu_seconds

import jaxbench.evaluator as evaluator_pkg

EVALUATOR = Path(evaluator_pkg.__file__).parent
CONTRACT = EVALUATOR.parent / "contract"  # the records and codes every trusted module imports
# (the static policy names exec, eval and the loaders as strings: the names it refuses)
TRUSTED = sorted(p for room in ("judge", "parent", "common") for p in (EVALUATOR / room).glob("*.py")
                 if p.name != "static.py") + [EVALUATOR / "__init__.py"] + sorted(CONTRACT.glob("*.py"))
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


# Ways to run source or load a module chosen at run time. Any use of these names (called or not,
# as a name or as an attribute of anything) is a finding; so is any string naming them.
DYNAMIC = frozenset({"exec", "eval", "__import__", "import_module", "exec_module", "load_module",
                     "module_from_spec", "spec_from_file_location", "spec_from_loader",
                     "run_path", "run_module", "SourceFileLoader", "__builtins__", "builtins"})
# Modules that offer dynamic loading or the builtins under another name. `importlib.util` is
# allowed for `find_spec` only (asking whether a package is installed loads nothing).
DYNAMIC_MODULES = ("builtins", "importlib", "runpy", "imp", "pkgutil", "zipimport", "code",
                   "codeop")
ALLOWED_ATTRIBUTES = {("importlib", "util"), ("util", "find_spec")}


def dynamic_uses(source: str) -> list[str]:
    """Every dynamic import or exec/eval/compile in ``source``, by any spelling the AST shows:
    names, attributes, imports, ``getattr(builtins-ish, ...)`` and strings naming them.
    ``compile`` is a finding as a bare name or on the builtins, not as a method
    (``re.compile``, ``lowered.compile()``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Name) and (node.id in DYNAMIC or node.id == "compile"):
            found.append(f"{where}: name {node.id}")
        elif isinstance(node, ast.Attribute):
            base = node.value.id if isinstance(node.value, ast.Name) else None
            if (base, node.attr) in ALLOWED_ATTRIBUTES:
                continue
            if node.attr in DYNAMIC or (node.attr == "compile" and base in DYNAMIC):
                found.append(f"{where}: attribute .{node.attr}")
            elif base == "importlib" or (base == "util" and node.attr != "find_spec"):
                found.append(f"{where}: importlib.{node.attr}")
        elif isinstance(node, ast.alias) and node.name.split(".")[0] in DYNAMIC_MODULES:
            if node.name != "importlib.util":
                found.append(f"{where}: import {node.name}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in \
                DYNAMIC_MODULES:
            names = {a.name for a in node.names}
            if not (node.module == "importlib.util" and names <= {"find_spec"}):
                found.append(f"{where}: from {node.module} import {sorted(names)}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                node.value in DYNAMIC or node.value in ("compile", "importlib", "runpy")):
            found.append(f"{where}: string {node.value!r}")
    return found


def test_trusted_modules_never_import_candidate_loaders_or_exec():
    assert CONTRACT / "records.py" in TRUSTED and EVALUATOR / "parent" / "compare.py" in TRUSTED
    for path in TRUSTED:
        imported = _imports(path)
        bad = {m for m in imported if m.startswith(UNTRUSTED_LOADERS)
               or m.startswith("jaxbench.evaluator.sandbox")}
        assert not bad, f"{path.name} imports {bad}"
        assert dynamic_uses(path.read_text()) == [], path.name


@pytest.mark.parametrize("snippet", [
    "import importlib\nimportlib.import_module('jaxbench.evaluator.sandbox.tracer')",
    "from importlib import import_module\nm = import_module(name)",
    "import importlib as il\nil.import_module(x)",
    "mod = __import__(name)",
    "import builtins\nbuiltins.exec(source)",
    "import builtins as b\nrun = b.exec",
    "run = getattr(__builtins__, 'ex' + 'ec')",
    "import sys\nrun = getattr(sys.modules['builtins'], name)",
    "code = compile(source, 'x', 'exec')",
    "f = eval\nf(source)",
    "from runpy import run_path",
    "import importlib.util\nspec = importlib.util.spec_from_file_location('c', path)",
    "from importlib.util import module_from_spec",
])
def test_dynamic_import_or_exec_is_seen(snippet):
    assert dynamic_uses(snippet), snippet


@pytest.mark.parametrize("snippet", [
    "import re\nPATTERN = re.compile('x')",
    "compiled = jax.jit(f).lower(x).compile()",
    "import importlib.util\nok = importlib.util.find_spec('triton') is not None",
    "value = getattr(x, 'operation', x)",
])
def test_ordinary_code_is_not_flagged(snippet):
    assert dynamic_uses(snippet) == []


def test_judge_package_stands_alone(tmp_path):
    """A fresh runner process answers a real request (a hand-over of plain XLA for the TPU:
    it is read, checked and refused as `no_pallas`) and then holds no sandbox module."""
    import os

    import jax

    from jaxbench.evaluator.sandbox import handover
    from jaxbench.tasks import get_task

    task = get_task("12p_rmsnorm")
    traces = {size: jax.make_jaxpr(task.reference)(*task.input_specs(size)) for size in task.inputs}
    (tmp_path / "jaxpr.pkl").write_bytes(handover.dumps(traces))
    request = {"dir": str(tmp_path), "task": task.id, "size": "small", "platform": "tpu",
               "target": "tpu", "mode": "interpret", "trial_keys": [[0, 1]],
               "recheck_keys": [], "max_outside_flops_fraction": 0.1, "timing": {}}
    requests = json.dumps(request) + "\n" + json.dumps({"op": "modules"}) + "\n"
    out = subprocess.run([sys.executable, "-m", "jaxbench.evaluator.judge.runner"], input=requests,
                         capture_output=True, text=True, check=True, timeout=300,
                         env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin",
                              "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
    lines = [json.loads(ln) for ln in out.stdout.splitlines() if ln.startswith("{")]
    verdict, modules = lines
    assert (verdict["status"], verdict["stage"]) == ("no_pallas", "trace"), verdict
    assert "jaxbench.evaluator.judge.rules" in modules["modules"]
    assert [m for m in modules["modules"] if "sandbox" in m or m == "candidate"] == []


def test_runner_never_holds_a_candidate(evaluator):
    """After a real evaluation, the warm runner process has no candidate or sandbox module."""
    seed = Path(evaluator_pkg.__file__).parents[1] / "tasks/jaxbench/12p_rmsnorm/seed_tpu.py"
    result = evaluator.evaluate(seed, "12p_rmsnorm", trials=1, tpu_interpret=False)
    assert result.status == "correct" and result.judged_on == "trusted_export"
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
            "ev.pool.settle()\n"
            "print(ev.pool._spares.queue[0].proc.pid, ev.runners._idle.queue[0].proc.pid,"
            " flush=True)\n"
            f"ev.evaluate({str(endless)!r}, '8p_gemm', trials=1, timeout_s=120, "
            "tpu_interpret=False)\n")
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "JAX_PLATFORMS": "cpu", "TMPDIR": str(tmp_path)})
    try:
        children = [int(p) for p in owner.stdout.readline().split()]
        assert len(children) == 2 and all(Path(f"/proc/{p}").exists() for p in children)
        # No fixed sleep: wait until the tracer is done and the runner is spinning in the
        # kernel's loop (its CPU time keeps growing), however slow the machine.
        deadline = time.monotonic() + 300
        while alive(children[0]) and time.monotonic() < deadline:
            time.sleep(0.2)
        busy_from = cpu_seconds(children[1])
        while cpu_seconds(children[1]) < busy_from + 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive(children[0]) and cpu_seconds(children[1]) >= busy_from + 2
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(alive(p) for p in children):
        time.sleep(0.2)
    assert not any(alive(p) for p in children), "a child outlived its parent"
