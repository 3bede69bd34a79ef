"""Terminal output shared by the command modules (the CLI and the commands that live beside
their library code, ``validate`` and ``optimize``): one-line usage errors and rich consoles.
Nothing here imports the CLI, so library modules may use it."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn

import click


def usage_error(message: str) -> NoReturn:
    """Prints ``jaxbench: error: <message>`` on stderr and exits 2."""
    click.echo(f"jaxbench: error: {message}", err=True)
    sys.exit(2)


def console(stderr: bool = False) -> Any:
    """A rich console; wide tables when piped to a file or CI log (rich falls back to 80
    columns there)."""
    from rich.console import Console

    width = None if (sys.stderr if stderr else sys.stdout).isatty() else 160
    return Console(stderr=stderr, highlight=False, width=width)


EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


class StopSignals:
    """Ctrl-C and SIGTERM for long commands: the first one stops the work in an orderly way, a
    second one (or a stop that takes longer than ``grace_s``) exits at once.

    While active, SIGINT and SIGTERM do not raise in the main thread: the C-level handler
    writes the signal to a pipe that a watcher thread reads, so the signal is seen even
    while the main thread is busy inside a long native call. On the first signal the watcher
    sets :attr:`event`, records :attr:`signum` and calls ``on_stop`` (e.g. kill the worker
    processes); the command then winds down and calls :meth:`exit`. ``on_stop`` is called
    again right before a forced exit. Use from the main thread only.
    """

    def __init__(self, on_stop: Callable[[], None] | None = None, grace_s: float = 30.0,
                 message: str | None = None) -> None:
        self.on_stop = on_stop
        self.grace_s = grace_s
        self.message = message
        self.event = threading.Event()
        self.signum: int | None = None
        self.stopped_at: float | None = None
        self._old: dict[int, Any] = {}
        self._old_fd = -1
        self._pipe: tuple[int, int] | None = None
        self._watcher: threading.Thread | None = None

    def is_set(self) -> bool:
        return self.event.is_set()

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.signum or signal.SIGINT, 130)

    def __enter__(self) -> StopSignals:
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        self._pipe = (read_fd, write_fd)
        for signum in EXIT_CODES:
            self._old[signum] = signal.signal(signum, lambda *_: None)
        self._old_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        self._watcher = threading.Thread(target=self._watch, name="jaxbench-signals", daemon=True)
        self._watcher.start()
        return self

    def __exit__(self, *exc: object) -> None:
        signal.set_wakeup_fd(self._old_fd)
        for signum, handler in self._old.items():
            signal.signal(signum, handler)
        if self._pipe is not None:
            os.close(self._pipe[1])  # ends the watcher (a running stop keeps its timer)
        if self._watcher is not None and not self.event.is_set():
            # Wait for it: a daemon thread still winding down at interpreter exit drops the
            # last reference to what ``on_stop`` holds (an evaluator and its cached JAX
            # arrays) while Python finalizes, and jaxlib then aborts the process.
            self._watcher.join(timeout=5)
            self.on_stop = None

    def _watch(self) -> None:
        assert self._pipe is not None
        while True:
            try:
                data = os.read(self._pipe[0], 64)
            except OSError:
                return
            if not data:
                os.close(self._pipe[0])
                return
            for signum in data:
                if signum not in EXIT_CODES:
                    continue
                if not self.event.is_set():
                    self.signum = signum
                    self.stopped_at = time.monotonic()
                    self.event.set()
                    if self.message:
                        click.echo(self.message, err=True)
                    self._call_on_stop(wait_s=None)
                    timer = threading.Timer(self.grace_s, self._force)
                    timer.daemon = True
                    timer.start()
                else:
                    self._force()

    def _call_on_stop(self, wait_s: float | None) -> None:
        """``on_stop`` in a thread of its own, so a slow one never blocks the next signal;
        waits up to ``wait_s`` for it (None: not at all)."""
        if self.on_stop is None:
            return

        def call() -> None:
            try:
                self.on_stop()  # type: ignore[misc]
            except Exception as exc:  # noqa: BLE001 - a stop must never fail to stop
                click.echo(f"jaxbench: while stopping: {exc}", err=True)

        thread = threading.Thread(target=call, name="jaxbench-stop", daemon=True)
        thread.start()
        if wait_s is not None:
            thread.join(wait_s)

    def _force(self) -> None:
        self._call_on_stop(wait_s=2.0)
        self.exit()

    def exit(self) -> NoReturn:
        """Leaves at once with 130 (SIGINT) or 143 (SIGTERM), skipping interpreter teardown
        (threads still winding down are not waited for; everything kept is on disk)."""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(self.exit_code)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def progress_interval_s() -> float:
    """Seconds between plain progress lines when stderr is not a terminal
    (``JAXBENCH_PROGRESS_INTERVAL``, default 30)."""
    try:
        return max(0.2, float(os.environ.get("JAXBENCH_PROGRESS_INTERVAL", "30")))
    except ValueError:
        return 30.0


class JobProgress:
    """Progress of ``total`` jobs on stderr. On a terminal: a live bar with the elapsed time and
    an ETA. Otherwise (CI logs, ``nohup``, ``| tee``): one plain line per finished job, and a
    line every :func:`progress_interval_s` seconds while none finishes, each with done/total,
    failures so far, elapsed time and ETA. ``done`` jobs (reused from an earlier, resumed run)
    count as finished but not towards the ETA's pace."""

    def __init__(self, total: int, description: str, *, done: int = 0, disable: bool = False,
                 stream: Any = None, failed_word: str = "failed", unit: str = "jobs") -> None:
        self.total, self.description, self.disable = total, description, disable
        self.failed_word, self.unit = failed_word, unit  # "12 <failed_word> so far", "N <unit>"
        self.done = self.reused = done
        self.failed = 0
        self._stream = stream if stream is not None else sys.stderr
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._started = time.monotonic()
        self._last_line = self._started
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._live: Any = None
        self._bar: Any = None
        self._beat: threading.Thread | None = None

    def eta_s(self) -> float | None:
        fresh = self.done - self.reused
        if fresh <= 0:
            return None
        return (time.monotonic() - self._started) / fresh * (self.total - self.done)

    def status(self) -> str:
        eta = self.eta_s()
        return (f"{self.failed} {self.failed_word} so far, "
                f"{_duration(time.monotonic() - self._started)} "
                f"elapsed, ETA {_duration(eta) if eta is not None else 'unknown'}")

    def __enter__(self) -> JobProgress:
        if self.disable:
            return self
        if self._tty:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._live = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                                  MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                                  TimeRemainingColumn(), TextColumn("{task.fields[last]}"),
                                  console=console(stderr=True), transient=False)
            self._live.__enter__()
            self._bar = self._live.add_task(self.description, total=self.total,
                                            completed=self.done, last="")
        else:
            self._line(f"{self.description}: {self.total} {self.unit}"
                       + (f", {self.done} reused from the run directory" if self.done else ""))
            self._beat = threading.Thread(target=self._heartbeat, name="jaxbench-progress",
                                          daemon=True)
            self._beat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed.set()
        if self._beat is not None:  # no thread of ours is left running at interpreter exit
            self._beat.join(timeout=5)
        if self._live is not None:
            self._live.__exit__(*exc)

    def advance(self, label: str, failed: bool = False) -> None:
        with self._lock:
            self.done += 1
            self.failed += bool(failed)
            if self.disable:
                return
            if self._live is not None:
                self._live.update(self._bar, advance=1, last=label)
            else:
                self._line(f"[{self.done}/{self.total}] {label} ({self.status()})")

    def _line(self, text: str) -> None:
        self._last_line = time.monotonic()
        try:
            print(text, file=self._stream, flush=True)
        except (OSError, ValueError):
            pass

    def _heartbeat(self) -> None:
        interval = progress_interval_s()
        while not self._closed.wait(min(interval, 1.0)):
            with self._lock:
                if time.monotonic() - self._last_line >= interval and self.done < self.total:
                    self._line(f"[{self.done}/{self.total}] running ({self.status()})")
