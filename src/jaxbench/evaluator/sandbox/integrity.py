"""Detects a candidate that monkeypatches harness code (JAX, NumPy, the timer, jaxbench).

Before the candidate loads, the worker records the identity of every callable
attribute of the modules the harness relies on, of the methods of the classes
those modules define (``jax.Array.block_until_ready``, the harness's own
classes), and the values of JAX's global configuration (matmul precision,
x64, ...); afterwards any replaced or deleted one is reported. Lazily added
attributes are fine: only what existed before is compared.
"""

from __future__ import annotations

import sys
from types import FunctionType
from typing import Any

WATCHED_PREFIXES = ("jax", "jaxlib", "numpy", "ml_dtypes", "jaxbench",
                    "time", "json", "builtins", "os", "math",  # other meaning: module names
                    "functools", "operator", "typing", "threading")
# Classes whose methods are compared too (patching a method is as good as patching a function).
CLASS_PREFIXES = ("jax", "jaxlib", "numpy", "jaxbench")
_CONFIG = "<jax.config>"


def _watched() -> list[tuple[str, Any]]:
    return [(name, mod) for name, mod in list(sys.modules.items())
            if mod is not None and name.split(".")[0] in WATCHED_PREFIXES]


def _config_values() -> dict[str, object]:
    jax = sys.modules.get("jax")
    values = getattr(getattr(jax, "config", None), "values", None)
    return dict(values) if isinstance(values, dict) else {}


# Values compared by equality when both are of one of these exact types (no code of the
# candidate's runs in their ``==``); anything else is compared by identity.
_PLAIN = (bool, int, float, complex, str, bytes, type(None))


def _same(before: Any, now: Any) -> bool:
    return before is now or (type(before) is type(now) and type(before) in _PLAIN
                             and before == now)


def _code(value: Any) -> Any:
    """A plain function's code object (a function whose ``__code__`` was swapped is the same
    object doing something else), else None."""
    return value.__code__ if type(value) is FunctionType else None


class Snapshot:
    """Every watched callable (module attributes, and the members of the classes JAX, NumPy
    and jaxbench define), its code object when it is a plain function, and JAX's config values.

    Compared by identity through the module and class dictionaries recorded here: checking
    calls no code (no ``getattr`` hooks, no ``__eq__`` of anything but plain values) and
    takes a few milliseconds."""

    def __init__(self) -> None:
        # name -> (module, its namespace, the namespace's size then, its callables' entries)
        self._modules: dict[str, tuple[Any, dict[str, Any], int, list[tuple[str, Any, Any]]]] = {}
        # module name -> [(label, class members, their size then, the callable members)]
        self._classes: dict[str, list[tuple[str, Any, int, list[tuple[str, Any]]]]] = {}
        for name, mod in _watched():
            self._record(name, mod)
        self.config = _config_values()

    def _record(self, name: str, mod: Any) -> None:
        try:
            namespace = vars(mod)
        except TypeError:
            return
        items = list(namespace.items())
        classes = name.split(".")[0] in CLASS_PREFIXES
        entries, members_of = [], []
        for attr, value in items:
            if callable(value) and not attr.startswith("__"):
                entries.append((attr, value, _code(value)))
                if classes and isinstance(value, type) and value.__module__ == name:
                    members = vars(value)
                    members_of.append((f"{name}.{attr}", members, len(members), [
                        (meth, fn) for meth, fn in list(members.items())
                        if callable(fn) or isinstance(fn, (staticmethod, classmethod,
                                                           property))]))
        self._modules[name] = (mod, namespace, len(items), entries)
        self._classes[name] = members_of

    def refresh(self) -> None:
        """Brings a snapshot taken early (in a spare tracer, before its job came) up to now, at
        about the cost of :meth:`changed`: every watched module imported since is recorded, and
        so is again every module whose namespace, or one of whose classes, changed since (an
        attribute replaced, added or removed), with its classes. Only the harness's own code
        may have run since the snapshot was taken (the guards' disarming replaces callables of
        ``os`` and ``threading``, the job's imports add modules): what it left is the baseline,
        as if the snapshot had been taken now."""
        modules = sys.modules
        for name, mod in _watched():
            known = self._modules.get(name)
            if known is None or known[0] is not mod or self._moved(name):
                self._record(name, mod)
        for name in [n for n in self._modules if modules.get(n) is not self._modules[n][0]]:
            del self._modules[name]  # a module the harness dropped: not the candidate's doing
            self._classes.pop(name, None)
        self.config = _config_values()

    def _moved(self, name: str) -> bool:
        _mod, namespace, size, entries = self._modules[name]
        if len(namespace) != size or any(
                namespace.get(attr) is not value or (code is not None and value.__code__ is not code)
                for attr, value, code in entries):
            return True
        return any(len(members) != n or any(members.get(meth) is not fn for meth, fn in found)
                   for _label, members, n, found in self._classes.get(name, ()))

    def changed(self, limit: int = 3) -> str:
        """A short description of replaced or deleted callables, swapped code objects or
        changed config values; '' when none."""
        found: list[str] = []
        modules = sys.modules
        for name, (mod, namespace, _size, entries) in self._modules.items():
            if modules.get(name) is not mod:
                found.append(f"sys.modules[{name!r}]")
            for attr, value, code in entries:
                now = namespace.get(attr)
                if now is not value or (code is not None and now.__code__ is not code):
                    found.append(f"{name}.{attr}")
                    break
            if len(found) >= limit:
                return ", ".join(found[:limit])
        for label, members, _size, entries in (c for cs in self._classes.values() for c in cs):
            for meth, fn in entries:
                if members.get(meth) is not fn:
                    found.append(f"{label}.{meth}")
                    break
            if len(found) >= limit:
                return ", ".join(found[:limit])
        config = _config_values()
        for option, value in self.config.items():
            if option not in config or not _same(value, config[option]):
                found.append(f"jax.config.{option}")
                if len(found) >= limit:
                    break
        return ", ".join(found[:limit])


