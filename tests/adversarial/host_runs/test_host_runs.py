"""The tracer reads nothing of the host's runs (issue 46, item 4). Started from a working
directory that holds a run directory (as the README's commands are, from a repository root),
a kernel that knows the run's absolute paths opens its ``.secret``, ``events.jsonl``,
``manifest.json`` and a kept kernel source during its trace: every open is refused (by
Landlock: the tracer's read roots are the Python installation only), the working directory is
not on the tracer's ``sys.path``, and nothing of the secret reaches the verdict. The same with
the working directory put on ``PYTHONPATH`` (a common habit: ``PYTHONPATH=.``), and for
``jaxbench serve``'s default run directory, ``runs/serve``."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from jaxbench.contract import EvaluationResult

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux-only isolation")

KERNEL = Path(__file__).parent / "read_run_secret.py"
TASK = "12p_rmsnorm"
SEED = Path(__file__).parents[3] / "src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_tpu.py"


def _landlock() -> bool:
    import importlib.util

    path = Path(__file__).parents[3] / "src/jaxbench/evaluator/sandbox/isolation.py"
    spec = importlib.util.spec_from_file_location("_iso_probe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.landlock_abi()[0] > 0


needs_landlock = pytest.mark.skipif(not _landlock(), reason="no Landlock here: reads are not "
                                    "confined (the result's isolation level says so)")


def _attacker(host: Path, run: Path, source: str) -> str:
    return (KERNEL.read_text().replace("@RUN@", str(run)).replace("@HOST@", str(host))
            .replace("@SOURCE@", source))


REPO = Path(__file__).parents[3]
# Landlock; a hidden host directory; the seal (no file opened at all)
REFUSED = (f"errno{errno.EACCES}", f"errno{errno.ENOENT}", f"errno{errno.EPERM}")


@pytest.fixture
def host():
    """A working directory beside the checkout's own files (as a repository root is), not in
    /tmp: there the tracer's hidden-directory mounts would answer before Landlock does."""
    path = Path(tempfile.mkdtemp(prefix=".host-runs-", dir=REPO)).resolve()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _host_with_a_run(host: Path) -> tuple[Path, Path, str, str]:
    """A working directory holding ``runs/mine``: a run with its secret, an evaluation event
    and a kept source. (host, run, secret hex, the kept source's relative path)."""
    from jaxbench.runs import RunDir

    run = RunDir.open(host / "runs" / "mine", {"command": "test"})
    kept = run.keep_source(SEED.read_text())
    run.append(EvaluationResult(task=TASK, target="tpu", mode="interpret", size="small",
                                status="correct", extra={"source_file": kept}).to_event())
    secret = run.secret.hex()
    assert not (run.path / ".secret").exists()  # in memory only
    return host, run.path, secret, kept


def _assert_nothing_read(result: EvaluationResult, secret: str | None, host: Path,
                         path_checked: bool) -> None:
    message = result.message
    assert result.status != "correct", result
    assert "REPORT" in message, message  # the kernel ran its reads and said what it got
    assert "READ:" not in message, message
    for name in (".secret", "events.jsonl", "manifest.json", "proc_root_secret"):
        assert any(f"{name}={code}" in message for code in REFUSED), message
    if path_checked:
        assert "on_path=[]" in message, message
    stored = json.dumps(result.to_event())
    assert secret is None or (secret not in stored and secret[:24] not in stored)


@needs_landlock
@pytest.mark.parametrize("profile", ["full", "no-seal"])
@pytest.mark.parametrize("environment", ["plain", "pythonpath_dot", "library_path_above"])
def test_a_kernel_cannot_read_the_hosts_run_directory(host, monkeypatch, environment, profile):
    """``pythonpath_dot``: the working directory on ``PYTHONPATH``; ``library_path_above``:
    also a directory holding it named as a kernel library directory
    (``JAXBENCH_TRACER_LIBRARY_PATH``), which the pool drops. Sealed (``full``) and with
    Landlock's read roots alone (host profile ``no-seal``: each layer holds by itself)."""
    from jaxbench.evaluator import Evaluator

    host, run, secret, kept = _host_with_a_run(host)
    monkeypatch.chdir(host)
    monkeypatch.setenv("JAXBENCH_HOST_PROFILE", profile)
    on_pythonpath = environment != "plain"
    if on_pythonpath:
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
            ["."] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    if environment == "library_path_above":
        monkeypatch.setenv("JAXBENCH_TRACER_LIBRARY_PATH", str(host.parent))
    with Evaluator(spares=0) as evaluator:  # its tracers start from here, with this environment
        result = evaluator.evaluate(_attacker(host, run, kept), TASK, trials=1, mode="interpret")
    _assert_nothing_read(result, secret, host, path_checked=not on_pythonpath)
    assert any(f"{kept}={code}" in result.message for code in REFUSED), result.message


ATTACK = Path(__file__).parent / "rederive_from_secret.py"


@needs_landlock
@pytest.mark.parametrize("environment", ["plain", "pythonpath_dot", "no_landlock",
                                         "readable_sealed", "readable_control"])
def test_the_attack_of_issue_46_from_a_directory_holding_the_run_is_not_correct(
        host, monkeypatch, environment):
    """The whole attack: read the secret, re-derive the keys, draw the inputs, embed the losses.
    Evaluated as ``jaxbench run --out runs/mine`` evaluates (the run's secret, from the
    directory that holds the run, planted where older versions kept it: it is never on disk
    now), it is `incorrect`: the secret could not be read; so on a host without Landlock and
    namespaces (host profile ``no-landlock``, a TPU VM: the seal alone) and where the run
    directory is readable as far as Landlock goes (named as a kernel library directory) but
    the tracer is sealed. The attack's own control: readable and unsealed (host profile
    ``no-seal``), the same kernel is `correct`, so the other cases fail exactly where a tracer
    can read the run."""
    from jaxbench.evaluator import Evaluator
    from jaxbench.runs import RunDir

    run = RunDir.open(host / "runs" / "mine", {"command": "test"})
    (run.path / ".secret").write_text(run.secret.hex())
    monkeypatch.chdir(host)
    if environment == "pythonpath_dot":
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
            ["."] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    if environment == "no_landlock":
        monkeypatch.setenv("JAXBENCH_HOST_PROFILE", "no-landlock")
    if environment.startswith("readable"):
        monkeypatch.setenv("JAXBENCH_TRACER_LIBRARY_PATH", str(run.path))
    if environment == "readable_control":
        monkeypatch.setenv("JAXBENCH_HOST_PROFILE", "no-seal")
    source = ATTACK.read_text().replace("@RUN@", str(run.path))
    with Evaluator(secret=run.secret, spares=0) as evaluator:
        result = evaluator.evaluate(source, "13p_cross_entropy", size="small", trials=3,
                                    mode="interpret")
    if environment == "readable_control":
        assert result.status == "correct", result
        return
    assert (result.status, result.stage) == ("incorrect", "correct"), result
    assert run.secret.hex() not in json.dumps(result.to_event())


@needs_landlock
def test_serve_default_run_directory_is_unreadable_to_kernels(host, monkeypatch):
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    pytest.importorskip("httpx")
    monkeypatch.syspath_prepend(str(Path(__file__).parents[2]))  # tests/, for its helpers
    from serve_helpers import Server

    from jaxbench.contract import source_sha256
    from jaxbench.serve import Client

    monkeypatch.chdir(host)
    token = "hostruns-token-0123456789abcdef"
    (host / "tokens").write_text(f"me:{token}\n")
    # `--out runs/serve` is the default; the helper names it, relative, from this directory
    service = Server(Path("runs/serve"), "--workers", "1", "--tokens", "tokens")
    try:
        run = host / "runs" / "serve"
        assert not (run / ".secret").exists()  # the service's secret is in its memory only
        with Client(service.url, token=token, retries=0) as client:
            honest = client.evaluate(SEED.read_text(), TASK, timeout_s=600)
            assert honest.status == "correct", honest  # a kept source and events to steal
            kept = f"sources/{source_sha256(SEED.read_text())}.py"
            assert (run / kept).is_file() and (run / "events.jsonl").is_file()
            view = client.evaluate(_attacker(host, run, kept), TASK, timeout_s=600)
    finally:
        assert service.stop() in (0, -15), service.log()
    assert view.state == "done", view
    from jaxbench.runs import read_events

    revealed = [e["secret"] for e in read_events(run) if e.get("type") == "run_end"
                and e.get("secret")]  # a service that reveals its secret when it stops
    secret = revealed[-1] if revealed else None
    _assert_nothing_read(view.result, secret, host, path_checked=True)
    assert secret is None or secret not in json.dumps(view.to_json())
