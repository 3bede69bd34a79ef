"""Running the service: the app on uvicorn, one process, started by ``jaxbench serve``."""

from __future__ import annotations

import ipaddress
import signal
import socket
import sys
from typing import Any, NoReturn

from jaxbench.serve.auth import Authenticator, Principal
from jaxbench.serve.service import ServeConfig, Service


class ServeSetupError(ValueError):
    """Settings the service cannot start with (one line, for the command's usage error)."""


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ServeSetupError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def run_server(config: ServeConfig, tokens: dict[str, Principal], *, host: str = "127.0.0.1",
               port: int = 8000, allow_open: bool = False, max_body_bytes: int | None = None,
               openenv: bool = True, log_level: str = "warning") -> None:
    """Serves until SIGINT or SIGTERM; then stops taking work, aborts the evaluations in flight
    (they stay queued in the run directory) and returns. Without tokens, only a loopback
    ``host`` is allowed unless ``allow_open``."""
    import uvicorn

    from jaxbench.serve.app import create_app

    if not tokens and not is_loopback(host) and not allow_open:
        raise ServeSetupError(f"--host {host} is reachable from other machines: give tokens "
                              "(--tokens FILE or JAXBENCH_SERVE_TOKENS), or --insecure-no-auth")
    sock = bind(host, port)
    service = Service(config)
    # the line goes out as the app stops the service: uvicorn then re-raises the signal it
    # caught (SIGTERM kills the process; SIGINT is a KeyboardInterrupt, below)
    said: list[bool] = []

    def stopped() -> None:
        said.append(True)
        print(stopped_line(service.unfinished(), config.out), file=sys.stderr, flush=True)

    app = create_app(service, Authenticator(tokens), max_body_bytes=max_body_bytes, openenv=openenv,
                     on_stopped=stopped)
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    resumed = service.status()["queue_length"]
    print(f"jaxbench serve: listening on http://{shown}:{bound[1]} ({config.workers} workers, "
          f"executor {config.executor}, run directory {config.out}"
          f"{f', {resumed} queued submissions resumed' if resumed else ''}; "
          f"{'tokens required' if tokens else 'no tokens: loopback only'}; API docs at /docs; "
          f"{openenv_text(openenv, getattr(app.state, 'openenv', False))})",
          file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, lifespan="on",
                                           timeout_graceful_shutdown=5, access_log=False))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # Ctrl-C: the stop line is the last word, not click's "aborted"
        _stopped_by_ctrl_c(said, service, config)
    # uvicorn re-raises a caught SIGINT once it has stopped, but asyncio's runner can take it
    # as a cancel of a task that has already finished, and then run() returns (seen under load)
    if signal.SIGINT in getattr(server, "_captured_signals", ()):
        _stopped_by_ctrl_c(said, service, config)


def _stopped_by_ctrl_c(said: list[bool], service: Service, config: ServeConfig) -> NoReturn:
    if not said:
        print(stopped_line(service.unfinished(), config.out), file=sys.stderr, flush=True)
    raise SystemExit(130) from None


def openenv_text(asked: bool, mounted: bool) -> str:
    """What the start line says of the OpenEnv environment."""
    if mounted:
        return "OpenEnv at /openenv"
    if not asked:
        return "OpenEnv not mounted (--no-openenv)"
    return "OpenEnv not mounted: openenv-core is not installed (pip install -e '.[openenv]')"


def stopped_line(queued: int, out: Any) -> str:
    """The one line ``jaxbench serve`` prints when it stops: what stays queued, and where."""
    if not queued:
        return f"jaxbench serve: stopped; nothing stays queued (run directory {out})"
    return (f"jaxbench serve: stopped; {queued} submission{'s' if queued != 1 else ''} "
            f"stay{'s' if queued == 1 else ''} queued in {out} and resume when "
            f"`jaxbench serve --out {out}` starts again")


def make_config(**options: Any) -> ServeConfig:
    """A :class:`ServeConfig` from keyword options (unknown ones are an error)."""
    return ServeConfig(**options)


__all__ = ["ServeSetupError", "bind", "is_loopback", "make_config", "openenv_text", "run_server",
           "stopped_line"]
