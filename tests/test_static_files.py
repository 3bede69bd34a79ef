"""Scripts ship as static files of the package, not as Python strings: the sample view's
JavaScript is ``report/sample_view.js`` (package data, read with importlib.resources), and no
string in src/ holds more than 50 lines of JavaScript."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "jaxbench"
JS_MARKS = re.compile(r"\bfunction\s*\(|\bdocument\.|\bwindow\.|\bvar\s+\w+\s*=|=>")


def _long_js_strings(path: Path, most: int = 50) -> list[str]:
    """Where a string constant of ``path`` holds more than ``most`` lines that read as
    JavaScript (a function, the document or window, a var, an arrow)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            lines = node.value.count("\n") + 1
            if lines > most and len(JS_MARKS.findall(node.value)) >= 3:
                found.append(f"{path}:{node.lineno} ({lines} lines)")
    return found


def test_no_python_string_in_src_holds_more_than_50_lines_of_javascript():
    found = [hit for path in sorted(SRC.rglob("*.py")) for hit in _long_js_strings(path)]
    assert found == []


def test_the_check_finds_a_long_script_in_a_string(tmp_path):
    script = "\n".join(["(function () {", "  var x = document.body;"] +
                       [f"  window.f{i} = function () {{ return {i}; }};" for i in range(60)] + ["})();"])
    module = tmp_path / "m.py"
    module.write_text(f"JS = {script!r}\n")
    assert len(_long_js_strings(module)) == 1


def test_the_sample_view_script_is_package_data():
    from jaxbench.report.sample_view import sample_script

    text = sample_script()
    assert text == (SRC / "report" / "sample_view.js").read_text()
    assert "INDEX.dir + '/' + INDEX.tasks[i].file" in text and len(text.splitlines()) > 300
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "*.js" in data["jaxbench.report"]
