"""Whose fault a failure of the judge's tools is: the kernel's, or the tool's own (trusted side).

The judge runs JAX's tools on the handed-over jaxpr: the TPU interpreter, the Mosaic GPU
interpreter, Pallas' lowering for the chip, the interpret-mode run (and, in the parent,
Triton's compiler). When one of them raises, the question is where the error arose.

No Python of the kernel's ever runs here (the hand-over holds JAX's own primitives and
allow-listed data; host callbacks are refused), so no frame of a traceback in this process is
the kernel's. What the kernel's program did shows up as a *deliberate* error of the tool: a
``raise`` statement in JAX's code that diagnoses the program (an out-of-bounds access the TPU
interpreter detected, a refused construct, a failed check). Those stay the kernel's: the chip
refuses them too. A race found or a wrong value are the kernel's by construction (they are not
exceptions). What is not the kernel's is a *crash inside the tool's own code*: an exception
raised by a Python operation in JAX's source (a missing key, a missing attribute, a wrong
argument count, an index past a list's end) rather than by a ``raise`` statement, or a failed
``assert`` of JAX's own invariants. That is a bug of the tool, whatever the kernel: the verdict
names it (the innermost JAX frame, the JAX version, the known bug where it is one) and is
``unverified`` or a warning, never a failure charged to the kernel.

The tracebacks read here are the judge's own: the exceptions are created in this process by
JAX's code, so their frames are facts (an exception raised inside a host callback of JAX's
interpreters is taken from JAX's callback logger, with its real traceback, not parsed from the
text of the error that crosses XLA).
"""

from __future__ import annotations

import contextlib
import importlib.util
import linecache
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# Exceptions Python raises by itself when code goes wrong (a lookup, an attribute, a call, an
# index, an unpacking, an assertion): a crash, when raised by a line that is not a `raise`.
BUG_TYPES = (KeyError, AttributeError, TypeError, IndexError, NameError, AssertionError,
             ZeroDivisionError, ValueError)
# Wrappers that only carry another exception (Pallas' lowering adds the failing equation; an
# error inside a host callback reaches the caller as a runtime error of XLA's).
WRAPPERS = ("LoweringException", "LoweringError", "JaxRuntimeError", "XlaRuntimeError",
            "UnfilteredStackTrace")
# JAX's host-callback logger, which logs every exception a callback raises, with its traceback.
CALLBACK_LOGGER = "jax._src.callback"


@dataclass(frozen=True)
class KnownBug:
    """A bug of JAX's tools met on kernels JAX documents as supported."""

    tool: str  # as ToolFault.tool names it
    error: str  # the exception's type name
    words: str  # words of its message
    versions: tuple[str, ...]  # the JAX versions it is known in
    what: str  # when it happens


# JAX bugs met, with the versions that have them (docs/evaluator.md, "Faults of the tools").
KNOWN_BUGS = (
    KnownBug("the TPU interpreter", "KeyError", "OrderedIOEffect", ("0.10.2",),
             "the interpreter's ordered io_callback effect is missing from an enclosing call's "
             "effects (seen with Tokamax's custom_vjp ragged dot, task 14p)"),
    KnownBug("the TPU interpreter", "AttributeError",
             "'ReshapeTransform' object has no attribute", ("0.10.2",),
             "a ref reshaped inside the kernel (jax.experimental.pallas.ops.tpu."
             "ragged_paged_attention)"),
    KnownBug("JAX's interpret-mode lowering", "AttributeError",
             "'TypedInt' object has no attribute", ("0.10.2",),
             "a typed-integer operand of a kernel (ragged_paged_attention's)"),
)


@dataclass(frozen=True)
class ToolFault:
    """A crash inside a tool's own code."""

    tool: str  # "the TPU interpreter", "JAX's lowering for tpu", ...
    error: str  # "KeyError: OrderedIOEffect"
    frame: str  # the innermost frame of the tool's: "jax/_src/interpreters/mlir.py:1234 in f"
    version: str  # "JAX 0.10.2"
    known: str = ""  # the known bug's description, where it is one

    def describe(self) -> str:
        known = f"; a known bug of {self.version}: {self.known}" if self.known else ""
        return (f"{self.tool} crashed inside its own code ({self.version}, at {self.frame}): "
                f"{self.error}{known}. Not the kernel's fault")

    def as_dict(self) -> dict[str, str]:
        return {"tool": self.tool, "error": self.error, "frame": self.frame,
                "version": self.version, "known": self.known, "text": self.describe()}


