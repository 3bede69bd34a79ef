"""Run directories: ``manifest.json`` plus an append-only ``events.jsonl``; every evaluated
kernel source under ``sources/<sha256>.py``; for optimize runs, ``best/<task>.py``.

Every candidate, LLM call and evaluation result is one JSON line, flushed and
fsynced as it is written, so a killed run loses at most the line in flight and
resumes from what is on disk. Nothing secret is on disk while a run is open: the secret that
correctness inputs derive from lives in this process's memory only. Each *segment* of a run
(its first start, and each resume) draws a fresh one; the manifest's ``secret_sha256`` commits
to the current segment's, and each segment's ``run_start`` event records its own commitment.
Every ``run_end`` reveals its segment's secret for auditing: the final one, and the one an
interrupt (Ctrl-C or SIGTERM) writes, with ``interrupted: true`` and the command that resumes
it (``resume``); a resume draws a fresh secret, so revealing the old one gives nothing away.
Evaluations recorded before a resume keep their verdicts. A segment killed outright (SIGKILL)
never reveals its secret, and :func:`audit_secret` says so. A *replay* run (`jaxbench run
--replay DIR`, :class:`Replay`) draws no secret: it takes the one an ended run of one segment
revealed, so it draws that run's inputs again, in every segment; its manifest and run_start
events say so (``replay_of``), as its inputs were public before it started. No tracer reads a
run directory: tracers read the Python installation only, and a run directory inside it is
refused.
Evaluations that draw fresh keys (``serve``, ``optimize``) record their ``trial_nonce``; their
keys derive from the secret and that nonce. A `jaxbench run` records its plan, the keys of the
jobs it evaluates, in the manifest (``plan``), so a report knows which evaluations are missing
without planning the jobs again.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

from jaxbench.backends.host import Versions, versions
from jaxbench.contract import FIELD_TIME, Status, source_sha256

if TYPE_CHECKING:
    from jaxbench.llm.base import SamplingFields

MANIFEST = "manifest.json"
EVENTS = "events.jsonl"
# Where versions before the in-memory secret kept an open run's secret: removed on resume.
LEGACY_SECRET = ".secret"
SOURCES = "sources"
BEST = "best"


class RunError(RuntimeError):
    """A run directory that cannot be used (another config, unreadable manifest)."""


def _git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             cwd=Path(__file__).parent, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


class Hardware(TypedDict):
    """The manifest's ``hardware``: this host's CPUs and machine, and the accelerator the probe
    found ("cpu", one device, where none)."""

    cpu_count: int | None
    machine: str
    platform: str
    device_kind: str
    device_count: int
    device_memory_bytes: NotRequired[int]


class RunConfig(TypedDict, total=False):
    """A run's configuration, the command's options (the manifest's ``config``: a run resumes
    only with the same). ``command`` says whose: `jaxbench run` (the ``kernels``, the ``suite``
    or ``tasks`` given, the ``chip``), `jaxbench optimize` (the ``method`` with its ``options``
    and whether it is ``seeded``, the ``model`` and its ``sampling`` and ``price_override``, the
    ``tasks`` selected, the ``budget``, ``docs`` and the ``prompt`` mode) or `jaxbench serve`
    (nothing else); the first two name the evaluations' ``target``, ``mode``, ``size`` and
    ``trials`` and the ``task_files`` given (each its task ID, path and SHA-256)."""

    command: str
    kernels: str
    suite: str | None
    tasks: list[str] | str | None  # optimize: the tasks selected; run: --tasks as given
    chip: str
    method: str
    options: dict[str, bool | int | float | str]
    seeded: bool
    model: str
    sampling: SamplingFields
    price_override: list[float] | None  # dollars per million input and output tokens
    budget: int
    docs: bool
    prompt: str
    target: str | None
    mode: str
    size: str
    trials: int
    task_files: list[list[str]]


class ReplayOf(TypedDict):
    """The manifest's and the run_start events' ``replay_of`` in a replay run: the run
    directory whose revealed secret it uses (as given to ``--replay``) and that secret's
    SHA-256."""

    run: str
    secret_sha256: str


class Manifest(TypedDict, total=False):
    """``manifest.json`` as a run writes it (a run of an older version may lack keys): the
    command's configuration, when the run was created, the software and hardware, the commit,
    the secret's SHA-256, for a `jaxbench run` its plan and, for a replay run, the run whose
    inputs it draws again (``replay_of``)."""

    config: RunConfig
    created_at: str
    versions: Versions
    hardware: Hardware
    git_sha: str | None
    secret_sha256: str
    plan: list[str]
    replay_of: ReplayOf


def _hardware() -> Hardware:
    from jaxbench.backends.host import attached

    try:  # the probe's answer: this process never opens a chip (its owner does)
        found = attached()
    except RuntimeError:
        found = None
    info: Hardware = {"cpu_count": os.cpu_count(), "machine": platform.machine(),
                      "platform": found.platform if found else "cpu",
                      "device_kind": found.device_kind if found else "cpu",
                      "device_count": found.count if found else 1}
    if found is not None and found.memory_bytes:
        info["device_memory_bytes"] = found.memory_bytes
    return info


class RunDir:
    """One run's directory. ``RunDir.open(path, config)`` creates it or resumes it.

    ``secret`` is the current segment's secret, held in memory only (never written to disk
    until a ``run_end`` reveals it; a replay run's is the replayed run's, revealed already);
    ``run_id`` is a short name of the run that stays the same across its segments (the first
    16 hex digits of its first segment's commitment: a replay run shares its source's)."""

    def __init__(self, path: Path, manifest: Manifest, secret: bytes,
                 run_id: str | None = None) -> None:
        self.path = path
        self.manifest = manifest
        self.secret = secret
        self.run_id = run_id if run_id is not None else _commitment(secret)[:16]
        self._events_path = path / EVENTS
        self._lock = threading.Lock()  # methods append from a thread pool

    @classmethod
    def open(cls, path: str | os.PathLike[str], config: RunConfig,
             plan: list[str] | None = None, replay: Replay | None = None) -> RunDir:
        """Creates a new run, or resumes one whose manifest has the same config. ``plan`` (the
        keys of the jobs a `jaxbench run` evaluates) is recorded in the manifest; a resumed
        run records its own (:meth:`record_plan`). Either way this starts a segment: a fresh
        secret, committed to in the manifest and in a ``run_start`` event. With ``replay``
        the segment's secret is the replayed run's instead (:class:`Replay`), recorded as
        ``replay_of``; a replay run resumes only with the same ``replay``, and another run
        only without one (its inputs would change mid-run)."""
        run = cls._open(Path(path), config, replay)
        if plan is not None:
            run.record_plan(plan)
        return run

    @classmethod
    def _open(cls, path: Path, config: RunConfig, replay: Replay | None) -> RunDir:
        _refuse_tracer_readable(path)
        secret = replay.secret if replay is not None else secrets.token_bytes(32)
        replayed: dict[str, Any] = {"replay_of": replay.record()} if replay is not None else {}
        if (path / MANIFEST).exists():
            return cls._resume(path, config, secret, replay)
        path.mkdir(parents=True, exist_ok=True)
        manifest: Manifest = {
            "config": config,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "versions": versions(),
            "hardware": _hardware(),
            "git_sha": _git_sha(),
            "secret_sha256": _commitment(secret),
        }
        if replay is not None:
            manifest["replay_of"] = replay.record()
        run = cls(path, manifest, secret)
        run._write_manifest()
        run.append({"type": "run_start", "secret_sha256": _commitment(secret), **replayed})
        return run

    @classmethod
    def _resume(cls, path: Path, config: RunConfig, secret: bytes,
                replay: Replay | None) -> RunDir:
        """Resumes the run in ``path`` with a new segment of ``secret``: refused for another
        configuration, an ended run, or other inputs than the run drew (:func:`_same_inputs`)."""
        manifest_path = path / MANIFEST
        try:
            manifest: Manifest = json.loads(manifest_path.read_text())
        except json.JSONDecodeError as exc:
            raise RunError(f"{manifest_path} is not valid JSON ({exc}); use another --out") from None
        wanted = json.loads(json.dumps(config))
        if manifest.get("config") != wanted:
            raise RunError(f"{path} holds a run with another configuration "
                           f"({_differences(manifest.get('config'), wanted)}); "
                           "use another --out to start a new run")
        # An older version kept the open run's secret here: never read, never kept.
        (path / LEGACY_SECRET).unlink(missing_ok=True)
        _drop_torn_tail(path / EVENTS)
        starts: list[dict[str, Any]] = []
        last_end: dict[str, Any] | None = None
        for event in read_events(path):
            if event.get("type") == "run_start":
                starts.append(event)
            elif event.get("type") == "run_end":
                last_end = event
        if last_end is not None and not last_end.get("interrupted"):
            raise RunError(f"{path} has ended (its secret was revealed); use another --out")
        _same_inputs(path, manifest.get("replay_of"), replay)
        first = starts[0].get("secret_sha256") if starts else None
        held = manifest.get("secret_sha256")
        run_id = (first if isinstance(first, str) else held if isinstance(held, str) else
                  _commitment(secret))[:16]
        manifest["secret_sha256"] = _commitment(secret)
        run = cls(path, manifest, secret, run_id)
        run._write_manifest()
        replayed = {"replay_of": replay.record()} if replay is not None else {}
        run.append({"type": "run_start", "secret_sha256": _commitment(secret),
                    "resumed": True, **replayed})
        return run

    def _write_manifest(self) -> None:
        """Writes the manifest atomically (a reader sees the old one or the new one)."""
        tmp = self.path / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(self.manifest, indent=2))
        tmp.replace(self.path / MANIFEST)

    def record_plan(self, keys: list[str]) -> None:
        """Records the run's plan, the keys of the jobs it evaluates, in order and without
        repeats, as the manifest's ``plan``. A resumed run with the same config records the
        plan it starts with: the same one unless a kernel file changed meanwhile (a job's key
        holds its source's hash); then the new plan replaces the old one."""
        plan = list(dict.fromkeys(keys))
        if self.manifest.get("plan") != plan:
            self.manifest["plan"] = plan
            self._write_manifest()

    @property
    def plan(self) -> list[str] | None:
        """The recorded plan (None: not recorded, an optimize run or one from before plans)."""
        return _plan_of(self.manifest)

    def append(self, event: dict[str, Any]) -> None:
        """Appends one event as a line; durable once this returns. A debug evaluation
        (``jaxbench eval --debug``: untrusted, with ``jax.debug.print``) never enters a run."""
        if event.get("debug"):
            raise ValueError("a debug evaluation does not count and is never recorded in a run")
        event = {FIELD_TIME: time.time(), **event}
        line = json.dumps(event, default=str) + "\n"
        with self._lock, open(self._events_path, "a") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def events(self) -> Iterator[dict[str, Any]]:
        yield from read_events(self.path)

    def keep_source(self, source: str) -> str:
        """Stores a kernel's source content-addressed, ``sources/<sha256>.py`` (once per
        content); returns that path relative to the run directory, for the evaluation event."""
        relative = f"{SOURCES}/{source_sha256(source)}.py"
        _write_once(self.path / relative, source)
        return relative

    def finish(self, **summary: Any) -> None:
        """Ends the run: a final ``run_end`` that reveals the segment's secret; the run can no
        longer be resumed."""
        self.append({"type": "run_end", "secret": self.secret.hex(), **summary})

    def interrupt(self, **summary: Any) -> None:
        """Records that the run was stopped (Ctrl-C, SIGTERM): a ``run_end`` event with
        ``interrupted: true`` that reveals the segment's secret. Rerunning the command resumes
        the run with a fresh secret (a new segment), and a finished resume ends with its own
        ``run_end``."""
        self.append({"type": "run_end", "interrupted": True, "secret": self.secret.hex(),
                     **summary})


def _commitment(secret: bytes) -> str:
    """The SHA-256 (hex) a segment commits to its secret with."""
    return hashlib.sha256(secret).hexdigest()


@dataclass(frozen=True)
class Replay:
    """The secret an ended run revealed, for a run that draws the same inputs again
    (`jaxbench run --replay DIR`): ``run``, the directory as given, and its ``secret``.
    :meth:`of` reads and checks it. Those inputs were public before the replay started (the
    secret was revealed), so a replay's verdicts are not hardened against a kernel that knows
    its inputs: a replay is for comparing timing methods, hardware or versions on identical
    inputs."""

    run: str
    secret: bytes = dataclass_field(repr=False)

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> Replay:
        """The replay of the run directory ``path`` (:func:`replay_secret` checks it)."""
        return cls(str(path), replay_secret(path))

    @property
    def commitment(self) -> str:
        """The SHA-256 (hex) of the secret: the replayed run's commitment."""
        return _commitment(self.secret)

    def record(self) -> ReplayOf:
        """What the manifest and each run_start record of it: ``replay_of``."""
        return {"run": self.run, "secret_sha256": self.commitment}


def replay_secret(path: str | os.PathLike[str]) -> bytes:
    """The secret the run directory ``path`` revealed, for a replay of its inputs. The run
    must have ended (its last run_end not interrupted) in one segment, or in segments that all
    committed to one secret (a replay run, resumed), and every reveal must match that
    commitment: then every evaluation it holds drew its inputs from this one secret. Else a
    :class:`RunError` of one line says what is wrong and what to do."""
    path = Path(path)
    if not (path / MANIFEST).is_file() or not (path / EVENTS).is_file():
        raise RunError(f"{path} is not a run directory (no {MANIFEST} and {EVENTS}): --replay "
                       "names the directory of an ended run")
    starts, ends = [], []
    for event in read_events(path):
        if event.get("type") == "run_start":
            starts.append(event)
        elif event.get("type") == "run_end":
            ends.append(event)
    commitments = list(dict.fromkeys(start.get("secret_sha256") for start in starts))
    if not commitments or None in commitments:
        raise RunError(f"{path} has no run_start committing to its secret (a run of an older "
                       "version): --replay needs a run of this version")
    if len(commitments) > 1:
        raise RunError(f"{path} was resumed ({len(starts)} segments, each with its own secret): "
                       "--replay needs a run of one segment")
    if not ends:
        raise RunError(f"{path} has not ended: its secret is not revealed yet; finish it first")
    if ends[-1].get("interrupted"):
        what = ("finish it first (rerun its command)" if starts[0].get("replay_of") else
                "a resume would add a segment with another secret, so run it anew to the end")
        raise RunError(f"{path} was interrupted, not finished: --replay needs a run that ended "
                       f"in one segment; {what}")
    revealed = [end["secret"] for end in ends if end.get("secret")]
    if not revealed or not all(_reveals(secret, commitments[0]) for secret in revealed):
        raise RunError(f"{path}: its revealed secret does not match its commitment "
                       "(secret_sha256), so its inputs cannot be told: it cannot be replayed")
    return bytes.fromhex(revealed[-1])


def _same_inputs(path: Path, held: Any, replay: Replay | None) -> None:
    """Refuses a resume that would change the run's inputs mid-run: a replay run (its manifest's
    ``replay_of``, ``held``) resumes only with a replay of the same secret, and a run that
    drew its own secret only without one."""
    commitment = held.get("secret_sha256") if isinstance(held, dict) else None
    source = held.get("run") if isinstance(held, dict) else None
    if (replay.commitment if replay is not None else None) == commitment:
        return
    if replay is None:
        raise RunError(f"{path} replays the inputs of {source}: resume it with --replay "
                       f"{source} (without it, its inputs would change mid-run)")
    if commitment is None:
        raise RunError(f"{path} holds a run that drew inputs of its own: resuming it with "
                       "--replay would change its inputs mid-run; drop --replay, or use another "
                       "--out for the replay")
    raise RunError(f"{path} replays the inputs of {source}, not those of {replay.run} (another "
                   f"secret): resume it with --replay {source}, or use another --out")


def _refuse_tracer_readable(path: Path) -> None:
    """A run directory the sandboxed tracers could read is refused: its events and kernel
    sources (and, from an older version, a ``.secret`` file) would be open to every kernel traced.
    Tracers read the Python installation only (``isolation.python_read_roots``), so this
    refuses a directory inside it, e.g. ``--out`` in a virtual environment made at a
    repository's root."""
    from jaxbench.evaluator.sandbox.isolation import python_read_roots

    real = os.path.realpath(path)
    for root in python_read_roots():
        if real == root or real.startswith(root.rstrip("/") + "/"):
            raise RunError(f"{path} lies in {root}, which the sandboxed tracers may read (the "
                           "Python installation): its events and kernel sources would be open "
                           "to the kernels; use an --out outside it")


def _plan_of(manifest: Any) -> list[str] | None:
    """A manifest's ``plan`` when it is a list of job keys, else None."""
    plan = manifest.get("plan") if isinstance(manifest, dict) else None
    if isinstance(plan, list) and all(isinstance(k, str) for k in plan):
        return plan
    return None


def read_plan(path: str | os.PathLike[str]) -> list[str] | None:
    """The plan recorded in a run directory's manifest (None when it records none)."""
    try:
        return _plan_of(json.loads((Path(path) / MANIFEST).read_text()))
    except (OSError, json.JSONDecodeError):
        return None


def _differences(held: Any, wanted: RunConfig, shown: int = 3) -> str:
    """The settings in which a run directory's configuration differs from the command's, e.g.
    "tasks: '8p_gemm' there, '12p_rmsnorm' here"."""
    if not isinstance(held, dict):
        return "its manifest holds no configuration"
    keys = [k for k in sorted(set(held) | set(wanted)) if held.get(k) != wanted.get(k)]

    def text(value: Any) -> str:
        value = json.dumps(value)
        return value if len(value) <= 40 else value[:39] + "…"

    parts = [f"{k}: {text(held.get(k))} there, {text(wanted.get(k))} here" for k in keys[:shown]]
    more = f"; {len(keys) - shown} more" if len(keys) > shown else ""
    return "; ".join(parts) + more


def _write_once(path: Path, text: str) -> None:
    """Writes a file whose name is its content's hash: atomically, and not again once there."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def event_source(path: str | os.PathLike[str], event: dict[str, Any]) -> str | None:
    """The kernel source of an evaluation event: inline (``source``) or kept under
    ``sources/`` (``source_file``); None when neither is there."""
    if isinstance(event.get("source"), str):
        return event["source"]
    relative = event.get("source_file")
    if isinstance(relative, str) and relative.startswith(f"{SOURCES}/") and "/" not in \
            relative[len(SOURCES) + 1:] and ".." not in relative:
        try:
            return (Path(path) / relative).read_text()
        except OSError:
            return None
    return None


def shipped_seed_hashes(task_id: str) -> set[str]:
    """The SHA-256 of each seed kernel shipped with the task (none for an unknown task)."""
    from jaxbench.tasks import get_task

    try:
        files = get_task(task_id).kernel_files()
    except KeyError:
        return set()
    return {source_sha256(path.read_text()) for (kind, _), path in files.items()
            if kind.startswith("seed")}


def best_evaluations(path: str | os.PathLike[str], include_seeds: bool = False
                     ) -> dict[str, dict[str, Any]]:
    """Per task, its best evaluation: correct, then the highest speedup (none counts as 0),
    then the earliest. Tasks without a correct evaluation are left out. A shipped seed
    kernel (a method's starting point, ``origin: "seed"``, or a candidate identical to a
    shipped seed) is never the best unless ``include_seeds``: ``best/`` holds what the
    search found."""
    best: dict[str, tuple[float, int, dict[str, Any]]] = {}
    seeds: dict[str, set[str]] = {}
    for order, event in enumerate(read_events(path)):
        if event.get("type") != "evaluation" or event.get("status") != Status.CORRECT:
            continue
        task = event.get("task")
        if not isinstance(task, str):
            continue
        if not include_seeds:
            if task not in seeds:
                seeds[task] = shipped_seed_hashes(task)
            if event.get("origin") == "seed" or event.get("candidate_sha256") in seeds[task]:
                continue
        speedup = event.get("speedup") if isinstance(event.get("speedup"), (int, float)) else 0.0
        if task not in best or speedup > best[task][0]:
            best[task] = (float(speedup), order, event)
    return {task: entry[2] for task, entry in best.items()}


def write_best(path: str | os.PathLike[str], include_seeds: bool = False) -> dict[str, Path]:
    """Writes ``best/<task>.py``, the best correct kernel of each task (see
    :func:`best_evaluations`; shipped seeds only with ``include_seeds``), and
    ``best/best.json`` saying where each came from; returns the files written by task.
    Derived from the events only, so it can be rerun at any time (``jaxbench optimize``
    calls it when a run ends)."""
    root = Path(path)
    written: dict[str, Path] = {}
    index: dict[str, dict[str, str | float]] = {}  # fields read_events checked: words, numbers
    for task, event in sorted(best_evaluations(root, include_seeds).items()):
        source = event_source(root, event)
        if source is None or "/" in task or task.startswith("."):
            continue
        target = root / BEST / f"{task}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(source)
        tmp.replace(target)
        written[task] = target
        index[task] = {k: event.get(k) for k in ("step", "method", "kind", "target", "mode",
                                                 "size", "speedup", "max_abs_err", "source_sha256")
                       if event.get(k) is not None}
    if written:
        tmp = root / BEST / ".best.json.tmp"
        tmp.write_text(json.dumps(index, indent=2))
        tmp.replace(root / BEST / "best.json")
    return written


def _drop_torn_tail(events_path: Path) -> None:
    """A run killed mid-write leaves a partial last line: cut it so appends start clean."""
    if not events_path.exists():
        return
    with open(events_path, "rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)


# The JSON types of the event fields that reports, comparisons, exports and resumed runs
# compute with, format, sort or look up, by event type; any of them may also be null or
# missing, except the fields of REQUIRED_FIELDS.
_JSON_TYPES: dict[str, tuple[type, ...]] = {"number": (int, float), "integer": (int,),
                                            "string": (str,), "object": (dict,)}
EVENT_FIELDS: dict[str, dict[str, str]] = {
    "evaluation": {
        **dict.fromkeys(("speedup", "t_ref_ms", "t_kernel_ms", "max_abs_err", "rel_err",
                         "tol_fraction", "compile_s", "wall_s", "timeout_s", "roofline_fraction",
                         "peak_flops", "peak_bytes_per_s"), "number"),
        **dict.fromkeys(("trials", "sample"), "integer"),
        **dict.fromkeys(("task", "status", "stage", "target", "mode", "size", "message", "method",
                         "kind", "origin", "step", "parent", "job", "kernel_file", "source_file",
                         "source_sha256", "device_kind", "backend", "trial_nonce"), "string"),
        "versions": "object",
    },
    "llm_call": {
        **dict.fromkeys(("input_tokens", "output_tokens", "cached_input_tokens", "cost",
                         "latency_s"), "number"),
        **dict.fromkeys(("method", "model", "kind"), "string"),
    },
    "task_done": dict.fromkeys(("task", "method"), "string"),
    "run_start": {"secret_sha256": "string", "replay_of": "object"},
    "run_end": {"secret": "string"},
}
REQUIRED_FIELDS = {"evaluation": ("task",)}


def _json_kind(value: Any) -> str:
    """How JSON names the type of a decoded value: "a string", "an array", "null", ..."""
    if value is None:
        return "null"
    names = {bool: "a boolean", str: "a string", dict: "an object", list: "an array"}
    return names.get(type(value), "a number")


def event_problem(event: Any) -> str | None:
    """What makes a decoded events.jsonl line unusable, or None: not a JSON object, a field of
    :data:`EVENT_FIELDS` holding another type (a boolean is not a number), or a field of
    :data:`REQUIRED_FIELDS` missing; e.g. 'evaluation event whose "speedup" is a string
    ("fast"), not a number or null'."""
    if not isinstance(event, dict):
        return f"{_json_kind(event)}, not a JSON object"
    kind = event.get("type")
    if not isinstance(kind, str) or kind not in EVENT_FIELDS:
        return None
    required = REQUIRED_FIELDS.get(kind, ())
    for field, wanted in EVENT_FIELDS[kind].items():
        value = event.get(field)
        if value is None:
            if field in required:
                return f'{kind} event without "{field}"'
            continue
        # a JSON boolean is no number, though Python's bool is an int
        if isinstance(value, bool) or not isinstance(value, _JSON_TYPES[wanted]):
            shown = json.dumps(value)
            shown = shown if len(shown) <= 40 else shown[:39] + "…"
            article = "an" if wanted[0] in "aeiou" else "a"
            null = "" if field in required else " or null"
            return (f'{kind} event whose "{field}" is {_json_kind(value)} ({shown}), not '
                    f"{article} {wanted}{null}")
    return None


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """Says on stderr, once per process, that an event was skipped: a command reads a run
    directory several times (the summary and the HTML page, both runs of a comparison)."""
    if message not in _warned:
        _warned.add(message)
        print(f"jaxbench: warning: {message}", file=sys.stderr, flush=True)


def read_events(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Events of a run directory. A line that is not JSON (a torn last line: a kill
    mid-write) is skipped; so is an unusable event (:func:`event_problem`: someone else wrote
    or edited the file), with one warning on stderr naming the file and line, so the rest of
    the run is still read."""
    events_path = Path(path) / EVENTS
    if not events_path.exists():
        return
    with open(events_path) as f:
        for number, line in enumerate(f, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            problem = event_problem(event)
            if problem:
                _warn_once(f"{events_path}, line {number}: skipped: {problem}")
                continue
            yield event


SegmentState = Literal["verified", "mismatch", "unrevealed", "open"]  # other meaning: states


@dataclass(frozen=True)
class SecretAudit:
    """Whether each segment of a run revealed the secret it committed to, in order:
    ``verified`` (a reveal matching the commitment), ``mismatch`` (a reveal that does not match,
    or no commitment to check it against), ``unrevealed`` (closed without a reveal, or never
    closed and followed by another segment: killed, its evaluations cannot be audited) or
    ``open`` (the last segment, not closed yet)."""

    states: tuple[SegmentState, ...]

    @property
    def verified(self) -> bool | None:
        """True when every segment is verified; None while the last one is open and every
        earlier one is verified; False when any segment mismatches or was never revealed."""
        if any(state in ("mismatch", "unrevealed") for state in self.states):  # other meaning: states
            return False
        if not self.states or self.states[-1] == "open":
            return None
        return True

    def segments(self, state: SegmentState) -> list[int]:
        """The numbers (1-based) of the segments in ``state``."""
        return [i for i, s in enumerate(self.states, start=1) if s == state]


def audit_secret(manifest: Mapping[str, Any], events: Iterable[Mapping[str, Any]]) -> SecretAudit:
    """Checks every segment's reveal against its commitment. A segment starts at a ``run_start``
    that carries its commitment, ``secret_sha256``. Runs of older versions wrote one
    ``run_start`` without it, first, and committed to one secret for the whole run in the
    manifest: that first run_start (or the first event, for a file without one) starts a
    segment committed to the manifest's ``secret_sha256``; a later run_start without one starts
    nothing. Each ``run_end`` within a segment that reveals (``secret``) must match; a segment
    without a run_end is open when it is the last, else it was killed unrevealed. A run_end
    without a reveal leaves its segment unrevealed, except an interrupted one in the last
    segment (an older version's Ctrl-C, which revealed nothing and kept the run open): open."""
    fallback = manifest.get("secret_sha256")
    segments: list[tuple[Any, list[Mapping[str, Any]]]] = []
    for event in events:
        kind = event.get("type")
        if kind == "run_start" and (event.get("secret_sha256") or not segments):
            segments.append((event.get("secret_sha256") or fallback, []))
        elif kind == "run_end":
            if not segments:
                segments.append((fallback, []))
            segments[-1][1].append(event)
    states: list[SegmentState] = []
    for number, (commitment, ends) in enumerate(segments, start=1):
        last = number == len(segments)
        revealed = [e["secret"] for e in ends if isinstance(e.get("secret"), str) and e["secret"]]
        if not ends:
            states.append("open" if last else "unrevealed")
        elif any(not _reveals(secret, commitment) for secret in revealed):
            states.append("mismatch")  # other meaning: a segment's state
        elif revealed:
            states.append("verified")
        elif last and ends[-1].get("interrupted"):
            states.append("open")
        else:
            states.append("unrevealed")
    return SecretAudit(tuple(states))


def _reveals(secret: str, commitment: Any) -> bool:
    """Whether a revealed secret (hex) hashes to the commitment."""
    try:
        return isinstance(commitment, str) and _commitment(bytes.fromhex(secret)) == commitment
    except ValueError:
        return False


def verify_secret(path: str | os.PathLike[str]) -> bool:
    """True when every segment of the run revealed a secret matching its commitment
    (:func:`audit_secret`); False while the run is open, or when a segment was never revealed
    or mismatches."""
    manifest = json.loads((Path(path) / MANIFEST).read_text())
    return audit_secret(manifest, read_events(path)).verified is True


__all__ = ["EVENTS", "EVENT_FIELDS", "MANIFEST", "REQUIRED_FIELDS", "Replay", "ReplayOf",
           "RunDir", "RunError", "SecretAudit", "audit_secret", "best_evaluations",
           "event_problem", "event_source", "read_events", "read_plan", "replay_secret",
           "verify_secret", "write_best"]
