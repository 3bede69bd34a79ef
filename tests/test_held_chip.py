"""A held chip (`jaxbench hold`, jaxbench/evaluator/parent/held.py): the chip's owner kept
between commands and served over a Unix socket of this user's alone.

No chip here: the owner is the stand-in runner (tests/fake_device_runner.py), which says a
probe line as the first owner does and records every request it serves."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from jaxbench.backends import host
from jaxbench.evaluator.parent import first_owner, held
from jaxbench.evaluator.parent.held import HeldChip, HeldOwners, HoldError

FAKE = (sys.executable, str(Path(__file__).with_name("fake_device_runner.py")))
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="SO_PEERCRED is Linux's")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


class _Serving:
    """A HeldChip serving in a thread (as `jaxbench hold` does in its main thread)."""

    def __init__(self, path: Path, env: dict[str, str] | None, idle_s: float = 60.0) -> None:
        self.chip = HeldChip(idle_s=idle_s, depth=1, command=FAKE, env=env, path=path)
        self.said = self.chip.start()
        self.owner_pid = self.chip.owners._owners[0].runner.proc.pid
        self.why: list[str] = []
        self.thread = threading.Thread(target=lambda: self.why.append(self.chip.serve()),
                                       daemon=True)
        self.thread.start()

    def wait(self, timeout_s: float = 20.0) -> str:
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "the held chip did not stop"
        return self.why[0]


@pytest.fixture
def place(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("FAKE_DEVICE_LOG", str(tmp_path / "device.log"))
    hold_dir = tmp_path / "hold"
    monkeypatch.setenv(held.DIR_ENV, str(hold_dir))
    yield hold_dir / "chip.sock"
    held.release()
    first_owner.release()


def _command(env: dict[str, str], path: Path, name: str) -> tuple[dict, object]:
    """What one command does: asks the held chip (its probe), takes its owners, one request."""
    said = held.ask(1, env=env, path=path)
    owners = held.take()
    assert isinstance(owners, HeldOwners), said
    try:
        outcome = owners.run({"name": name, "pid": True}, 30)
    finally:
        owners.close()
    return said, outcome


def test_commands_use_the_held_owner_and_open_no_chip(place):
    """Two commands in a row: both answered by the one process that opened the chip when the
    hold started; the probe's line is the held owner's; stopping releases the chip (the owner
    process ends) and removes the socket."""
    env = dict(os.environ)
    serving = _Serving(place, env)
    assert serving.said["device_kind"] == "TPU v5 lite"
    assert oct(place.parent.stat().st_mode & 0o777) == "0o700"
    for name in ("first", "second"):
        said, outcome = _command(env, place, name)
        assert said == serving.said
        assert outcome.response == {"status": "ran", "name": name, "pid": serving.owner_pid}
    assert held.held_status(place)["served"] == 2
    assert held.stop_held(place)["pid"] == os.getpid()
    assert serving.wait() == "stopped"
    assert not place.exists() and not _alive(serving.owner_pid)
    assert held.held_status(place) is None and held.ask(1, env=env, path=place) is None


def test_a_held_chip_started_otherwise_is_refused_with_what_to_do(place):
    """A command whose owner would run with other settings (an XLA flag) gets no verdicts from
    the held owner: the probe fails with one line naming the difference and the way out."""
    env = dict(os.environ)
    serving = _Serving(place, env)
    try:
        said = held.ask(1, env={**env, "XLA_FLAGS": "--xla_dump_to=/tmp/x"}, path=place)
        assert "XLA_FLAGS" in said["error"] and "jaxbench hold --stop" in said["error"]
        assert held.take() is None
        with pytest.raises(RuntimeError, match="XLA_FLAGS"):
            host.probe(ask=lambda: held.ask(1, env={**env, "XLA_FLAGS": "-x"}, path=place))
        depth = held.ask(2, env=env, path=place)  # another depth: another owner's kind
        assert "JAXBENCH_OWNER_DEPTH" in depth["error"]
        assert held.held_status(place)["served"] == 0
    finally:
        held.stop_held(place)
        serving.wait()


def test_idle_releases_the_chip(place):
    serving = _Serving(place, dict(os.environ), idle_s=0.5)
    assert serving.wait() == "idle for 0.5 s"
    assert not _alive(serving.owner_pid) and not place.exists()


def test_a_second_hold_is_refused_and_a_stale_socket_is_not_a_hold(place):
    env = dict(os.environ)
    place.parent.mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(place))
    stale.close()  # its server is gone; the file stays
    assert held.ask(1, env=env, path=place) is None and held.held_status(place) is None
    serving = _Serving(place, env)  # takes the place of the stale one
    try:
        with pytest.raises(HoldError, match="held already"):
            HeldChip(command=FAKE, env=env, path=place).start()
        assert _alive(serving.owner_pid)
    finally:
        held.stop_held(place)
        serving.wait()


def test_a_held_chip_that_does_not_answer_is_named_not_waited_for(place, monkeypatch):
    """A socket that accepts and says nothing (a held chip stuck): the probe fails in one line
    after the connection's timeout instead of hanging the command."""
    monkeypatch.setattr(held._connect, "__defaults__", (0.5,))
    place.parent.mkdir(mode=0o700)
    mute = socket.socket(socket.AF_UNIX)
    mute.bind(str(place))
    mute.listen()
    try:
        started = time.monotonic()
        said = held.ask(1, env=dict(os.environ), path=place)
    finally:
        mute.close()
    assert "did not answer" in said["error"] and time.monotonic() - started < 5
    assert held.take() is None


def test_a_host_of_several_chips_is_not_held(place):
    """One owner per chip: a hold of one owner would leave the other chips idle (and that owner
    would see them all), so a host of several chips is refused, the chip released."""
    with pytest.raises(HoldError, match="2 chips"):
        HeldChip(command=FAKE, env={**os.environ, "FAKE_CHIPS": "2"}, path=place).start()
    assert not first_owner.holding() and not place.exists()


def test_a_socket_in_a_directory_others_may_enter_is_neither_served_nor_used(place):
    """Another user could pose as the held chip (and hand back verdicts) or reach it: the
    directory must be this user's alone, for the hold and for a command."""
    env = dict(os.environ)
    place.parent.mkdir(mode=0o755)
    place.parent.chmod(0o755)
    with pytest.raises(HoldError, match="alone"):
        HeldChip(command=FAKE, env=env, path=place).start()
    impostor = socket.socket(socket.AF_UNIX)
    impostor.bind(str(place))
    impostor.listen()
    try:
        said = held.ask(1, env=env, path=place)
    finally:
        impostor.close()
    assert "cannot be used" in said["error"] and "alone" in said["error"]
    assert held.take() is None


def test_a_request_in_flight_when_the_hold_stops_ends_without_a_verdict(place):
    env = dict(os.environ)
    serving = _Serving(place, env)
    held.ask(1, env=env, path=place)
    owners = held.take()
    threading.Timer(0.5, held.stop_held, args=(place,)).start()
    outcome = owners.run({"name": "long", "compile_s": 5.0}, 30)
    owners.close()
    assert outcome.response is None
    assert serving.wait() == "stopped"
    assert not _alive(serving.owner_pid)


def test_the_evaluator_takes_the_held_chips_owners(place, monkeypatch):
    """A command's probe asks the held chip first; its evaluator's owners are the held ones,
    and no first owner of its own is started."""
    from jaxbench.evaluator.parent import evaluator as module

    monkeypatch.setenv("JAXBENCH_OWNER_DEPTH", "1")
    serving = _Serving(place, None)
    try:
        assert module._ask_an_owner() == serving.said
        assert not first_owner.holding()
        monkeypatch.setattr(module, "attached", lambda: host.Attached("tpu", "TPU v5 lite", 1))
        ev = module.Evaluator.__new__(module.Evaluator)
        ev._owners, ev._owners_lock = None, threading.Lock()
        owners = ev.owners
        assert isinstance(owners, HeldOwners)
        assert owners.run({"name": "x", "pid": True}, 30).response["pid"] == serving.owner_pid
        owners.close()
    finally:
        held.stop_held(place)
        serving.wait()


def test_the_command_says_what_is_held(place, tmp_path):
    """`jaxbench hold --status` and `--stop` with no chip held: exit 1 and say so; `jaxbench
    hold` where only the CPU answers: one line, exit 2, and nothing left behind."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    for flag in ("--status", "--stop"):
        out = subprocess.run([sys.executable, "-m", "jaxbench.cli", "hold", flag],
                             capture_output=True, text=True, env=env, timeout=60)
        assert (out.returncode, out.stdout.strip()) == (1, "no chip is held"), out.stderr
    out = subprocess.run([sys.executable, "-m", "jaxbench.cli", "hold", "--status", "--json"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert json.loads(out.stdout) is None
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "jaxbench.cli", "hold", "--idle", "5"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2 and "no accelerator to hold here" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and time.monotonic() - started < 60
    assert not place.exists()
