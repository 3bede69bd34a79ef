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


# -- a snapshot taken early (a spare tracer's, before its job came) and refreshed -----------------

def _probe(name: str) -> types.ModuleType:
    module = types.ModuleType(name)

    def fn():
        return 1

    fn.__module__ = name
    module.fn = fn
    return module


def test_a_refreshed_snapshot_takes_what_the_harness_changed_as_its_baseline(watched_module):
    """What changed between the early snapshot and the refresh (the guards replace callables
    of ``os`` and ``threading`` there) is the baseline, not a finding; what changes after the
    refresh is reported as ever."""
    snap = integrity.snapshot()
    watched_module.helper = lambda x: x  # the harness's own change, before the job
    snap.refresh()
    assert integrity.changed(snap) == ""
    watched_module.helper = lambda x: 2 * x  # the candidate's
    assert "jaxbench._integrity_probe.helper" in integrity.changed(snap)


def test_a_refreshed_snapshot_watches_modules_imported_and_callables_added_since(
        watched_module, monkeypatch):
    """A module the job's imports load after the early snapshot, and a function added to a
    module already recorded, are watched after the refresh: replacing either is reported."""
    snap = integrity.snapshot()
    late = _probe("jaxbench._integrity_late")
    monkeypatch.setitem(sys.modules, late.__name__, late)

    def added():
        return 3

    watched_module.added = added
    snap.refresh()
    assert integrity.changed(snap) == ""
    late.fn = lambda: 0
    assert "jaxbench._integrity_late.fn" in integrity.changed(snap)
    watched_module.added = lambda: 0
    assert "jaxbench._integrity_probe.added" in integrity.changed(snap)
    watched_module.Thing.later = lambda self: 4  # a method added to a class, then replaced
    snap.refresh()
    watched_module.Thing.later = lambda self: 0
    assert "jaxbench._integrity_probe.Thing.later" in integrity.changed(snap)


def test_a_snapshot_not_refreshed_misses_a_late_module(monkeypatch):
    """The control of the test above: without the refresh, a module loaded after the snapshot
    is not watched (so the refresh is what watches it)."""
    snap = integrity.snapshot()
    late = _probe("jaxbench._integrity_late2")
    monkeypatch.setitem(sys.modules, late.__name__, late)
    late.fn = lambda: 0
    assert integrity.changed(snap) == ""