def _roots() -> dict[str, str]:
    """The tools' packages: source directory -> the name shown for it."""
    roots = {}
    for name in ("jax", "jaxlib", "tokamax", "triton"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin:
            roots[os.path.dirname(os.path.realpath(spec.origin))] = name
    return roots


_ROOTS: dict[str, str] | None = None


def _tool_path(filename: str) -> str | None:
    """``jax/_src/...py`` for a file inside one of the tools' packages, else None."""
    global _ROOTS
    if _ROOTS is None:
        _ROOTS = _roots()
    path = os.path.realpath(filename)
    for root, name in _ROOTS.items():
        if path.startswith(root + os.sep):
            return name + "/" + os.path.relpath(path, root)
    return None


def _traceback(exc: BaseException) -> Any:
    """The exception's full traceback (JAX may have moved it to an UnfilteredStackTrace)."""
    cause = exc.__cause__
    if cause is not None and type(cause).__name__ == "UnfilteredStackTrace":
        return cause.__traceback__
    return exc.__traceback__


def _innermost(exc: BaseException) -> tuple[str, int, str] | None:
    tb, last = _traceback(exc), None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None:
        return None
    code = last.tb_frame.f_code
    return code.co_filename, last.tb_lineno, code.co_name


def _statement(filename: str, line: int) -> str:
    """The source line, stripped ('' when it is not readable). Python reports a multi-line
    ``raise`` statement at its first line, and an error inside an expression at that
    expression's line."""
    return linecache.getline(filename, line).strip()


def _diagnosis(exc: BaseException) -> BaseException:
    """The exception that says what went wrong: the first in the chain from ``exc`` inwards
    that is not a mere wrapper of another (through ``raise ... from``)."""
    seen = set()
    while type(exc).__name__ in WRAPPERS and exc.__cause__ is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc.__cause__).__name__ == "UnfilteredStackTrace":
            break
        exc = exc.__cause__
    return exc


def classify(exc: BaseException, tool: str) -> ToolFault | None:
    """A :class:`ToolFault` when ``exc`` is a crash inside the tool's own code (an exception of
    :data:`BUG_TYPES` whose innermost frame is in JAX's, jaxlib's, Tokamax's or Triton's
    source, raised there by a Python operation rather than a ``raise`` statement, or a failed
    ``assert``); None when it is the tool's deliberate diagnosis of the kernel, or not known to
    be the tool's."""
    import jax

    exc = _diagnosis(exc)
    if not isinstance(exc, BUG_TYPES) or isinstance(exc, NotImplementedError):
        return None
    where = _innermost(exc)
    if where is None:
        return None
    filename, line, function = where
    shown = _tool_path(filename)
    if shown is None:
        return None
    statement = _statement(filename, line)
    if not isinstance(exc, AssertionError):
        if not statement or statement.startswith("raise"):
            return None  # a deliberate error (or one whose line cannot be read): not a crash
    text = str(exc).strip().splitlines()
    error = f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__
    version = jax.__version__
    known = next((b.what for b in KNOWN_BUGS
                  if b.tool == tool and b.error == type(exc).__name__
                  and b.words in str(exc) and version in b.versions), "")
    return ToolFault(tool, error, f"{shown}:{line} in {function}", f"JAX {version}", known)


def diagnosis(exc: BaseException) -> BaseException:
    """The exception that says what went wrong, past the wrappers that only carry it."""
    return _diagnosis(exc)


