"""Detects a candidate that monkeypatches harness code (JAX, NumPy, the timer, jaxbench).

Before the candidate loads, the worker records the identity of every callable
attribute of the modules the harness relies on; afterwards any replaced or
deleted one is reported. Lazily added attributes are fine: only existing
callables are compared.
"""

from __future__ import annotations

import sys
from typing import Any

WATCHED_PREFIXES = ("jax", "jaxlib", "numpy", "ml_dtypes", "jaxbench", "time", "json", "builtins",
                    "os", "math", "functools")


def _watched() -> list[tuple[str, Any]]:
    return [(name, mod) for name, mod in list(sys.modules.items())
            if mod is not None and name.split(".")[0] in WATCHED_PREFIXES]


def snapshot() -> dict[tuple[str, str], int]:
    """(module, attribute) -> id() of every callable module attribute in the watched modules."""
    taken: dict[tuple[str, str], int] = {}
    for name, mod in _watched():
        try:
            items = list(vars(mod).items())
        except TypeError:
            continue
        for attr, value in items:
            if callable(value) and not attr.startswith("__"):
                taken[(name, attr)] = id(value)
    return taken


def changed(before: dict[tuple[str, str], int], limit: int = 3) -> str:
    """A short description of replaced/deleted callables, or '' when nothing changed."""
    found = []
    for (name, attr), ident in before.items():
        mod = sys.modules.get(name)
        value = getattr(mod, attr, None) if mod is not None else None
        if value is None or id(value) != ident:
            found.append(f"{name}.{attr}")
            if len(found) >= limit:
                break
    return ", ".join(found)
