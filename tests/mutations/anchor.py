"""Where a mutant applies, by what formatting and rewording leave alone.

A mutant names a *unit* of a source file: a function, method or class by its qualified name
(``Class.method``, ``outer.inner``), a module- or class-level name by its assignment
(``_HINTS``, ``Class.LIMIT``), or ``""`` for the whole file. In that unit, its ``original``
must match exactly one place once both are *squeezed*: whitespace (line breaks, indentation)
and Python comments removed, ``'`` read as ``"``, and a backslash before a quote and a comma
before a closing bracket dropped. That place's text is replaced by ``mutated``, re-indented
to where it now lies. So ``ruff format`` (line breaks, quotes, trailing commas) and a reworded
comment move no mutant; a unit or a match that is missing or found twice is an error, never
a skip.
"""

from __future__ import annotations

import ast
import functools
import io
import textwrap
import tokenize


class AnchorError(AssertionError):
    """The unit or the ``original`` is not found exactly once: update the entry to the source."""


def units(tree: ast.Module) -> dict[str, list[ast.stmt]]:
    """Every function, method and class of ``tree``, and every name assigned outside a
    function, under its qualified name; a name defined twice lists both."""
    found: dict[str, list[ast.stmt]] = {}

    def visit(node: ast.AST, prefix: str, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.setdefault(prefix + child.name, []).append(child)
                visit(child, f"{prefix}{child.name}.", not isinstance(child, ast.ClassDef))
                continue
            if isinstance(child, (ast.Assign, ast.AnnAssign)) and not in_function:
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        found.setdefault(prefix + target.id, []).append(child)
            if not isinstance(child, ast.expr):  # no definition lies in an expression
                visit(child, prefix, in_function)

    visit(tree, "", False)
    return found


@functools.lru_cache(maxsize=16)  # several mutants share a file
def _units_of(text: str) -> dict[str, list[ast.stmt]]:
    return units(ast.parse(text))


def _line_starts(text: str) -> list[int]:
    """The offset of each line of ``text`` (lines end at "\\n", as ast and tokenize count)."""
    return [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]


def _comments(text: str) -> set[int]:
    """Offsets of the characters of Python comments in ``text`` (a fragment may end inside
    brackets: the comments before that point)."""
    starts = _line_starts(text)
    skipped: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                begin = starts[token.start[0] - 1] + token.start[1]
                skipped.update(range(begin, begin + len(token.string)))
    except (tokenize.TokenError, SyntaxError):
        pass
    return skipped


def squeeze(text: str, python: bool = True) -> tuple[str, list[int]]:
    """``text`` as formatting leaves it, and the offset in ``text`` of each character kept."""
    skipped = _comments(text) if python else set()
    kept = [(i, '"' if c == "'" else c) for i, c in enumerate(text)
            if not (c.isspace() or i in skipped or c == "\\" and text[i + 1:i + 2] in ("'", '"'))]
    kept = [(i, c) for k, (i, c) in enumerate(kept)
            if not (c == "," and k + 1 < len(kept) and kept[k + 1][1] in ")]}")]
    return "".join(c for _, c in kept), [i for i, _ in kept]


def unit_span(text: str, where: str, python: bool = True) -> tuple[int, int]:
    """The offsets of the whole lines of the unit ``where`` in ``text`` (all of it for "")."""
    if not where:
        return 0, len(text)
    if not python:
        raise AnchorError(f"{where!r}: only a Python file has units; name '' for the whole file")
    nodes = _units_of(text).get(where, [])
    if len(nodes) != 1:
        raise AnchorError(f"the unit {where!r} is defined {len(nodes)} times")
    starts = _line_starts(text) + [len(text)]  # the end, also after a last line without "\n"
    return starts[nodes[0].lineno - 1], starts[nodes[0].end_lineno]


def locate(text: str, where: str, original: str, python: bool = True) -> tuple[int, int]:
    """The offsets in ``text`` of the one place of unit ``where`` that ``original`` matches."""
    begin, end = unit_span(text, where, python)
    body, offsets = squeeze(text[begin:end], python)
    pattern, _ = squeeze(original, python)
    places = [k for k in range(len(body)) if pattern and body.startswith(pattern, k)]
    if len(places) != 1:
        raise AnchorError(f"the original matches {len(places)} times in the unit "
                          f"{where or '(the file)'!r}")
    at = places[0]
    return begin + offsets[at], begin + offsets[at + len(pattern) - 1] + 1


def apply(text: str, where: str, original: str, mutated: str, python: bool = True) -> str:
    """``text`` with the place ``original`` matches in unit ``where`` replaced by ``mutated``:
    ``mutated`` is dedented, and its second and later lines take the indentation of the line
    the place starts on."""
    start, stop = locate(text, where, original, python)
    line = text[text.rfind("\n", 0, start) + 1:start]
    indent = line[:len(line) - len(line.lstrip())]
    lines = textwrap.dedent(mutated.strip("\n")).split("\n")
    block = "\n".join(lines[:1] + [indent + each if each else each for each in lines[1:]])
    end = text.find("\n", stop)
    after = text[stop:] if end < 0 else text[stop:end]
    if python and _comments(lines[-1]) and squeeze(after)[0]:
        raise AnchorError(f"the mutant's closing comment would hide {after.strip()!r}")
    return text[:start] + block + text[stop:]
