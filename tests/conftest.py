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
