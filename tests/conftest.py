"""Shared fixtures: CPU-only JAX, one warm evaluator per test session.

Importing this file changes nothing in the process: the suite's environment is set by
:func:`pytest_configure`. The quick tier (`pytest -m quick`) is declared on the tests
themselves (``pytestmark = pytest.mark.quick`` or ``@pytest.mark.quick``; docs/development.md).
"""

import os
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parent.parent / "src")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Sets the suite's environment: CPU-only JAX, Triton's compiler off, unoptimized XLA.

    JAX reads JAX_PLATFORMS and XLA_FLAGS once, when it is first imported and its backend
    starts, so they must be set before that: pytest calls this hook (first among the
    configure hooks) after loading the plugins and this file, none of which imports JAX, and
    before collection imports the test modules, which do. Here rather than at import time so
    that importing the conftest has no side effects; the subprocesses tests start inherit the
    variables. A value the caller set is kept (an empty JAX_PLATFORMS counts as unset, as JAX
    counts it)."""
    if not os.environ.get("JAX_PLATFORMS"):
        os.environ["JAX_PLATFORMS"] = "cpu"
    # The package under test is this checkout's, in this process and in every process the
    # evaluator starts, even where the environment has another checkout installed (a second
    # worktree beside an editable install); or the copy JAXBENCH_TEST_SRC names (the mutation
    # checks' mutated package, tests/mutations/).
    src = os.environ.get("JAXBENCH_TEST_SRC") or SRC
    if sys.path[:1] != [src]:
        sys.path.insert(0, src)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if paths[:1] != [src]:
        os.environ["PYTHONPATH"] = os.pathsep.join([src, *(p for p in paths if p)])
    # Triton's compiler (the optional `triton` extra) adds seconds to every GPU evaluation:
    # off for the suite, on in tests/test_triton_compile.py.
    os.environ.setdefault("JAXBENCH_TRITON_COMPILE", "0")
    # The judge's compile cache of the task's programs (evaluator/judge/xla_cache.py) would be
    # the user's own (~/.cache/jaxbench/xla): off for the suite, on in test_compile_cache.py.
    os.environ.setdefault("JAXBENCH_XLA_CACHE", "off")
    # This process checks on the host CPU only, like the tracers and the CPU-only runner, which
    # the evaluator starts with this flag itself (evaluator/parent/pool.py): the many small
    # programs a test compiles and runs once compile faster unoptimized; numerics stay IEEE.
    if "--xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                                   + " --xla_backend_optimization_level=0").strip()


@pytest.fixture(scope="session")
def evaluator():
    from jaxbench.evaluator import Evaluator

    with Evaluator(spares=1) as ev:
        yield ev


@pytest.fixture
def seven_stage_matmul(tmp_path):
    """l1_matmul's GPU seed with num_stages=7 instead of 3: its dot operands, staged 7 deep,
    fit an H200's 227 KiB of shared memory per block and not an A100's 163 KiB (Triton itself
    allocates 196,608 bytes for sm_80)."""
    from pathlib import Path

    seed = Path(__file__).parents[1] / "src/jaxbench/tasks/pallasbench/l1_matmul/seed_gpu.py"
    text = seed.read_text()
    assert text.count("num_stages=3") == 1, "update the fixture to the seed's compiler params"
    path = tmp_path / "gpu_matmul_seven_stages.py"
    path.write_text(text.replace("num_stages=3", "num_stages=7"))
    return path



def pytest_collection_modifyitems(config, items):
    """The mutation checks (tests/mutations/, marker `mutation`) each start a pytest process on
    a mutated copy of the package: minutes in all. They run when asked for with ``-m`` (CI
    runs ``-m mutation`` as a second step, .ci/run) and are left out of a plain run."""
    if "mutation" in (config.getoption("markexpr") or ""):
        return
    kept = [item for item in items if item.get_closest_marker("mutation") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept
