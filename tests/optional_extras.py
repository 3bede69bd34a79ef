"""Skipping tests that need an optional extra which is not installed: the reason names the
pip command that adds it, as the triton, openenv and shinka tests do."""

import pytest

# the module each optional extra installs, by the extra's name in pyproject.toml
EXTRA_MODULES = {"tokamax": "tokamax", "triton": "triton"}


def reason(extra: str) -> str:
    return f"the optional `{extra}` extra is not installed (pip install -e '.[{extra}]')"


def require(extra: str):
    """The extra's module, or skip the calling test with the pip command that installs it."""
    return pytest.importorskip(EXTRA_MODULES[extra], reason=reason(extra))