def snapshot() -> Snapshot:
    """The watched callables and JAX's config values, taken before the candidate loads."""
    return Snapshot()


def changed(before: Snapshot, limit: int = 3) -> str:
    """What was replaced or deleted since ``before`` (see :meth:`Snapshot.changed`)."""
    return before.changed(limit)


# -- rule tables and primitives ------------------------------------------------------------
# JAX keeps per-primitive rules (MLIR lowerings, per-platform lowerings, Pallas's Mosaic,
# Triton and Mosaic GPU lowerings, state discharge used by the interpreters, ...) in module-level
# dicts keyed by primitive. A rule the candidate adds or replaces can make one operation lower
# to different computations per platform, so the module checked (tpu / cuda) is not the module
# run (the CPU interpret export). Every such table is fingerprinted before the candidate loads.

def _primitive_type() -> Any:
    core = sys.modules.get("jax._src.core")
    return getattr(core, "Primitive", None)


def _rule_fingerprint(value: Any) -> tuple[int, ...]:
    """Identity of a rule and of what a rule function is made of (code, defaults, closure)."""
    parts = [id(value)]
    for attr in ("__code__", "__defaults__", "__kwdefaults__", "func", "args", "keywords"):
        try:
            parts.append(id(getattr(value, attr, None)))
        except Exception:  # noqa: BLE001 - an odd descriptor: its identity is enough
            parts.append(0)
    closure = getattr(value, "__closure__", None) or ()
    for cell in closure:
        try:
            parts.append(id(cell.cell_contents))
        except ValueError:  # an empty cell
            parts.append(0)
    return tuple(parts)


def _is_rule_table(table: Any, primitive: Any) -> bool:
    try:
        keys = list(table)[:64]
    except Exception:  # noqa: BLE001
        return False
    return any(isinstance(k, primitive) for k in keys)


def _rule_tables() -> dict[str, dict[Any, Any]]:
    """name -> table for every dict keyed by primitives in JAX's loaded modules (and tables of
    such tables one level down, e.g. lowerings per platform or per kernel type)."""
    primitive = _primitive_type()
    if primitive is None:
        return {}
    tables: dict[str, dict[Any, Any]] = {}
    seen: set[int] = set()
    for name, mod in list(sys.modules.items()):
        if mod is None or name.split(".")[0] not in ("jax", "jaxlib"):
            continue
        try:
            items = list(vars(mod).items())
        except TypeError:
            continue
        for attr, value in items:
            if not isinstance(value, dict) or not value or id(value) in seen:
                continue
            if _is_rule_table(value, primitive):
                seen.add(id(value))
                tables[f"{name}.{attr}"] = value
                continue
            for key, inner in list(value.items())[:64]:
                if isinstance(inner, dict) and id(inner) not in seen and \
                        _is_rule_table(inner, primitive):
                    seen.add(id(inner))
                    tables[f"{name}.{attr}[{key!r}]"[:160]] = inner
    return tables


class RuleSnapshot:
    """The rule tables and the primitives JAX defines, taken before the candidate loads."""

    def __init__(self) -> None:
        primitive = _primitive_type()
        self.tables = {name: (table, {id(k): _rule_fingerprint(v) for k, v in list(table.items())})
                       for name, table in _rule_tables().items()}
        known: set[int] = set()
        for _table, entries in self.tables.values():
            known.update(entries)
        if primitive is not None:
            for name, mod in list(sys.modules.items()):
                if mod is None or name.split(".")[0] not in ("jax", "jaxlib"):
                    continue
                try:
                    values = list(vars(mod).values())
                except TypeError:
                    continue
                known.update(id(v) for v in values if isinstance(v, primitive))
        self.known_primitives = known
        # Primitives are kept alive by the tables and modules above, so ids are stable.

    def changed_rules(self, limit: int = 3) -> str:
        """Rules added, replaced or removed since the snapshot, '' when none. A rule for a
        primitive that did not exist then is reported only for known primitives: new
        primitives are refused where they are used (:meth:`unknown_primitives`)."""
        found: list[str] = []
        for name, (table, entries) in self.tables.items():
            current = {id(k): (k, v) for k, v in list(table.items())}
            for ident, (key, value) in current.items():
                before = entries.get(ident)
                if before is None and ident not in self.known_primitives:
                    continue
                if before != _rule_fingerprint(value):
                    found.append(f"{name}[{getattr(key, 'name', key)}]")
            if entries.keys() - current.keys():
                found.append(f"{name} (an entry was removed)")
            if len(found) >= limit:
                break
        return ", ".join(found[:limit])

    def unknown_primitives(self, primitives: Any) -> list[str]:
        """Names of primitives (objects) that JAX did not define before the candidate loaded."""
        return sorted({p.name for p in primitives if id(p) not in self.known_primitives})
