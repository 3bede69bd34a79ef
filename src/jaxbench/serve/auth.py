"""Bearer tokens: who may call the service, and each caller's limits.

Tokens come from a file (``--tokens FILE``) or the environment (``JAXBENCH_SERVE_TOKENS``),
one per line (in the variable, separated by commas)::

    # name:token [quota=N] [concurrency=M]
    trainer:3f9c0d...  quota=20000 concurrency=64
    alice:77ab12...

``name`` is what the run directory and the metrics record (never the token itself); a line
with a bare token is named ``token1``, ``token2``, ... ``quota`` is submissions per quota
window (``--quota-window``, default an hour), ``concurrency`` unfinished submissions (queued
or running) at once; without them the service's defaults apply. Tokens are compared in
constant time. With no tokens at all the service accepts every caller as ``anonymous``, which
``jaxbench serve`` allows only on a loopback address.
"""

from __future__ import annotations

import hmac
import os
from dataclasses import dataclass
from pathlib import Path

TOKENS_ENV = "JAXBENCH_SERVE_TOKENS"
ANONYMOUS = "anonymous"
MIN_TOKEN_CHARS = 16


class TokenError(ValueError):
    """A tokens file or variable that cannot be used."""


@dataclass(frozen=True)
class Principal:
    """A caller: its name and its own limits (None: the service's default)."""

    name: str
    quota: int | None = None
    concurrency: int | None = None


def parse_tokens(text: str, where: str) -> dict[str, Principal]:
    """token -> principal, from the file format above."""
    tokens: dict[str, Principal] = {}
    names: set[str] = set()
    for number, raw in enumerate(text.replace(",", "\n").splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        head, *options = line.split()
        name, sep, token = head.partition(":")
        if not sep:
            name, token = f"token{len(tokens) + 1}", head
        if len(token) < MIN_TOKEN_CHARS:
            raise TokenError(f"{where}, entry {number}: a token needs at least {MIN_TOKEN_CHARS} "
                             "characters (e.g. python -c 'import secrets; print(secrets.token_hex(24))')")
        if not name or name == ANONYMOUS or name in names:
            raise TokenError(f"{where}, entry {number}: the name {name!r} is empty, reserved or "
                             "used twice")
        limits: dict[str, int] = {}
        for option in options:
            key, _, value = option.partition("=")
            if key not in ("quota", "concurrency") or not value.isdigit() or int(value) < 1:
                raise TokenError(f"{where}, entry {number}: {option!r}: use quota=N or "
                                 "concurrency=N (N >= 1)")
            limits[key] = int(value)
        if token in tokens:
            raise TokenError(f"{where}, entry {number}: the same token twice")
        names.add(name)
        tokens[token] = Principal(name, **limits)
    return tokens


def load_tokens(path: str | os.PathLike[str] | None = None) -> dict[str, Principal]:
    """The tokens of ``path``, else of ``JAXBENCH_SERVE_TOKENS``, else none."""
    if path is not None:
        return parse_tokens(Path(path).read_text(), str(path))
    text = os.environ.get(TOKENS_ENV, "")
    return parse_tokens(text, TOKENS_ENV) if text.strip() else {}


class Authenticator:
    """Maps an ``Authorization`` header to its principal (None: refused, HTTP 401)."""

    def __init__(self, tokens: dict[str, Principal]) -> None:
        self._tokens = [(token.encode(), principal) for token, principal in tokens.items()]

    @property
    def open(self) -> bool:
        """No tokens configured: every caller is ``anonymous``."""
        return not self._tokens

    def principal(self, authorization: str | None) -> Principal | None:
        if self.open:
            return Principal(ANONYMOUS)
        scheme, _, given = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return None
        offered = given.strip().encode()
        found = None
        for token, principal in self._tokens:  # every token compared, in constant time each
            if hmac.compare_digest(offered, token):
                found = principal
        return found


__all__ = ["ANONYMOUS", "TOKENS_ENV", "Authenticator", "Principal", "TokenError", "load_tokens",
           "parse_tokens"]
