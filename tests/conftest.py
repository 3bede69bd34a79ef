"""Shared fixtures: CPU-only JAX, one warm evaluator per test session."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Triton's compiler (the optional `triton` extra) adds seconds to every GPU evaluation: off for
# the suite, on in tests/test_triton_compile.py.
os.environ.setdefault("JAXBENCH_TRITON_COMPILE", "0")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def evaluator():
    from jaxbench.evaluator import Evaluator

    with Evaluator(spares=1) as ev:
        yield ev


def pytest_collection_modifyitems(config, items):
    """The mutation checks (tests/mutations/, marker `mutation`) each start a pytest process on
    a mutated copy of the package: minutes in all. They run when asked for with ``-m`` (CI runs
    ``-m mutation`` as a second step, .ci/run) and are left out of a plain run."""
    if "mutation" in (config.getoption("markexpr") or ""):
        return
    kept = [item for item in items if item.get_closest_marker("mutation") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept
