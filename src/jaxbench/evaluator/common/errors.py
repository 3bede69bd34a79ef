"""Exceptions as the evaluator's messages quote them: the tracer's failures and the judge's."""

from __future__ import annotations

import re


def short_error(exc: BaseException, limit: int = 600) -> str:
    """The useful part of an exception: its type and the first lines of its message."""
    text = str(exc).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if "Traceback (most recent call last)" in text:
        # An error raised inside a host callback (the interpreters run kernels that way):
        # the embedded traceback's last exception line is the real cause.
        causes = [ln.strip() for ln in lines if re.match(r"\s*[\w.]+(Error|Exception)\b", ln)]
        if causes:
            lines = [causes[-1]]
    # JAX appends long tracebacks-in-messages; the head says what went wrong.
    head = " | ".join(lines[:4]) if lines else ""
    msg = f"{type(exc).__name__}: {head}" if head else type(exc).__name__
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."
