"""The chip has one owner (jaxbench.backends.host, ChipOwners in parent/judge_client.py).

No accelerator here, so the promise is shown with a fake PJRT plugin that JAX itself discovers
(a module under the `jax_plugins` namespace, as real plugins ship): its backend factory writes
the pid of every process that asks JAX to open it. The command must never be one of them; the
short-lived probe is (which shows the plugin is live and would have been opened)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from jaxbench.backends import host
from jaxbench.evaluator.parent.judge_client import ChipOwners
from jaxbench.tasks import get_task

FAKE = (sys.executable, str(Path(__file__).with_name("fake_device_runner.py")))

PLUGIN = '''
import os


def initialize():
    from jax._src import xla_bridge

    def factory():
        with open(os.environ["FAKE_CHIP_LOG"], "a") as log:
            log.write(f"{os.getpid()}\\n")
        raise RuntimeError("fake chip: nothing attached")

    xla_bridge.register_backend_factory("fakechip", factory, priority=500, fail_quietly=True)
'''


def _with_plugin(tmp_path: Path) -> dict[str, str]:
    plugin = tmp_path / "plug" / "jax_plugins" / "jaxbench_fake_chip"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(PLUGIN)
    env = {k: v for k, v in os.environ.items()
           if k not in ("JAX_PLATFORMS", host.ACCELERATOR_PLATFORMS)}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "plug"), env.get("PYTHONPATH", "")])
    env["FAKE_CHIP_LOG"] = str(tmp_path / "opened.log")
    return env


def _opened(tmp_path: Path) -> list[int]:
    log = tmp_path / "opened.log"
    return [int(line) for line in log.read_text().split()] if log.exists() else []


def test_the_fake_plugin_is_opened_by_a_process_that_does_not_keep_off(tmp_path):
    """The control: a plain JAX process with the plugin installed opens it."""
    env = _with_plugin(tmp_path)
    out = subprocess.run([sys.executable, "-c", "import jax; print(jax.devices()[0].platform)"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-500:]
    assert len(_opened(tmp_path)) == 1


@pytest.mark.parametrize("command", [
    ["eval", "src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_tpu.py", "--task", "12p_rmsnorm",
     "--json"],
    ["run", "--tasks", "12p_rmsnorm", "--kernels", "seed", "--target", "tpu", "--json"],
])
def test_the_command_never_opens_an_accelerator_backend(tmp_path, command):
    env = _with_plugin(tmp_path)
    if command[0] == "run":
        command = [*command, "--out", str(tmp_path / "run")]
    proc = subprocess.Popen([sys.executable, "-m", "jaxbench.cli", *command], env=env,
                            cwd=Path(__file__).parents[1], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-1500:]
    assert '"status": "correct"' in stdout
    opened = _opened(tmp_path)
    assert proc.pid not in opened  # the command itself never asked JAX for the chip
    assert len(opened) == 1  # the probe did, once; no tracer or checking runner did


def test_the_parents_truth_in_a_plain_process_never_opens_an_accelerator(tmp_path):
    """The float32 truth (parent/compare.py, also the validator's and the in-process tools')
    asks JAX only for the CPU, also in a process that never kept off the accelerator: asking
    for any device would open every platform, the chip among them."""
    env = _with_plugin(tmp_path)
    script = ("from jaxbench.evaluator.parent.compare import GroundTruth; "
              "from jaxbench.tasks import get_task; "
              "print(GroundTruth()(get_task('12p_rmsnorm'), 'small', [1, 2])[0].shape)")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-800:]
    assert _opened(tmp_path) == []


def test_keep_off_accelerators_remembers_what_the_user_asked_for(tmp_path):
    script = ("import os, jax; from jaxbench.backends import host; host.keep_off_accelerators(); "
              "print(os.environ['JAX_PLATFORMS'], os.environ[host.ACCELERATOR_PLATFORMS], "
              "jax.config.jax_platforms, host.owner_env(dict(os.environ)).get('JAX_PLATFORMS'))")
    env = {k: v for k, v in os.environ.items() if k != host.ACCELERATOR_PLATFORMS}
    env["JAX_PLATFORMS"] = "tpu,cpu"
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.split() == ["cpu", "tpu,cpu", "cpu", "tpu,cpu"], out.stderr[-500:]


def test_a_process_that_holds_the_chip_cannot_be_the_judge(monkeypatch):
    from jaxbench import backends

    monkeypatch.setattr(backends, "accelerator_platform", lambda: "tpu")
    monkeypatch.setattr(backends, "holds_accelerator", lambda: True)
    with pytest.raises(RuntimeError, match="one owner"):
        backends.resolve_mode("device", "tpu")


def test_owner_env_gives_each_owner_one_chip_of_several():
    base = {"JAX_PLATFORMS": "cpu", host.ACCELERATOR_PLATFORMS: ""}
    assert "JAX_PLATFORMS" not in host.owner_env(base)
    assert "TPU_VISIBLE_CHIPS" not in host.owner_env(base, 0, 1)
    two = host.owner_env(base, 1, 4)
    assert two["TPU_VISIBLE_CHIPS"] == "1" and two["CUDA_VISIBLE_DEVICES"] == "1"


def test_one_owner_per_chip_serves_every_request(tmp_path, monkeypatch):
    """Requests from many threads: one process per chip answers them all, one at a time."""
    log = tmp_path / "device.log"
    monkeypatch.setenv("FAKE_DEVICE_LOG", str(log))
    owners = ChipOwners(chips=2, command=FAKE, env=dict(os.environ))
    try:
        outcomes: list = []
        threads = [threading.Thread(target=lambda i=i: outcomes.append(owners.run(
            {"name": f"r{i}", "pid": True, "compile_s": 0.1, "time_s": 0.1}, 30)))
            for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        owners.close()
    assert all(o.response and o.response["status"] == "ran" for o in outcomes)
    pids = {o.response["pid"] for o in outcomes}
    assert len(pids) == 2  # one owner per chip, kept warm
    rows = [line.split() for line in log.read_text().splitlines()]
    by_owner: dict[str, list] = {}
    names = {o.response["name"]: o.response["pid"] for o in outcomes}
    for _phase, start, end, name in rows:
        by_owner.setdefault(names[name], []).append((float(start), float(end), name))
    for uses in by_owner.values():  # one owner never works on two requests at once
        clash = [(a, b) for a in uses for b in uses if a[2] != b[2] and a[0] < b[1] and b[0] < a[1]]
        assert clash == []
    assert any(o.waited_s > 0.05 for o in outcomes)  # later requests waited for a chip


@pytest.mark.parametrize("depth", [1, 2])
def test_a_prestarted_owner_is_the_one_that_serves(tmp_path, monkeypatch, depth):
    """``prestart`` starts each chip's owner at once, without waiting for it (the TPU runtime's
    start then overlaps the tracer's work); the first request is served by that process, not
    a second one, and a second prestart starts nothing."""
    monkeypatch.setenv("FAKE_DEVICE_LOG", str(tmp_path / "device.log"))
    owners = ChipOwners(chips=2, command=FAKE, env=dict(os.environ), depth=depth)
    try:
        started = time.monotonic()
        owners.prestart()
        assert time.monotonic() - started < 5
        first = {o.runner.proc.pid for o in owners._owners}
        owners.prestart()
        assert {o.runner.proc.pid for o in owners._owners} == first and len(first) == 2
        if depth > 1:  # the runner taking requests beside each other: the kind started
            assert all(type(o.runner).__name__ == "SharedRunner" for o in owners._owners)
            return
        outcome = owners.run({"name": "a", "pid": True}, 30)
    finally:
        owners.close()
    assert outcome.response and outcome.response["pid"] in first


BUSY_RUNNER = '''
import os, sys
count = os.environ["BUSY_COUNT"]
n = int(open(count).read()) if os.path.exists(count) else 0
open(count, "w").write(str(n + 1))
if n == 0:
    sys.stderr.write("RuntimeError: Unable to initialize backend 'tpu': ABORTED: Internal error "
                     "when accessing libtpu multi-process lockfile\\n")
    sys.exit(1)
os.execv(sys.executable, [sys.executable, sys.argv[1]])
'''


def test_an_owner_refused_by_a_chip_just_released_is_started_again(tmp_path, monkeypatch):
    script = tmp_path / "busy.py"
    script.write_text(BUSY_RUNNER)
    monkeypatch.setenv("BUSY_COUNT", str(tmp_path / "count"))
    monkeypatch.setenv("FAKE_DEVICE_LOG", str(tmp_path / "device.log"))
    monkeypatch.setattr(ChipOwners, "BUSY_PAUSE_S", 0.2)
    owners = ChipOwners(command=(sys.executable, str(script), FAKE[1]), env=dict(os.environ))
    try:
        outcome = owners.run({"name": "a"}, 30)
    finally:
        owners.close()
    assert outcome.response and outcome.response["status"] == "ran", outcome.log_tail
    assert (tmp_path / "count").read_text() == "2"
    assert outcome.start_s >= 0.2


def test_the_probe_reads_what_a_chip_process_says(tmp_path, monkeypatch):
    """The probe's answer comes from a child process: here one with no accelerator, then the
    chip busy (a lockfile error) is named as such, not as a missing chip."""
    assert host.probe(env={**os.environ, "JAX_PLATFORMS": "cpu"}) is None
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho '{\"error\": \"Internal error when accessing libtpu "
                    "multi-process lockfile\"}'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(host.sys, "executable", str(fake))
    monkeypatch.setattr(host.time, "sleep", lambda s: None)
    with pytest.raises(RuntimeError, match="held by another process"):
        host.probe(env=dict(os.environ))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is gone as far as the chip goes
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("depth", [1, 2])
def test_the_first_owner_answers_the_probe_and_serves_the_first_request(tmp_path, monkeypatch,
                                                                         depth):
    """The probe is answered by the chip's first owner, which keeps the chip: the owners of a
    one-chip host take that very process (the chip is opened once per command)."""
    from jaxbench.evaluator.parent import first_owner

    monkeypatch.setenv("FAKE_DEVICE_LOG", str(tmp_path / "device.log"))
    env = dict(os.environ)
    found = host.probe(ask=lambda: first_owner.ask(depth, command=FAKE, env=env))
    assert found == host.Attached("tpu", "TPU v5 lite", 1, None)
    assert first_owner.holding()
    held = first_owner._HELD["runner"].proc.pid
    owners = ChipOwners(found.count, command=FAKE, env=env, depth=depth, adopt=first_owner.take)
    try:
        assert not first_owner.holding()
        owners.prestart()  # starts nothing: chip 0 has its owner
        assert owners._owners[0].runner.proc.pid == held
        if depth > 1:  # the kind taken is the kind the owners start (the fake speaks depth 1)
            assert type(owners._owners[0].runner).__name__ == "SharedRunner"
            return
        outcome = owners.run({"name": "a", "pid": True}, 30)
    finally:
        owners.close()
    assert outcome.response and outcome.response["pid"] == held, outcome.log_tail


def test_a_first_owner_started_otherwise_or_on_several_chips_is_stopped(tmp_path, monkeypatch):
    """Another environment (or command) than the owners' own, or a host of several chips (it
    opened all of them; each owner must see one): the first owner is stopped, not taken, and
    the owners start their own."""
    from jaxbench.evaluator.parent import first_owner

    monkeypatch.setenv("FAKE_DEVICE_LOG", str(tmp_path / "device.log"))
    env = dict(os.environ)
    assert first_owner.ask(2, command=FAKE, env={**env, "FAKE_CHIPS": "2"})["count"] == 2
    pid = first_owner._HELD["runner"].proc.pid
    owners = ChipOwners(2, command=FAKE, env=env, depth=2, adopt=first_owner.take)
    try:
        owners.prestart()
        assert pid not in {o.runner.proc.pid for o in owners._owners}
    finally:
        owners.close()
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid) and not first_owner.holding()
    first_owner.ask(1, command=FAKE, env=env)
    other = first_owner._HELD["runner"].proc.pid
    assert first_owner.take({**env, "ANOTHER": "1"}, first_owner.Runner, FAKE) is None
    assert not first_owner.holding()
    while _alive(other) and time.monotonic() < deadline + 10:
        time.sleep(0.05)
    assert not _alive(other)


def test_a_first_owner_that_finds_no_accelerator_is_not_kept(monkeypatch, tmp_path):
    from jaxbench.evaluator.parent import first_owner

    monkeypatch.setenv("FAKE_DEVICE_LOG", str(tmp_path / "device.log"))
    said = first_owner.ask(1, command=FAKE, env={**os.environ, "FAKE_PLATFORM": "cpu"})
    assert said["platform"] == "cpu" and not first_owner.holding()
    broken = first_owner.ask(1, command=(sys.executable, "-c", "import sys; "
                                         "sys.stderr.write('no libtpu here'); sys.exit(1)"))
    assert "no libtpu here" in broken["error"] and not first_owner.holding()
    with pytest.raises(RuntimeError, match="probe failed: .*no libtpu here"):
        host.probe(ask=lambda: broken)


def test_spans_of_an_interpret_evaluation_add_up_to_its_wall():
    from jaxbench.evaluator import evaluate

    task = get_task("12p_rmsnorm")
    started = time.monotonic()
    result = evaluate(task.kernel_files()[("seed", "tpu")], task.id)
    assert result.status == "correct", result.message
    spans = result.spans
    assert abs(sum(spans.values()) - result.wall_s) <= 0.05 * result.wall_s
    assert result.wall_s <= time.monotonic() - started
    # each part of the work is measured where it runs, not left in a remainder
    for name in ("trace", "read", "lower", "check", "inputs", "kernel_compile", "trials"):
        assert spans.get(name, 0) > 0, (name, spans)
    assert json.loads(json.dumps(result.to_event()))["spans"] == spans


@pytest.mark.parametrize("command", [["eval", "src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_tpu.py",
                                      "--task", "12p_rmsnorm"],
                                     ["run", "--tasks", "12p_rmsnorm", "--kernels", "seed",
                                      "--target", "tpu"]])
def test_the_first_owner_is_started_as_the_owners_would_be(tmp_path, monkeypatch, command):
    """The owners take the first owner only when it was started exactly as theirs would be.
    In `eval` and `run`, the environment the probe starts it with must be the one the owners
    are made with, or the command opens the chip twice again (no chip here: the probe's
    answer is a CPU, and both environments are recorded)."""
    from click.testing import CliRunner

    from jaxbench.cli import main
    from jaxbench.evaluator.parent import evaluator as evaluator_module
    from jaxbench.evaluator.parent import first_owner
    from jaxbench.evaluator.parent.judge_client import chip_owner_env

    seen: dict[str, dict[str, str]] = {}

    def ask(depth: int, **_: object) -> dict[str, object]:
        seen["probe"] = chip_owner_env(0, 1, depth)
        return {"platform": "cpu", "device_kind": "", "count": 0, "memory_bytes": None}

    made = evaluator_module.Evaluator.__init__

    def init(self, *args, **kwargs):
        made(self, *args, **kwargs)
        seen["owners"] = chip_owner_env(0, 1, evaluator_module.owner_depth())

    monkeypatch.setattr(host, "accelerator_installed", lambda: True)
    host.attached.cache_clear()
    monkeypatch.setattr(first_owner, "ask", ask)
    monkeypatch.setattr(evaluator_module.Evaluator, "__init__", init)
    try:
        extra = ["--out", str(tmp_path / "run")] if command[0] == "run" else []
        out = CliRunner().invoke(main, [*command, *extra, "--json"])
    finally:
        host.attached.cache_clear()
        host.probe_with(None)
    assert out.exit_code == 0, out.output[-800:]
    assert set(seen) == {"probe", "owners"}
    assert seen["probe"] == seen["owners"]
