"""The tracer's integrity snapshot (sandbox/integrity.py): what it reports, and that checking
runs none of the candidate's code (it compares identities, never calls ``__eq__``/``__repr__``
of objects the candidate put in place)."""

from __future__ import annotations

import sys
import types

import jax
import pytest

from jaxbench.evaluator.sandbox import integrity

pytestmark = pytest.mark.quick  # the quick tier (`pytest -m quick`): the whole module


@pytest.fixture
def watched_module(monkeypatch):
    """A throwaway module under a watched prefix (``jaxbench.``), with a function and a class."""
    module = types.ModuleType("jaxbench._integrity_probe")

    def helper(x):
        return x + 1

    class Thing:
        def method(self):
            return 1

    helper.__module__ = Thing.__module__ = module.__name__
    module.helper, module.Thing = helper, Thing
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


def test_unchanged_is_clean(watched_module):
    snap = integrity.snapshot()
    assert integrity.changed(snap) == ""


def test_replaced_function_is_reported(watched_module):
    snap = integrity.snapshot()
    watched_module.helper = lambda x: x
    assert "jaxbench._integrity_probe.helper" in integrity.changed(snap)


def test_swapped_code_object_is_reported(watched_module):
    snap = integrity.snapshot()
    watched_module.helper.__code__ = (lambda x: x).__code__
    assert "jaxbench._integrity_probe.helper" in integrity.changed(snap)


def test_replaced_method_is_reported(watched_module):
    snap = integrity.snapshot()
    watched_module.Thing.method = lambda self: 2
    assert "jaxbench._integrity_probe.Thing.method" in integrity.changed(snap)


def test_replaced_module_is_reported(watched_module, monkeypatch):
    snap = integrity.snapshot()
    monkeypatch.setitem(sys.modules, watched_module.__name__, types.ModuleType("other"))
    assert "sys.modules['jaxbench._integrity_probe']" in integrity.changed(snap)


def test_config_change_is_reported():
    option = "jax_default_matmul_precision"
    before = jax.config.values[option]
    snap = integrity.snapshot()
    jax.config.update(option, "highest" if before != "highest" else "bfloat16")
    try:
        assert f"jax.config.{option}" in integrity.changed(snap)
    finally:
        jax.config.update(option, before)
    assert integrity.changed(snap) == ""


def test_values_are_compared_without_running_their_code():
    calls = []

    class Hostile(str):
        def __eq__(self, other):
            calls.append("eq")
            return True

        __hash__ = str.__hash__

    assert not integrity._same("highest", Hostile("highest"))
    assert not integrity._same(Hostile("highest"), "highest")
    assert integrity._same("highest", "".join(["high", "est"]))  # equal plain values
    assert calls == []
