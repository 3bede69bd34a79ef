"""Shared fixtures: CPU-only JAX, one warm evaluator per test session."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def evaluator():
    from jaxbench.evaluator import Evaluator

    with Evaluator(spares=1) as ev:
        yield ev
