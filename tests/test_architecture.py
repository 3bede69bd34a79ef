"""The package layout's rules (docs/architecture.md, "Packages"), read from the source.

Every import counts, also one inside a function: a lazy import is still an arrow. The graph
is built from the AST, so a rule breaks as soon as someone writes the import, whether or not
a test happens to run that code path."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick  # the quick tier (`pytest -m quick`): the whole module

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "jaxbench"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    """Every module of the library (the task catalogue's modules and kernels excepted: they
    are data, checked by test_tasks_import_only_the_task_registry)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        name = _module_name(path)
        if not name.startswith(("jaxbench.tasks.jaxbench.", "jaxbench.tasks.pallasbench.")):
            modules[name] = path
    return modules


MODULES = _modules()


def _imports(path: Path) -> list[tuple[str, list[str], int]]:
    """(module, imported names, line) for every import statement in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: use absolute imports"
            found.append((node.module or "", [a.name for a in node.names], node.lineno))
    return found


def _targets(modules: dict[str, Path], module: str, names: list[str]) -> list[str]:
    """The library modules an import statement reaches: ``from a.b import c`` reaches a.b.c
    when that is a module, else a.b."""
    if not names:
        return [module] if module in modules else []
    out = []
    for name in names:
        full = f"{module}.{name}"
        out.append(full if full in modules else module)
    return [t for t in out if t in modules]


@functools.cache
def _graph(modules: tuple[tuple[str, Path], ...]) -> dict[str, frozenset[str]]:
    lookup = dict(modules)
    edges = {}
    for name, path in modules:
        edges[name] = frozenset(t for module, names, _ in _imports(path)
                                for t in _targets(lookup, module, names) if t != name)
    return edges


def graph(modules: dict[str, Path] | None = None) -> dict[str, frozenset[str]]:
    """Module -> the library modules it imports (the package's own modules by default)."""
    return _graph(tuple(sorted((modules or MODULES).items())))


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _package(module: str) -> str:
    """The top-level package a module belongs to (jaxbench.evaluator.judge.rules -> evaluator)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "jaxbench"


def _arrows(source_prefix: str, target_prefix: str,
            modules: dict[str, Path] | None = None) -> list[str]:
    """Imports from modules under ``source_prefix`` of modules under ``target_prefix``."""
    def under(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    return sorted(f"{a} -> {b}" for a, targets in graph(modules).items() if under(a, source_prefix)
                  for b in targets if under(b, target_prefix))


def test_no_import_cycle_between_modules():
    assert _cycles(graph()) == []


def test_no_import_cycle_between_packages():
    packages: dict[str, set[str]] = {}
    for a, targets in graph().items():
        packages.setdefault(_package(a), set()).update(
            _package(b) for b in targets if _package(b) != _package(a))
    assert _cycles(packages) == []


# Who runs each file (docs/architecture.md): arrows run parent -> judge -> common and
# sandbox -> common only.
EVALUATOR_ARROWS_FORBIDDEN = [
    ("jaxbench.evaluator.judge", "jaxbench.evaluator.sandbox"),  # the trusted side never loads
    ("jaxbench.evaluator.judge", "jaxbench.evaluator.parent"),
    ("jaxbench.evaluator.sandbox", "jaxbench.evaluator.judge"),  # candidate code's neighbours
    ("jaxbench.evaluator.sandbox", "jaxbench.evaluator.parent"),
    ("jaxbench.evaluator.parent", "jaxbench.evaluator.sandbox"),  # started by name, never imported
    ("jaxbench.evaluator.common", "jaxbench.evaluator.judge"),
    ("jaxbench.evaluator.common", "jaxbench.evaluator.sandbox"),
    ("jaxbench.evaluator.common", "jaxbench.evaluator.parent"),
]


# The judge by target: a shared core and a folder per target; the folders never import each other.
JUDGE_TARGETS_FORBIDDEN = [
    ("jaxbench.evaluator.judge.tpu", "jaxbench.evaluator.judge.gpu"),
    ("jaxbench.evaluator.judge.gpu", "jaxbench.evaluator.judge.tpu"),
]


def test_the_parent_reaches_the_judge_only_through_its_client():
    """Every import of the judge by the parent is in ``parent/judge_client.py``."""
    arrows = _arrows("jaxbench.evaluator.parent", "jaxbench.evaluator.judge")
    assert [a for a in arrows if not a.startswith("jaxbench.evaluator.parent.judge_client ")] == []


def test_the_judges_target_rules_live_in_the_target_folders():
    """The target-specific rules are modules of ``judge/tpu`` and ``judge/gpu``, each with
    something in it, and no module of the core is named after one target."""
    judge = PACKAGE / "evaluator" / "judge"
    for target in ("tpu", "gpu"):
        assert len([p for p in (judge / target).glob("*.py") if p.name != "__init__.py"]) >= 2
    assert not [p.name for p in judge.glob("*.py")
                if p.stem.startswith(("tpu", "gpu", "triton", "mosaic"))]


@pytest.mark.parametrize("source, target", EVALUATOR_ARROWS_FORBIDDEN + JUDGE_TARGETS_FORBIDDEN + [
    ("jaxbench.executors", "jaxbench.validation"),  # an executor runs any job it is handed
    ("jaxbench.executors", "jaxbench.runs"),
    ("jaxbench.tasks", "jaxbench.evaluator"),  # tasks are data
])
def test_forbidden_arrow(source, target):
    assert _arrows(source, target) == []


def test_every_evaluator_module_is_in_one_of_the_four_rooms():
    """Under jaxbench.evaluator, only the face (``__init__``) and two tools that join the sides
    on purpose live outside parent/, sandbox/, judge/ and common/: ``doctor`` (which probes
    what this machine offers each side) and ``inprocess`` (the checks of both sides in one
    process, for trusted kernels only: the validator, kernel authors, the overhead benchmark).
    Nothing in the four rooms imports them."""
    rooms = ("parent", "sandbox", "judge", "common")
    tools = ("jaxbench.evaluator.doctor", "jaxbench.evaluator.inprocess")
    loose = [name for name in MODULES if name.startswith("jaxbench.evaluator.")
             and name.split(".")[2] not in rooms and name not in tools]
    assert loose == []
    assert [a for room in rooms for t in tools
            for a in _arrows(f"jaxbench.evaluator.{room}", t)] == []


def _beyond_the_contract(path: Path) -> list[str]:
    """Imports in ``path`` of anything but the standard library and jaxbench.contract itself."""
    return [f"{path.name}:{line}: {module}" for module, _, line in _imports(path)
            if module != "__future__" and module.split(".")[0] not in sys.stdlib_module_names
            and not (module == "jaxbench.contract" or module.startswith("jaxbench.contract."))]


def test_the_contract_imports_only_the_standard_library_and_itself():
    """Every package may import the contract (statuses, stages, rule codes, the records), so
    it imports nothing of theirs: no process's code (evaluator/, serve/, agents/, ...), no
    facts of a host (backends/), no JAX."""
    contract = [path for name, path in MODULES.items()
                if name == "jaxbench.contract" or name.startswith("jaxbench.contract.")]
    assert len(contract) >= 2
    assert [hit for path in contract for hit in _beyond_the_contract(path)] == []


def test_no_library_module_imports_the_cli():
    """The CLI is the top layer: nothing outside jaxbench.cli imports it."""
    offenders = [arrow for arrow in _arrows("jaxbench", "jaxbench.cli")
                 if not arrow.startswith("jaxbench.cli")]
    assert offenders == []


def test_tasks_import_only_the_task_registry():
    """Task modules (and the registry) import nothing of jaxbench outside jaxbench.tasks."""
    offenders = []
    for path in (PACKAGE / "tasks").rglob("*.py"):
        for module, _, line in _imports(path):
            if module.split(".")[0] == "jaxbench" and not module.startswith("jaxbench.tasks"):
                offenders.append(f"{path.relative_to(SRC)}:{line}: {module}")
    assert offenders == []


def _public_names(face: str) -> set[str]:
    """The ``__all__`` of a package's ``__init__`` (its face), read from the source."""
    path = MODULES[face]
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def test_the_cli_calls_only_public_names():
    """A command imports from the library only names a package's face lists in ``__all__``
    (not a module inside a package, not a private name)."""
    faces = {name for name, path in MODULES.items() if path.name == "__init__.py"}
    offenders = []
    for name, path in MODULES.items():
        if not name.startswith("jaxbench.cli"):
            continue
        for module, names, line in _imports(path):
            if module.split(".")[0] != "jaxbench" or module.startswith("jaxbench.cli"):
                continue
            where = f"{path.relative_to(SRC)}:{line}"
            if module not in faces or not names:
                offenders.append(f"{where}: imports {module} (not a package's face)")
                continue
            offenders += [f"{where}: {module}.{n} is not in its __all__"
                          for n in names if n not in _public_names(module)]
    assert offenders == []


def test_commands_live_only_in_the_cli():
    """click is imported only under jaxbench.cli: no library module defines a command."""
    offenders = [f"{path.relative_to(SRC)}" for name, path in MODULES.items()
                 if not name.startswith("jaxbench.cli")
                 and any(m.split(".")[0] == "click" for m, _, _ in _imports(path))]
    assert offenders == []


def test_every_listed_command_loads_and_is_listed_as_click_would_list_it():
    import importlib

    from jaxbench.cli import COMMANDS, short_help

    for name, (module, attribute) in COMMANDS.items():
        command = getattr(importlib.import_module(f"jaxbench.cli.{module}"), attribute)
        assert command.name == name
        assert short_help(name) == command.get_short_help_str(limit=70), name


def run_without_jax(arg_lists: str, exit_code: int | None = None) -> subprocess.CompletedProcess:
    """Runs ``jaxbench ARGS`` for each ARGS of the Python expression ``arg_lists`` in one fresh
    process and fails when one of them imported JAX (or exited other than ``exit_code``)."""
    check = "" if exit_code is None else f"        assert exc.code == {exit_code}, (args, exc.code)\n"
    code = (
        "import sys\nfrom jaxbench.cli import COMMANDS, main\n"
        f"for args in {arg_lists}:\n"
        "    try:\n        main(args)\n    except SystemExit as exc:\n" + (check or "        pass\n") +
        "    assert 'jax' not in sys.modules, f'{args} imported jax'\n"
        "print('no jax')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "no jax" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]
    return out


def test_no_command_help_imports_jax():
    """`jaxbench --help` and `jaxbench COMMAND --help` start without importing JAX (each
    command's module imports the library inside the command)."""
    out = run_without_jax("[['--help']] + [[name, '--help'] for name in COMMANDS]")
    assert "optimize" in out.stdout and "validate" in out.stdout  # every command is listed


def test_usage_errors_that_need_no_jax_come_before_it():
    """A missing kernel file or --kernels directory is refused at once (exit 2), before the
    command imports JAX (seconds on a small machine)."""
    out = run_without_jax("(['eval', 'no_such.py', '--task', '8p_gemm'], ['run', '--kernels', 'no_such'])",
                          exit_code=2)
    assert "kernel file 'no_such.py' does not exist" in out.stderr
    assert ("--kernels must be seed, seed_mosaic, seed_mosaic_legacy, expert or a directory; "
            "'no_such' is none") in out.stderr


def test_the_rules_see_an_arrow_that_breaks_them(tmp_path):
    """The graph reader itself: a cycle and a forbidden arrow written into copies are found."""
    fake = {"jaxbench.a": tmp_path / "a.py", "jaxbench.b": tmp_path / "b.py",
            "jaxbench.evaluator.judge.x": tmp_path / "x.py",
            "jaxbench.evaluator.sandbox.y": tmp_path / "y.py"}
    fake["jaxbench.a"].write_text("def f():\n    from jaxbench.b import g\n")
    fake["jaxbench.b"].write_text("from jaxbench import a\n")
    fake["jaxbench.evaluator.judge.x"].write_text("def f():\n    import jaxbench.evaluator.sandbox.y\n")
    fake["jaxbench.evaluator.sandbox.y"].write_text("")
    assert _cycles(graph(fake)) == [["jaxbench.a", "jaxbench.b"]]
    assert _arrows("jaxbench.evaluator.judge", "jaxbench.evaluator.sandbox", fake) == [
        "jaxbench.evaluator.judge.x -> jaxbench.evaluator.sandbox.y"]
    contract = tmp_path / "records.py"
    contract.write_text("import json\nfrom jaxbench.contract.codes import Rule\n"
                        "def f():\n    import numpy\n    from jaxbench.backends.host import versions\n")
    assert _beyond_the_contract(contract) == ["records.py:4: numpy",
                                              "records.py:5: jaxbench.backends.host"]


def test_no_function_of_100_lines_or_class_of_250():
    """Readable rooms: outside the task catalogue, every function (nested ones counted in
    their outer function) is under 100 lines and every class under 250."""
    long = []
    for name, path in MODULES.items():
        if name.startswith("jaxbench.tasks"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            limit = 250 if isinstance(node, ast.ClassDef) else 100
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                    and node.end_lineno - node.lineno + 1 >= limit:
                long.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}: "
                            f"{node.end_lineno - node.lineno + 1} lines")
    assert long == []
