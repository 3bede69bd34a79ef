"""What a newcomer reads first says what they need: the README's quick start names the install
the HTML report needs, and docs/tasks.md the input specs' ``dtype=`` and its default."""

from __future__ import annotations

import inspect
from pathlib import Path

from jaxbench.tasks import spec

ROOT = Path(__file__).resolve().parents[1]


def test_the_quick_start_names_the_install_the_html_report_needs():
    """The quick start installs without the results extra (`pip install -e .`), so it names
    the command that adds what `report --html` needs (the error without it names it too:
    tests/test_report_html.py)."""
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "pip install -e . &&" in quick_start
    assert "--html" in quick_start and "pip install -e '.[results]'" in quick_start


def test_tasks_md_documents_the_dtype_of_the_input_specs_and_its_defaults():
    text = " ".join((ROOT / "docs" / "tasks.md").read_text().split())
    defaults = {name: inspect.signature(getattr(spec, name)).parameters["dtype"].default
                for name in ("normal", "weight", "uniform", "randint", "custom")}
    assert defaults == {"normal": "bfloat16", "weight": "bfloat16", "uniform": "bfloat16",
                        "randint": "int32", "custom": "int32"}
    assert "Each takes `dtype=`: **`normal`, `weight` and `uniform` default to `\"bfloat16\"`**, " \
           "`randint` and `custom` to `\"int32\"`" in text
    assert "Inputs are bfloat16 unless a spec says `dtype=`" in text
    assert 'normal("x", shape, dtype="float32")' in text
