"""The trusted runner's persistent XLA compilation cache, for the task's own programs only.

On a chip, XLA compiling the task's reference (the timing's baseline), its float32 truth and
its input drawing is most of the owner's work per evaluation, and the same programs come back
in every run. JAX's persistent compilation cache keeps them on disk, so a second run of the
same (task, size, chip, versions) compiles none of them.

- Where: :func:`directory`, ``$JAXBENCH_XLA_CACHE`` or ``$XDG_CACHE_HOME/jaxbench/xla``
  (``~/.cache/jaxbench/xla``), made with mode 0700 and refused when another user owns it or
  it is a link. ``JAXBENCH_XLA_CACHE=off`` (or ``--no-cache``) uses none.
- Who: the trusted runner alone. The untrusted tracer never gets the path (its environment is
  a fixed list, :data:`jaxbench.evaluator.parent.pool._TRACER_ENV`) and is sealed from opening
  files anyway.
- What is written: only what compiles inside :func:`task_side` (a thread's own setting of
  JAX's minimum compile time for the cache, 0 there and "never" elsewhere), so a candidate's
  module is never written; a candidate module that is bit for bit a task program would be read
  back (the key is a hash of the whole module and the compile options), which is the same
  executable.
- What it counted: :func:`counting` gives a thread's hits and misses (JAX's monitoring
  events, reported in the calling thread).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

ENV = "JAXBENCH_XLA_CACHE"
OFF = frozenset({"0", "off", "no", "none", "false"})
NEVER_S = 1e9  # JAX's minimum compile time outside task_side(): nothing else is written
_LOCK = threading.Lock()
_STATE: dict[str, str | None] = {"dir": None, "why": None}
_LOCAL = threading.local()
_LISTENING = [False]
T = TypeVar("T")


def directory() -> Path | None:
    """The cache's directory (None where the environment turns the cache off)."""
    named = os.environ.get(ENV, "").strip()
    if named.lower() in OFF and named:
        return None
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jaxbench" / "xla"


def prepare(path: Path) -> str:
    """Makes ``path`` this user's directory with mode 0700; '' when it is, else why not."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
            return f"{path} is not a directory (a link is refused)"
        if info.st_uid != os.getuid():
            return f"{path} belongs to another user"
        if stat.S_IMODE(info.st_mode) != 0o700:
            os.chmod(path, 0o700)
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    return ""


def describe() -> str:
    """For ``jaxbench doctor``: the directory and whether it is usable."""
    path = directory()
    if path is None:
        return f"off ({ENV}={os.environ.get(ENV)})"
    where = f"{path} (made with mode 0700 on first use; {ENV} moves it, {ENV}=off or " \
        "--no-cache turns it off)"
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return where + ", not made yet"
    except OSError as exc:
        return f"{path}: unusable: {exc.strerror or exc}"
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        return f"{path}: unusable: not a directory (a link is refused)"
    if info.st_uid != os.getuid():
        return f"{path}: unusable: it belongs to another user"
    entries = sum(1 for _ in path.iterdir()) if os.access(path, os.R_OK) else 0
    return where + f", {entries} entries"


def enable() -> str | None:
    """Points this process's JAX at the cache once (the runner, on a request that wants it);
    the directory, or None where there is none (the reason in :func:`why_not`)."""
    with _LOCK:
        if _STATE["dir"] is None and _STATE["why"] is None:
            path = directory()
            why = "turned off by the environment" if path is None else prepare(path)
            if why:
                _STATE["why"] = why
            else:
                import jax

                jax.config.update("jax_persistent_cache_min_compile_time_secs", NEVER_S)
                jax.config.update("jax_compilation_cache_dir", str(path))
                _STATE["dir"] = str(path)
            _listen()
        return _STATE["dir"]


def why_not() -> str | None:
    return _STATE["why"]


def _listen() -> None:
    if _LISTENING[0]:
        return
    from jax._src import monitoring

    def heard(event: str, **_: object) -> None:
        counts = getattr(_LOCAL, "counts", None)
        if counts is None:
            return
        if event == "/jax/compilation_cache/cache_hits":
            counts["hits"] += 1
        elif event == "/jax/compilation_cache/cache_misses":
            counts["misses"] += 1

    monitoring.register_event_listener(heard)
    _LISTENING[0] = True


@contextlib.contextmanager
def task_side(on: bool = True) -> Iterator[None]:
    """Compiles inside are the task's own programs: written to the cache (when it is enabled
    and ``on``). The setting is this thread's alone."""
    if not on or _STATE["dir"] is None:
        yield
        return
    from jax._src import config

    outer = getattr(_LOCAL, "task_side", False)
    _LOCAL.task_side = True
    try:
        with config.persistent_cache_min_compile_time_secs(0.0):
            yield
    finally:
        _LOCAL.task_side = outer


def carried(fn: Callable[[], T]) -> Callable[[], T]:
    """``fn`` for another thread, with this thread's setting and counts: its compiles there are
    written (inside :func:`task_side` here) and counted (inside :func:`counting` here) as if
    they ran here. The judge compiles a task's programs side by side this way."""
    side = bool(getattr(_LOCAL, "task_side", False))
    counts = getattr(_LOCAL, "counts", None)

    def run() -> T:
        with task_side(side), counting() as mine:
            try:
                return fn()
            finally:
                if counts is not None:
                    with _LOCK:
                        counts["hits"] += mine["hits"]
                        counts["misses"] += mine["misses"]

    return run


@contextlib.contextmanager
def counting() -> Iterator[dict[str, int]]:
    """The cache's hits and misses in this thread while inside."""
    outer = getattr(_LOCAL, "counts", None)
    counts = {"hits": 0, "misses": 0}
    _LOCAL.counts = counts
    try:
        yield counts
    finally:
        _LOCAL.counts = outer
        if outer is not None:
            outer["hits"] += counts["hits"]
            outer["misses"] += counts["misses"]


__all__ = ["ENV", "carried", "counting", "describe", "directory", "enable", "prepare", "task_side",
           "why_not"]
