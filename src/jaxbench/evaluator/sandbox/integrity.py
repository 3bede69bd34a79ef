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
from typing import Any

WATCHED_PREFIXES = ("jax", "jaxlib", "numpy", "ml_dtypes", "jaxbench", "time", "json", "builtins",
                    "os", "math", "functools", "operator", "typing", "threading")
# Classes whose methods are compared too (patching a method is as good as patching a function).
CLASS_PREFIXES = ("jax", "jaxlib", "numpy", "jaxbench")
_CONFIG = "<jax.config>"


def _watched() -> list[tuple[str, Any]]:
    return [(name, mod) for name, mod in list(sys.modules.items())
            if mod is not None and name.split(".")[0] in WATCHED_PREFIXES]


def _config_values() -> dict[str, str]:
    jax = sys.modules.get("jax")
    values = getattr(getattr(jax, "config", None), "values", None)
    if not isinstance(values, dict):
        return {}
    return {k: repr(v) for k, v in values.items()}


def snapshot() -> dict[tuple[str, str], Any]:
    """(module, attribute) -> id() of every watched callable, plus JAX's config values."""
    taken: dict[tuple[str, str], Any] = {}
    for name, mod in _watched():
        try:
            items = list(vars(mod).items())
        except TypeError:
            continue
        classes = name.split(".")[0] in CLASS_PREFIXES
        for attr, value in items:
            if callable(value) and not attr.startswith("__"):
                taken[(name, attr)] = id(value)
                if classes and isinstance(value, type) and value.__module__ == name:
                    for meth, fn in list(vars(value).items()):
                        if callable(fn) or isinstance(fn, (staticmethod, classmethod, property)):
                            taken[(f"{name}.{attr}", f"#{meth}")] = id(fn)
    for option, value in _config_values().items():
        taken[(_CONFIG, option)] = value
    return taken


def _current(name: str, attr: str) -> Any:
    if name == _CONFIG:
        return _config_values().get(attr)
    if attr.startswith("#"):  # a class member: module.Class, #member
        mod_name, _, cls_name = name.rpartition(".")
        cls = getattr(sys.modules.get(mod_name), cls_name, None)
        fn = vars(cls).get(attr[1:]) if isinstance(cls, type) else None
        return None if fn is None else id(fn)
    mod = sys.modules.get(name)
    value = getattr(mod, attr, None) if mod is not None else None
    return None if value is None else id(value)


def changed(before: dict[tuple[str, str], Any], limit: int = 3) -> str:
    """A short description of replaced/deleted callables or changed config, '' when none."""
    found = []
    for (name, attr), ident in before.items():
        if _current(name, attr) != ident:
            found.append(f"jax.config.{attr}" if name == _CONFIG
                         else f"{name}.{attr.lstrip('#')}")
            if len(found) >= limit:
                break
    return ", ".join(found)
