"""Evaluations as Ray tasks: the same runs across a cluster of CPU, GPU and TPU hosts.

Ray only moves *where* :meth:`jaxbench.evaluator.Evaluator.evaluate` runs. Each evaluation
is one Ray task; the task runs on whichever node Ray places it, inside a Ray worker
process that keeps one warm :class:`~jaxbench.evaluator.Evaluator` (keyed by the run's
secret), so the node starts the same sandboxed tracer and trusted runner as a local run,
with the evaluator's own wall-clock timeouts and memory watchdogs (Ray has neither per
task). The verdict comes back to the driver, which alone writes the run's events.

Resources (what Ray places a task by):

- interpret mode: ``cpus_per_evaluation`` CPU slots (default 1);
- device mode, GPU target: one whole GPU (Ray sets ``CUDA_VISIBLE_DEVICES`` for the task);
- device mode, TPU target: every TPU chip of one host (``{"TPU": chips_per_host}``), since
  one process owns a host's chips.

Faults: a task whose worker process or node dies is retried by Ray on any node with free
resources, up to ``max_retries`` times. A dead worker never returns, so it never yields a
verdict: a kernel that crashes its own tracer is still judged ``crashed`` by the evaluator,
but a node that vanishes costs a retry, and after the last retry :class:`EvaluationLost`
(no verdict, nothing written as one; a resumed run evaluates the kernel again).
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from jaxbench.evaluator.common.procs import process_start
from jaxbench.executors.errors import EvaluationLost, ExecutorError

if TYPE_CHECKING:
    from jaxbench.contract import EvaluationResult, Settings
    from jaxbench.evaluator import Evaluator

DEFAULT_MAX_RETRIES = 3
DEFAULT_CPUS_PER_EVALUATION = 1.0
CLUSTER_REFRESH_S = 5.0
MAX_ARTIFACT_BYTES = 256 << 20  # IR files shipped back per evaluation (--save-ir, IR feedback)
INSTALL_HINT = "pip install -e '.[ray]' (or pip install 'ray>=2.40')"
# Connecting to a cluster (or starting a local one) that takes longer is an error, not a hang.
CONNECT_TIMEOUT_ENV = "JAXBENCH_RAY_CONNECT_TIMEOUT"
DEFAULT_CONNECT_TIMEOUT_S = 120.0
PROBE_TIMEOUT_S = 5.0


class RayUnavailable(ExecutorError):
    """Ray is not installed, or no cluster could be reached."""


class RunSecret:
    """The run's secret in transit to the workers; its repr never shows it (Ray may print
    task arguments in errors)."""

    __slots__ = ("value",)

    def __init__(self, value: bytes) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"RunSecret(sha256={hashlib.sha256(self.value).hexdigest()[:12]}...)"

    __str__ = __repr__


def ray_module() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable(f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def connect_timeout(timeout_s: float | None = None) -> float:
    """Seconds :func:`connect` waits for Ray: ``timeout_s``, else ``JAXBENCH_RAY_CONNECT_TIMEOUT``,
    else :data:`DEFAULT_CONNECT_TIMEOUT_S`."""
    if timeout_s is not None:
        return float(timeout_s)
    text = os.environ.get(CONNECT_TIMEOUT_ENV, "").strip()
    try:
        value = float(text) if text else DEFAULT_CONNECT_TIMEOUT_S
    except ValueError:
        raise RayUnavailable(f"{CONNECT_TIMEOUT_ENV}={text!r} is not a number of seconds") from None
    if value <= 0:
        raise RayUnavailable(f"{CONNECT_TIMEOUT_ENV} must be positive")
    return value


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a GCS address ("HOST:PORT", "ray://HOST:PORT", "[v6]:PORT"); None when
    it names none (``auto``, ``local``)."""
    address = address.strip()
    if "://" in address:
        address = address.split("://", 1)[1]
    address = address.split("/", 1)[0]
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    return host.strip("[]"), int(port)


def _last_started_cluster() -> str | None:
    """The GCS address of the cluster last started with ``ray start`` on this host (Ray's own
    record of it), or None."""
    try:
        from ray._private.services import find_bootstrap_address

        return find_bootstrap_address(None) or None
    except Exception:  # noqa: BLE001 - a private API: without it, no probe is made
        return None


