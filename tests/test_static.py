"""The static policy: what a kernel file may not do, caught before anything runs."""

import pytest
from optional_extras import require

from jaxbench.contract import StageFailure
from jaxbench.evaluator.parent.static import check_source, declared_target

pytestmark = pytest.mark.quick  # the quick tier (`pytest -m quick`): the whole module

OK = """
import functools
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

def kernel(x):
    return x
"""


def test_a_plain_kernel_passes():
    check_source(OK)
    assert declared_target(OK) == "tpu"


@pytest.mark.parametrize("line,words", [
    ("import os", "import of 'os'"),
    ("import subprocess", "import of 'subprocess'"),
    ("import socket", "import of 'socket'"),
    ("import ctypes", "import of 'ctypes'"),
    ("import threading", "import of 'threading'"),
    ("import gc", "import of 'gc'"),
    ("import inspect", "import of 'inspect'"),
    ("import pickle", "import of 'pickle'"),
    ("import jaxbench", "import of 'jaxbench'"),
    ("from jaxbench.tasks import get_task", "jaxbench"),
    ("from jax._src import config", "jax._src"),
    ("from jax.experimental import io_callback", "io_callback"),
    ("y = jax.pure_callback", ".pure_callback"),
    ("jax.config.update('jax_default_matmul_precision', 'bfloat16')", ".config"),
    ("jnp.dot = lambda a, b: a", "assigning to an attribute of module 'jnp'"),
    ("x = eval('1')", "eval()"),
    ("exec('import os')", "exec()"),
    ("m = __import__('os')", "__import__()"),
    ("f = open('/tmp/x', 'w')", "open()"),
    ("g = kernel.__globals__", "__globals__"),
    ("s = ().__class__.__base__.__subclasses__()", "__subclasses__"),
    ("f = getattr(jax, 'con' + 'fig')", "getattr() needs a literal"),
    ("setattr(jnp, 'dot', None)", "setattr() on a module"),
    ("setattr(self_obj, '__class__', None)", "setattr() needs a literal, permitted"),
])
def test_policy_violations_are_rejected(line, words):
    with pytest.raises(StageFailure) as info:
        check_source(OK + "\n" + line + "\n")
    assert info.value.status == "rejected" and info.value.stage == "static"
    assert words in info.value.message


def test_syntax_error_is_a_compile_error():
    with pytest.raises(StageFailure) as info:
        check_source("def kernel(:\n")
    assert info.value.status == "compile_error"


def test_missing_kernel_is_a_compile_error():
    with pytest.raises(StageFailure) as info:
        check_source("import jax\n")
    assert info.value.status == "compile_error" and "kernel" in info.value.message


def _shipped_kernels(library_experts: bool) -> list:
    """The shipped seeds and experts; those written on an optional library (whose imports are
    judged from the installed package's layout), or the others."""
    from pathlib import Path

    from jaxbench.runs.jobs import OPTIONAL_LIBRARY_EXPERTS

    root = Path(__file__).parents[1] / "src/jaxbench/tasks/jaxbench"
    files = sorted([*root.glob("*/seed_*.py"), *root.glob("*/expert_*.py")])
    return [path for path in files
            if any(path.stem.startswith(kind) for kind in OPTIONAL_LIBRARY_EXPERTS) == library_experts]


def test_every_shipped_seed_and_expert_passes():
    files = _shipped_kernels(library_experts=False)
    assert len(files) >= 20
    for path in files:
        check_source(path.read_text(), str(path))


def test_every_shipped_library_expert_passes():
    require("tokamax")  # the only optional library experts are Tokamax's
    files = _shipped_kernels(library_experts=True)
    assert files
    for path in files:
        check_source(path.read_text(), str(path))


@pytest.mark.parametrize("line,words", [
    ("from jax import _src", "_src"),
    ("m = jnp.sys", ".sys"),
    ("m = functools.os", ".os"),
    ("m = functools.sys.modules", ".modules"),
    ("object.__setattr__(kernel, 'x', 1)", ".__setattr__"),
    ("object.__delattr__(kernel, 'x')", ".__delattr__"),
    ("c = ().__class__", ".__class__"),
    ("c = object.__base__", ".__base__"),
    ("e = ValueError().__traceback__", ".__traceback__"),
    ("n = '__globals__'", "'__globals__'"),
    ("n = 'system'", "'system'"),
    ("n = 'sys'", "'sys'"),
    ("n = 'jaxbench.tasks'", "'jaxbench.tasks'"),
    ("n = 'jax._src.config'", "'jax._src.config'"),
    ("import operator\nf = operator.attrgetter('sys.modules')", "'sys.modules'"),
    ("f = getattr(jax, '__dict__')", "getattr() needs a literal"),
    ("f = hasattr(jax, 'con' + 'fig')", "hasattr() needs a literal"),
    ("y = jax.debug.callback(print, 1)", ".debug"),
    ("f = eval", "use of 'eval'"),
    ("f = __import__", "use of '__import__'"),
])
def test_more_policy_violations_are_rejected(line, words):
    with pytest.raises(StageFailure) as info:
        check_source(OK + "\n" + line + "\n")
    assert info.value.status == "rejected" and info.value.stage == "static"
    assert words in info.value.message


def test_docstrings_and_safe_dunders_are_fine():
    check_source('"""Uses sys? no: a docstring may say \'sys\' or __globals__."""\n' + OK
                 + "\nname = kernel.__name__\nif __name__ == '__main__':\n    pass\n")


HONEST_SCAFFOLDING = OK + """
import json
import time
from dataclasses import dataclass


@dataclass
class Config:
    block: int = 128


class Model:
    def set_weights(self, **weights):
        for name, value in weights.items():
            if hasattr(self, name):
                setattr(self, name, value)
        return getattr(self, "block", None)


def benchmark(fn, *args, reps=10):
    started = time.perf_counter()
    for _ in range(reps):
        fn(*args)
    print(json.dumps({"ms": (time.perf_counter() - started) / reps * 1e3}))
"""


def test_honest_model_scaffolding_passes():
    check_source(HONEST_SCAFFOLDING)


@pytest.mark.parametrize("line,module", [("import torch", "torch"),
                                         ("from scipy import linalg", "scipy")])
def test_unavailable_library_is_a_compile_error_not_a_cheat(line, module):
    with pytest.raises(StageFailure) as info:
        check_source(OK + "\n" + line + "\n")
    assert (info.value.status, info.value.stage) == ("compile_error", "static")
    assert f"{module!r}" in info.value.message and "not available to kernels" in info.value.message


def test_parse_retries_cpythons_shared_recursion_depth_error(monkeypatch):
    """CPython 3.11's AST constructor can fail when two threads parse at once (gh-106905):
    static.parse serializes its own parses and retries one that meets the error anyway."""
    import ast

    from jaxbench.evaluator.parent import static

    calls = []
    real = ast.parse

    def flaky(source, filename="<unknown>"):
        calls.append(filename)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=144, after=16)")
        return real(source, filename=filename)

    monkeypatch.setattr(ast, "parse", flaky)
    assert isinstance(static.parse("x = 1", "k.py"), ast.Module) and calls == ["k.py", "k.py"]
    calls.clear()
    monkeypatch.setattr(ast, "parse", lambda *a, **k: (_ for _ in ()).throw(SystemError("other")))
    with pytest.raises(SystemError, match="other"):
        static.parse("x = 1")