def jax_frame(exc: BaseException) -> tuple[str, int, str, str] | None:
    """Where JAX raised ``exc`` (past the wrappers that only carry another exception): the
    innermost frame of its traceback whose file is inside the ``jax`` or ``jaxlib`` package, as
    ``(package-relative file, line, function, the source line)``; None when none is."""
    exc = _diagnosis(exc)
    tb, found = _traceback(exc), None
    while tb is not None:
        code = tb.tb_frame.f_code
        shown = _tool_path(code.co_filename)
        if shown is not None and shown.split("/", 1)[0] in ("jax", "jaxlib"):
            found = (shown, tb.tb_lineno, code.co_name, _statement(code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    return found


# What Python raises when the harness itself is broken (a missing module or name): never a
# finding about a kernel, never swallowed by a check that "decides nothing".
HARNESS_BUG_TYPES = (ImportError, NameError, AttributeError)
_OWN_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def _own_path(filename: str) -> str | None:
    """``jaxbench/...py`` for a file of jaxbench's own source, else None."""
    path = os.path.realpath(filename)
    if path.startswith(_OWN_ROOT + os.sep):
        return "jaxbench/" + os.path.relpath(path, _OWN_ROOT)
    return None


def _innermost_real(exc: BaseException) -> tuple[str, int, str] | None:
    """The innermost frame of ``exc``'s traceback that is a file (not the import system's
    frozen modules)."""
    tb, found = _traceback(exc), None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not code.co_filename.startswith("<"):
            found = (code.co_filename, tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return found


def harness_bug(exc: BaseException) -> bool:
    """Whether ``exc`` is a bug of jaxbench's own code: an ImportError, NameError or
    AttributeError whose innermost frame is in jaxbench's source."""
    if not isinstance(exc, HARNESS_BUG_TYPES):
        return False
    where = _innermost_real(exc)
    return where is not None and _own_path(where[0]) is not None


def check_fault(exc: BaseException, tool: str, consequence: str) -> dict[str, str]:
    """A failure of one of the judge's own checks that decides nothing, as the response's
    ``tool_faults`` list holds them (the keys of :meth:`ToolFault.as_dict`): named by its
    innermost frame, with ``consequence`` (what the verdict rests on instead) in its text."""
    import jax

    text = str(exc).strip().splitlines()
    error = f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__
    where = _innermost_real(exc)
    frame = ""
    if where is not None:
        filename, line, function = where
        shown = _tool_path(filename) or _own_path(filename) or os.path.basename(filename)
        frame = f"{shown}:{line} in {function}"
    version = f"JAX {jax.__version__}"
    return {"tool": tool, "error": error, "frame": frame, "version": version, "known": "",
            "text": f"{tool} failed ({version}, at {frame or 'an unknown place'}): {error}. "
                    f"{consequence}"}


class _Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.exceptions: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and isinstance(record.exc_info[1], BaseException) \
                and len(self.exceptions) < 8:
            self.exceptions.append(record.exc_info[1])


@contextlib.contextmanager
def watch() -> Iterator[list[BaseException]]:
    """Within: JAX keeps whole tracebacks (its filtering of its own frames is off), and the
    list yielded collects the exceptions JAX's host callbacks raised (as JAX's callback logger
    logs them), first first. JAX's interpreters run their memory model in host callbacks; an
    error there reaches the caller only as the text of an XLA runtime error."""
    from jax._src import config

    handler = _Captured()
    logger = logging.getLogger(CALLBACK_LOGGER)
    logger.addHandler(handler)
    filtering = getattr(config, "traceback_filtering", None)
    try:
        with filtering("off") if filtering is not None else contextlib.nullcontext():
            yield handler.exceptions
    finally:
        logger.removeHandler(handler)


def classify_run(exc: BaseException, captured: list[BaseException], tool: str
                 ) -> ToolFault | None:
    """:func:`classify` for an error of a run: the first exception a host callback raised,
    when one did (the error the run reports carries only its text), else ``exc`` itself."""
    if captured and type(_diagnosis(exc)).__name__ in WRAPPERS:
        return classify(captured[0], tool)
    return classify(exc, tool)


def classify_frames(error_type: str, message: str, frames: list[tuple[str, int, str, str]],
                    tool: str, version: str) -> ToolFault | None:
    """The same rule for a traceback read in another process (Triton's compiler worker):
    ``frames`` as ``(package-relative file or '', line, function, statement)``, innermost
    last; a frame outside the tool's package has ''."""
    bug_names = {t.__name__ for t in BUG_TYPES} | {"UnboundLocalError"}
    if error_type not in bug_names or not frames:
        return None
    shown, line, function, statement = frames[-1]
    if not shown:
        return None
    if error_type != "AssertionError" and (not statement or statement.startswith("raise")):
        return None
    first = message.strip().splitlines()
    error = f"{error_type}: {first[0][:200]}" if first else error_type
    return ToolFault(tool, error, f"{shown}:{line} in {function}", version)


__all__ = ["HARNESS_BUG_TYPES", "KNOWN_BUGS", "KnownBug", "ToolFault", "check_fault", "classify",
           "classify_frames", "classify_run", "diagnosis", "harness_bug", "jax_frame", "watch"]