def _answers(host: str, port: int, timeout_s: float) -> bool:
    """Whether something accepts a TCP connection at host:port within ``timeout_s``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


class _NoSigtermNote(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("SIGTERM handler is not set")

    def __eq__(self, other: object) -> bool:  # one such filter per logger, however often added
        return isinstance(other, _NoSigtermNote)

    def __hash__(self) -> int:
        return hash(_NoSigtermNote)


def connect(address: str | None = None, timeout_s: float | None = None) -> Any:
    """Connects this process to a Ray cluster once and returns the ``ray`` module.

    ``address`` is passed to ``ray.init``: ``None`` uses ``RAY_ADDRESS``, else the cluster
    last started with ``ray start`` on this machine, else starts a local one sized to this
    host; ``"auto"`` requires an existing cluster; ``"local"`` always starts a new local one;
    ``HOST:PORT`` is the head node's GCS address.

    Bounded in time: a named cluster (``HOST:PORT``, ``RAY_ADDRESS``, ``auto``) that nothing
    answers at is a :class:`RayUnavailable` at once; the cluster last started here, when not
    asked for by name and gone (a stale record), is replaced by a new local one; and any
    connection (a cluster that is shutting down, a GCS that accepts but never answers) that
    has not succeeded within ``timeout_s`` (:func:`connect_timeout`) is a
    :class:`RayUnavailable` instead of Ray's endless retries.
    """
    ray = ray_module()
    if ray.is_initialized():
        return ray
    deadline_s = connect_timeout(timeout_s)
    named = address or os.environ.get("RAY_ADDRESS") or None
    where = named or "a local cluster"
    if named is None or named == "auto":
        recorded = _last_started_cluster()
        probe = _host_port(recorded) if recorded else None
        if probe is not None and not _answers(*probe, min(PROBE_TIMEOUT_S, deadline_s)):
            if named == "auto":
                raise RayUnavailable(f"cannot connect to Ray (auto): the cluster last started on "
                                     f"this host ({recorded}) does not answer; start one with "
                                     "`ray start --head`, or pass --ray-address local")
            print(f"jaxbench: the Ray cluster last started on this host ({recorded}) does not "
                  "answer (stopped or stale): starting a new local one", file=sys.stderr, flush=True)
            address = "local"
            where = "a new local cluster"
    elif named != "local":
        probe = _host_port(named)
        if probe is not None and not _answers(*probe, min(PROBE_TIMEOUT_S, deadline_s)):
            raise RayUnavailable(f"cannot connect to Ray at {named}: nothing answers there (no "
                                 "cluster, a stopped one, or a firewall); start a cluster with "
                                 "`ray start --head` and pass its HOST:PORT, or pass --ray-address "
                                 "local for a new one on this host")
    outcome: dict[str, BaseException] = {}
    # ray.init runs in a thread so that it can be given up on; Ray then installs no SIGTERM
    # handler of its own (the commands install theirs) and says so: that line is dropped
    logging.getLogger("ray._private.worker").addFilter(_NoSigtermNote())

    connected = threading.Event()

    def init() -> None:
        try:
            ray.init(address=address or None, logging_level=logging.WARNING, log_to_driver=False,
                     configure_logging=True)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = exc
            connected.set()
            return
        connected.set()
        # A local cluster's processes (GCS, raylet) die with the *thread* that started them
        # (their parent-death signal), so this thread stays, parked, for the process's life.
        threading.Event().wait()

    thread = threading.Thread(target=init, name="jaxbench-ray-connect", daemon=True)
    thread.start()
    if not connected.wait(deadline_s):
        raise RayUnavailable(f"cannot connect to Ray at {where}: no connection within "
                             f"{deadline_s:g} s (a cluster that is shutting down, stale or "
                             f"unreachable); check `ray status`, or set {CONNECT_TIMEOUT_ENV} to "
                             "wait longer")
    exc = outcome.get("error")
    if isinstance(exc, (ConnectionError, RuntimeError, ValueError)):
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        auth = ("; a cluster started with `ray start` checks a token from Ray 2.59 on: set "
                "RAY_AUTH_MODE=token here, with the cluster's token in ~/.ray/auth_token or "
                "RAY_AUTH_TOKEN" if os.environ.get("RAY_AUTH_MODE") != "token" else "")
        raise RayUnavailable(f"cannot connect to Ray at {where}: {first[:300]} (start a cluster "
                             "with `ray start --head` and pass --ray-address HOST:PORT, or pass "
                             f"--ray-address local for a new one on this host{auth})") from None
    if exc is not None:
        raise exc
    return ray


# -- the worker side: runs in Ray worker processes ------------------------------------------

_node_lock = threading.Lock()
_node_evaluator: tuple[str, Evaluator] | None = None  # (secret's SHA-256, Evaluator)


def _evaluator_for(secret: bytes) -> Evaluator:
    """This worker process's warm evaluator for the run (one per process, reused by every
    task of the run that lands here)."""
    global _node_evaluator
    from jaxbench.evaluator import Evaluator

    digest = hashlib.sha256(secret).hexdigest()
    with _node_lock:
        if _node_evaluator is not None and _node_evaluator[0] != digest:
            _node_evaluator[1].close()
            _node_evaluator = None
        if _node_evaluator is None:
            _use_own_scratch()
            _node_evaluator = (digest, Evaluator(secret=secret, spares=1))
        return _node_evaluator[1]


_scratch: Path | None = None
SCRATCH_PREFIX = "jaxbench-ray-worker-"


def _use_own_scratch() -> None:
    """Puts this worker process's temporary files (tracer directories, judge files, runner
    logs) in one directory named after it. Ray ends its workers with SIGKILL (at the end of a
    job, on cancel), so no exit handler of ours runs: instead each new worker first removes
    the directories of workers on this host that are gone (Ray itself kills their children)."""
    global _scratch
    if _scratch is not None:
        return
    root = Path(tempfile.gettempdir())
    for path in root.glob(SCRATCH_PREFIX + "*"):
        _remove_if_orphaned(path)
    _scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=root))
    (_scratch / "owner").write_text(process_start(os.getpid()))
    tempfile.tempdir = str(_scratch)


def _remove_if_orphaned(path: Path) -> None:
    try:
        pid = int(path.name[len(SCRATCH_PREFIX):].split("-", 1)[0])
        owner = (path / "owner").read_text()
    except (ValueError, OSError):
        try:  # a directory without its owner file: another worker is creating it, or died then
            if time.time() - path.stat().st_mtime < 600:
                return
        except OSError:
            return
        owner, pid = "", -1
    if pid != os.getpid() and (not owner or process_start(pid) != owner):
        shutil.rmtree(path, ignore_errors=True)


def _close_node_evaluator() -> None:
    global _node_evaluator
    with _node_lock:
        if _node_evaluator is not None:
            _node_evaluator[1].close()
            _node_evaluator = None


atexit.register(_close_node_evaluator)


def _local_copy(source: str, filename: str, scratch: Path) -> Path:
    """The kernel file as the evaluator reads it: the driver's own path when this node sees
    the same file (same host, shared filesystem), else a copy under the same name."""
    path = Path(filename)
    try:
        if path.is_absolute() and path.is_file() and path.read_text() == source:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    copy = scratch / (path.name if path.suffix == ".py" else "kernel.py")
    copy.write_text(source)
    return copy


def _read_tree(directory: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    total = 0
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.is_symlink():
            size = path.stat().st_size
            if total + size > MAX_ARTIFACT_BYTES:
                break
            files[str(path.relative_to(directory))] = path.read_bytes()
            total += size
    return files


def evaluate_on_node(secret: RunSecret, source: str, filename: str | None, task_id: str,
                     settings: Settings, want_ir: bool) -> tuple[EvaluationResult, dict[str, bytes]]:
    """One evaluation in a Ray worker: (the evaluator's result, IR files when asked for).
    ``settings`` is the evaluation's, its target and mode resolved by the driver."""
    from jaxbench.executors.settings import evaluate_with

    evaluator = _evaluator_for(secret.value)
    scratch = Path(tempfile.mkdtemp(prefix="jaxbench-ray-"))
    try:
        kernel: str | Path = _local_copy(source, filename, scratch) if filename else source
        ir_dir = scratch / "ir" if want_ir else None
        result = evaluate_with(evaluator, kernel, task_id,
                               settings.replace(save_ir=str(ir_dir) if ir_dir else None))
        files = _read_tree(ir_dir) if ir_dir is not None and ir_dir.is_dir() else {}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return result.replace(ray_node=_node_name()), files


def _node_name() -> str:
    try:
        import ray

        node_id = ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - outside Ray (unit tests call the function directly)
        node_id = ""
    return f"{socket.gethostname()}/{node_id[:8]}" if node_id else socket.gethostname()


def _device_kind_on_node() -> str:
    """The node's chip, from the short-lived probe (this worker never opens it: its owner
    does)."""
    from jaxbench.backends.host import probe

    try:
        found = probe()
    except RuntimeError:
        return "unknown"
    return found.device_kind if found is not None else "unknown"


# -- the driver side --------------------------------------------------------------------------

class Cluster(TypedDict):
    """What a Ray cluster's alive nodes offer (:func:`cluster_accelerators`)."""

    gpus: float  # GPUs in all
    cpus: float  # CPUs in all
    tpu_hosts: int  # nodes with TPU chips
    tpu_chips_per_host: float  # the most chips one such node has


class TaskResources(TypedDict, total=False):
    """The Ray options one evaluation's task is placed by (:func:`resources_for`)."""

    num_cpus: float
    num_gpus: float
    resources: dict[str, float]


def cluster_accelerators(ray: Any) -> Cluster:
    """What the cluster's alive nodes offer: GPUs in all, TPU hosts and chips per host, CPUs."""
    gpus = cpus = 0.0
    tpu_hosts, tpu_chips = 0, 0.0
    for node in ray.nodes():
        if not node.get("Alive", node.get("alive", False)):
            continue
        resources = node.get("Resources", {})
        gpus += resources.get("GPU", 0.0)
        cpus += resources.get("CPU", 0.0)
        if resources.get("TPU", 0.0) > 0:
            tpu_hosts += 1
            tpu_chips = max(tpu_chips, resources["TPU"])
    return {"gpus": gpus, "cpus": cpus, "tpu_hosts": tpu_hosts, "tpu_chips_per_host": tpu_chips}


def resources_for(mode: str, target: str, cluster: Cluster,
                  cpus_per_evaluation: float = DEFAULT_CPUS_PER_EVALUATION) -> TaskResources:
    """Ray resource options for one evaluation in ``mode`` for ``target``."""
    if mode == "interpret":
        return {"num_cpus": cpus_per_evaluation}
    if target == "gpu":
        return {"num_cpus": 1, "num_gpus": 1}
    return {"num_cpus": 1, "resources": {"TPU": cluster["tpu_chips_per_host"] or 1}}


def resolve_cluster_mode(mode: str, target: str, cluster: Cluster) -> str:
    """``auto`` -> ``device`` when some node has the target's accelerator, else ``interpret``;
    ``device`` without one is a one-line error (as locally, but for the cluster)."""
    if mode not in ("auto", "interpret", "device"):
        raise ValueError(f"unknown mode {mode!r}; use auto, interpret or device")
    has = cluster["gpus"] > 0 if target == "gpu" else cluster["tpu_hosts"] > 0
    if mode == "auto":
        return "device" if has else "interpret"
    if mode == "device" and not has:
        raise RuntimeError(f"--mode device needs a {target.upper()}; no node of the Ray cluster "
                           f"offers one (see `ray status`)")
    return mode


def evaluation_slots(mode: str, target: str, cluster: Cluster,
                     cpus_per_evaluation: float = DEFAULT_CPUS_PER_EVALUATION) -> int:
    """How many evaluations the cluster runs at once in ``mode`` (at least 1)."""
    if mode == "interpret":
        return max(1, int(cluster["cpus"] // cpus_per_evaluation))
    if target == "gpu":
        return max(1, int(cluster["gpus"]))
    return max(1, int(cluster["tpu_hosts"]))


class RayEvaluator:
    """An evaluator with :class:`~jaxbench.evaluator.Evaluator`'s interface whose evaluations
    run as Ray tasks. The driver keeps it; every call blocks until its task's verdict is back
    (callers run several at once from threads, as with the local evaluator).

    Args:
        secret: the run's secret (the correctness inputs derive from it); shipped to the
            workers through Ray's object store, never logged.
        address: the Ray cluster (see :func:`connect`).
        max_retries: retries of an evaluation whose worker or node died.
        cpus_per_evaluation: CPU slots an interpret-mode evaluation takes.
    """

    def __init__(self, secret: bytes, address: str | None = None, *,
                 max_retries: int = DEFAULT_MAX_RETRIES,
                 cpus_per_evaluation: float = DEFAULT_CPUS_PER_EVALUATION) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be at least 0")
        self.ray = connect(address)
        self.secret = secret
        self.max_retries = max_retries
        self.cpus_per_evaluation = cpus_per_evaluation
        self._secret_ref = self.ray.put(RunSecret(secret))
        self._remote = self.ray.remote(evaluate_on_node)
        self._lock = threading.Lock()
        self._in_flight: set[Any] = set()
        self._aborted = False
        self._calls = 0  # evaluate() calls inside Ray now (abort_all waits for them to leave)
        self._left_ray = threading.Condition(self._lock)
        self._cluster: tuple[float, Cluster] | None = None
        _LIVE.add(self)

    # -- what the cluster offers ---------------------------------------------------------------
    def cluster(self) -> Cluster:
        """The alive nodes' accelerators, looked up at most every few seconds (nodes may join
        or leave while a run goes on)."""
        now = time.monotonic()
        with self._lock:
            if self._cluster is None or now - self._cluster[0] > CLUSTER_REFRESH_S:
                self._cluster = (now, cluster_accelerators(self.ray))
            return self._cluster[1]

    def resolve_mode(self, mode: str, target: str) -> str:
        return resolve_cluster_mode(mode, target, self.cluster())

    def device_kind(self, target: str) -> str:
        """The accelerator a device-mode evaluation for ``target`` lands on (e.g. for prompts),
        asked of a node that has one. JAX runs in a child process there, so the Ray worker
        never holds the chips an evaluation's runner needs."""
        cluster = self.cluster()
        ref = self.ray.remote(_device_kind_on_node).options(
            max_retries=self.max_retries, **resources_for("device", target, cluster)).remote()
        return self.ray.get(ref)

    def slots(self, mode: str, target: str) -> int:
        """Evaluations the cluster runs at once in (resolved) ``mode`` for ``target``."""
        return evaluation_slots(mode, target, self.cluster(), self.cpus_per_evaluation)

    # -- the Evaluator interface ---------------------------------------------------------------
    def evaluate(self, source_or_path: str | os.PathLike[str], task_id: str,
                 settings: Settings | None = None, **options: Any) -> EvaluationResult:
        """:meth:`Evaluator.evaluate` on a cluster node (``settings``, or its fields as
        keyword options); raises :class:`EvaluationLost` when the node or worker died on
        every attempt."""
        from jaxbench.evaluator import Settings, declared_target, read_source

        if settings is not None and options:
            raise TypeError("pass settings or keyword options, not both")
        settings = settings if settings is not None else Settings.of(**options)
        source, filename = read_source(source_or_path)
        target = settings.target or declared_target(source) or "tpu"
        if target not in ("tpu", "gpu"):
            raise ValueError(f"unknown target {target!r}; use tpu or gpu")
        with self._lock:
            if self._aborted:
                raise EvaluationLost("the run was stopped before this evaluation started")
            self._calls += 1
        try:
            return self._evaluate(source, filename, task_id, settings.replace(target=target))
        finally:
            with self._lock:
                self._calls -= 1
                self._left_ray.notify_all()

    def _evaluate(self, source: str, filename: str, task_id: str,
                  settings: Settings) -> EvaluationResult:
        cluster, target, save_ir = self.cluster(), settings.target, settings.save_ir
        mode = resolve_cluster_mode(settings.mode, target, cluster)
        task_options = dict(max_retries=self.max_retries, retry_exceptions=False,
                            **resources_for(mode, target, cluster, self.cpus_per_evaluation))
        where = None if filename == "<kernel>" else str(Path(filename).resolve())
        settings = settings.replace(mode=mode, save_ir=None)  # the IR comes back as files
        ref = self._remote.options(**task_options).remote(
            self._secret_ref, source, where, task_id, settings, save_ir is not None)
        with self._lock:
            self._in_flight.add(ref)
            missed = self._aborted  # stopped while it was being submitted: abort() missed it
        if missed:
            self._cancel(ref)
        try:
            result, files = self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as exc:  # the evaluator's own error (bad options)
            cause = getattr(exc, "cause", None)
            raise (cause if isinstance(cause, Exception) else exc.as_instanceof_cause()) from None
        except self.ray.exceptions.TaskCancelledError:
            raise EvaluationLost(f"{task_id}: evaluation cancelled (the run was stopped)") from None
        except self.ray.exceptions.RayError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise EvaluationLost(
                f"{task_id}: no verdict: the evaluation's Ray worker or node died on each of "
                f"{self.max_retries + 1} attempts ({type(exc).__name__}: {first[:200]})") from None
        finally:
            with self._lock:
                self._in_flight.discard(ref)
        artifacts = result.artifacts
        if save_ir is not None:
            _write_tree(Path(save_ir), files)
            if artifacts is not None:
                artifacts = {**artifacts, "dir": str(save_ir)}
        return result.replace(kernel_file=filename, artifacts=artifacts)  # as the local one names it

    def abort(self) -> None:
        """Stops the evaluations in flight (Ctrl-C): their tasks are cancelled and their worker
        processes killed (the tracers and runners die with them). Callers discard them."""
        with self._lock:  # evaluate() checks it, and lists its task, under the same lock
            self._aborted = True
            refs = list(self._in_flight)
        if not self.ray.is_initialized():  # left already (a Ray call now would start a cluster)
            return
        for ref in refs:
            self._cancel(ref)

    def _cancel(self, ref: Any) -> None:
        try:
            self.ray.cancel(ref, force=True)
        except Exception:  # noqa: BLE001 - already finished, or the cluster is gone
            pass

    def wait_out_of_ray(self, timeout_s: float) -> bool:
        """Waits until no :meth:`evaluate` call is inside a Ray call (after :meth:`abort`, a
        cancelled task's ``ray.get`` returns soon); False if some still were after
        ``timeout_s``. A Ray call made after ``ray.shutdown()`` ends the whole process with
        exit status 1 (Ray's core worker is gone), so a stopping driver waits first."""
        with self._lock:
            return self._left_ray.wait_for(lambda: self._calls == 0, timeout_s)

    def close(self) -> None:
        """Nothing to release on the driver: workers close their evaluators when they exit."""

    def __enter__(self) -> RayEvaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_LIVE: weakref.WeakSet[RayEvaluator] = weakref.WeakSet()


def abort_all() -> None:
    """Ctrl-C: :meth:`RayEvaluator.abort` for every Ray evaluator of this process, then this
    driver leaves the cluster (Ray ends the job's tasks; a cluster that ``ray.init`` started
    here is shut down whole, its agents included)."""
    evaluators = list(_LIVE)
    for evaluator in evaluators:
        evaluator.abort()
    deadline = time.monotonic() + 10
    for evaluator in evaluators:
        evaluator.wait_out_of_ray(max(0.0, deadline - time.monotonic()))
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        try:
            ray.shutdown()
        except Exception:  # noqa: BLE001 - leaving anyway
            pass


def _write_tree(directory: Path, files: dict[str, bytes]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    root = directory.resolve()
    for name, data in files.items():
        path = (directory / name).resolve()
        if root not in path.parents:
            continue  # only files inside the directory (names come from the worker's listing)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def map_jobs(job: Any, args: list[tuple[Any, ...]], address: str | None = None,
             on_result: Any = None) -> list[Any]:
    """``job(*a)`` for each ``a`` in ``args`` as a Ray task on a node's CPU (one CPU each, JAX on
    the CPU, so a TPU host's chips stay free for device-mode evaluations). ``job`` must be a
    module-level function the nodes can import. Results come back in the order of ``args``;
    ``on_result`` sees each as it finishes."""
    ray = connect(address)
    remote = ray.remote(job).options(
        num_cpus=1, max_retries=DEFAULT_MAX_RETRIES,
        runtime_env={"env_vars": {"JAX_PLATFORMS": "cpu"}})
    refs = {remote.remote(*a): i for i, a in enumerate(args)}
    reports: list[Any] = [None] * len(args)
    waiting = list(refs)
    while waiting:
        ready, waiting = ray.wait(waiting, num_returns=1)
        for ref in ready:
            report = ray.get(ref)
            reports[refs[ref]] = report
            if on_result is not None:
                on_result(report)
    return reports


__all__ = ["CONNECT_TIMEOUT_ENV", "DEFAULT_CONNECT_TIMEOUT_S", "DEFAULT_MAX_RETRIES", "Cluster",
           "EvaluationLost", "RayEvaluator", "RayUnavailable", "RunSecret", "TaskResources", "abort_all",
           "cluster_accelerators", "connect", "connect_timeout", "evaluate_on_node", "evaluation_slots",
           "map_jobs", "resolve_cluster_mode", "resources_for"]
