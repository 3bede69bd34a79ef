"""Every `jaxbench ...` command line in the README and docs/ parses: the command exists, every
option is one it takes, every value is one it accepts and, for the command lines of code
blocks, nothing required is missing (an inline mention such as `jaxbench run --out DIR` may
leave out what the text does not discuss; a synopsis's `[--out FILE]` and `a|b|c` are read
as options and alternatives). Nothing runs: click builds each command's context and stops."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from jaxbench.cli import COMMANDS, main

pytestmark = pytest.mark.quick  # the quick tier (`pytest -m quick`): the whole module

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
INLINE = re.compile(r"`(jaxbench [^`]+)`")
SHELL_END = re.compile(r"\s(#|\||&&|;|>|2>)(\s|$)")


def _fenced_lines(text: str) -> list[str]:
    """Command lines in fenced code blocks, continuation lines (ending in \\) joined."""
    lines, inside, pending = [], False, ""
    for raw in text.splitlines():
        if raw.lstrip().startswith("```"):
            inside, pending = not inside, ""
            continue
        if not inside:
            continue
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        lines.append(line)
    return lines


def documented_commands() -> list[tuple[str, str, bool]]:
    """(where, command line, complete) for each distinct `jaxbench <command> ...` in the
    documents; complete: from a code block, so nothing required may be missing."""
    found: dict[str, tuple[str, bool]] = {}
    for path in DOCUMENTS:
        text = path.read_text()
        for line, complete in [(x, True) for x in _fenced_lines(text)] + \
                [(x, False) for x in INLINE.findall(text)]:
            line = line.removeprefix("$ ").strip()
            words = line.split()
            if len(words) < 2 or words[0] != "jaxbench" or words[1] not in COMMANDS:
                continue
            line = SHELL_END.split(line)[0].strip()
            where, seen_complete = found.get(line, (path.relative_to(ROOT).as_posix(), False))
            found[line] = (where, seen_complete or complete)
    return [(where, line, complete) for line, (where, complete) in found.items()]


def _variants(line: str) -> list[list[str]]:
    """The argument lists a synopsis stands for: brackets dropped, each `a|b|c` once each."""
    words = shlex.split(line.replace("[", " ").replace("]", " ").replace("\\|", "|"))
    choices = [w.split("|") if "|" in w else [w] for w in words]
    width = max(len(c) for c in choices)
    return [[c[min(i, len(c) - 1)] for c in choices] for i in range(width)]


def parse(words: list[str], complete: bool) -> None:
    """Builds the command's context (raises click's usage errors). For an inline mention, a
    missing required parameter gets a stand-in so that the rest is still checked."""
    command = main.get_command(click.Context(main), words[1])
    args = words[2:]
    for _ in range(10):
        try:
            command.make_context(words[1], list(args))
            return
        except click.exceptions.MissingParameter as exc:
            if complete or exc.param is None:
                raise
            kind = exc.param.type
            value = kind.choices[0] if isinstance(kind, click.Choice) else "X"
            args += [value] if isinstance(exc.param, click.Argument) else [exc.param.opts[0], value]
    raise AssertionError(f"{words}: too many missing parameters")


COMMAND_LINES = documented_commands()


def test_the_documents_hold_commands_of_every_kind():
    named = {line.split()[1] for _, line, _ in COMMAND_LINES}
    assert sum(complete for _, _, complete in COMMAND_LINES) >= 25
    assert named >= {"run", "eval", "optimize", "report", "compare", "export", "export-tasks",
                     "validate"}


@pytest.mark.parametrize("where, line, complete", COMMAND_LINES,
                         ids=[line for _, line, _ in COMMAND_LINES])
def test_documented_command_parses(where, line, complete):
    for words in _variants(line):
        try:
            parse(words, complete)
        except click.exceptions.ClickException as exc:
            pytest.fail(f"{where}: `{shlex.join(words)}`: {exc.format_message()}")


@pytest.mark.parametrize("line, complete", [
    ("jaxbench run --kernels seed --no-such-option", False),  # no such option
    ("jaxbench eval k.py --task 8p_gemm --mode fast", False),  # not one of the choices
    ("jaxbench export RUN --format parquet|json", False),  # one alternative is not a choice
    ("jaxbench optimize --method best_of_n --tasks 8p_gemm --out runs/x", True),  # no --model
])
def test_a_broken_command_line_is_caught(line, complete):
    """The check itself."""
    with pytest.raises(click.exceptions.UsageError):
        for words in _variants(line):
            parse(words, complete)
