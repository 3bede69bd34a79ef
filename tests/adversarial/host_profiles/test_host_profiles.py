"""The attacks that forged verdicts on a TPU v5e (gVisor: no Landlock, no user namespaces), run
under the host profiles (JAXBENCH_HOST_PROFILE, jaxbench/evaluator/sandbox/seal.py): ``full``
(every layer this host has) and ``no-landlock`` (the seal alone, as on that TPU host). Under
both, none is `correct` and none reads, writes or connects to anything of the host's; the
honest control stays `correct`. Under ``bare`` (nothing seals) the secret's read succeeds:
what the seal stops, and why such a host runs only when told to run unsealed."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent
KERNELS = HERE / "kernels"
EXPERT_CHEAT = HERE.parent / "kernels" / "read_expert_exec_obfuscated.py"
GEMM = "8p_gemm"
SECRET_DIR = Path("/tmp/jaxbench_adversarial_run")
DUMP_DIR = Path("/tmp/jaxbench_adversarial_xla_dump")
OS_ISOLATION = "sandbox (OS isolation)"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux-only isolation")


def _evaluator(profile: str):
    from jaxbench.evaluator import Evaluator

    old = os.environ.get("JAXBENCH_HOST_PROFILE")
    os.environ["JAXBENCH_HOST_PROFILE"] = profile  # read when the tracers' pool starts
    try:
        return Evaluator(spares=0)
    finally:
        if old is None:
            os.environ.pop("JAXBENCH_HOST_PROFILE")
        else:
            os.environ["JAXBENCH_HOST_PROFILE"] = old


@pytest.fixture(scope="module", params=["full", "no-landlock"])
def profiled(request) -> Iterator[tuple[str, object]]:
    with _evaluator(request.param) as ev:
        yield request.param, ev


@pytest.fixture(scope="module")
def planted_secret() -> Iterator[Path]:
    SECRET_DIR.mkdir(exist_ok=True)
    path = SECRET_DIR / ".secret"
    path.write_text("00" * 32)
    yield path


def _evaluate(ev, source: str, name: str):
    del name  # shown in a failure's parameters only
    return ev.evaluate(source, GEMM, trials=1, tpu_interpret=False)


def _source(name: str) -> str:
    return (KERNELS / name).read_text()


@pytest.mark.parametrize("name", ["run_secret_obfuscated.py", "ancestor_cmdline_obfuscated.py"])
def test_host_reads_are_refused(profiled, planted_secret, name):
    profile, ev = profiled
    result = _evaluate(ev, _source(name), name)
    assert (result.status, result.stage) == ("rejected", "trace"), (profile, result.message)
    assert OS_ISOLATION in result.message, result.message
    assert "seccomp" in result.sealed, result.sealed


def test_the_shipped_expert_is_neither_read_nor_run(profiled):
    profile, ev = profiled
    result = _evaluate(ev, EXPERT_CHEAT.read_text(), EXPERT_CHEAT.name)
    assert (result.status, result.stage) == ("rejected", "trace"), (profile, result.message)
    assert OS_ISOLATION in result.message, result.message


def test_xla_writes_nothing_outside(profiled):
    profile, ev = profiled
    shutil.rmtree(DUMP_DIR, ignore_errors=True)
    result = _evaluate(ev, _source("xla_dump_outside_obfuscated.py"), "xla_dump.py")
    assert not DUMP_DIR.exists(), (profile, result.status, sorted(os.listdir(DUMP_DIR)))


class _TcpListener:
    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


def test_jax_distributed_connects_nowhere(profiled):
    profile, ev = profiled
    listener = _TcpListener()
    try:
        source = _source("distributed_tcp_obfuscated.py").replace("PORT", str(listener.port))
        result = _evaluate(ev, source, "distributed_tcp.py")
    finally:
        listener.close()
    assert listener.accepted == 0, profile
    assert result.status != "correct", result


def test_the_honest_control_stays_correct(profiled):
    profile, ev = profiled
    result = _evaluate(ev, _source("honest_control.py"), "honest_control.py")
    assert result.status == "correct", (profile, result.message)
    expected = "seccomp+landlock" if profile == "full" else "seccomp"
    assert result.sealed.startswith(expected), result.sealed
    assert "landlock" not in result.sealed or profile == "full"


def test_without_any_seal_the_read_succeeds(planted_secret):
    """The same attack on a host where nothing seals: the secret is read and the verdict is
    `correct`, which is why run, optimize and serve refuse such a host unless told otherwise."""
    with _evaluator("bare") as ev:
        result = _evaluate(ev, _source("run_secret_obfuscated.py"), "run_secret.py")
    assert result.status == "correct", result.message
    assert result.sealed == "none"


def _held_chip(tmp_path: Path, monkeypatch) -> tuple[object, threading.Thread]:
    from jaxbench.evaluator.parent import held

    monkeypatch.setenv("FAKE_DEVICE_LOG", str(tmp_path / "device.log"))
    fake = (sys.executable, str(HERE.parents[1] / "fake_device_runner.py"))
    chip = held.HeldChip(command=fake, env=dict(os.environ), path=tmp_path / "hold" / "chip.sock")
    chip.start()
    serving = threading.Thread(target=chip.serve, daemon=True)
    serving.start()
    return chip, serving


def _reach_held_chip(ev, tmp_path: Path, monkeypatch) -> tuple[object, int]:
    """The cheat against a real held chip (the stand-in owner behind it): its verdict and the
    connections the held chip took."""
    chip, serving = _held_chip(tmp_path, monkeypatch)
    try:
        source = _source("held_chip_obfuscated.py").replace("PATH", str(chip.path))
        result = _evaluate(ev, source, "held_chip.py")
        return result, chip.status()["accepted"]
    finally:
        chip.stop()
        serving.join(20)


def test_the_held_chip_cannot_be_reached(profiled, tmp_path, monkeypatch):
    """A chip held by `jaxbench hold` serves this user's commands over a Unix socket; a
    candidate's tracer must not reach it (it would stop it, or submit requests and read their
    verdicts)."""
    profile, ev = profiled
    result, accepted = _reach_held_chip(ev, tmp_path, monkeypatch)
    assert accepted == 0, (profile, result.message)
    assert result.status != "correct", result


def test_without_any_seal_the_held_chip_is_reached(tmp_path, monkeypatch):
    """The control: where nothing seals, the same cheat's connection reaches the held chip."""
    with _evaluator("bare") as ev:
        result, accepted = _reach_held_chip(ev, tmp_path, monkeypatch)
    assert accepted >= 1, result.message
