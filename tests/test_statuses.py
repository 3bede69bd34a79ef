"""Every status is produced by a purpose-built bad kernel (tests/kernels/*.py, task 8p_gemm)."""

from pathlib import Path

import pytest

KERNELS = Path(__file__).parent / "kernels"
SEED = Path(__file__).parents[1] / "src/jaxbench/tasks/jaxbench/8p_gemm/seed_tpu.py"

CASES = [
    # file, status, stage, words the message must contain
    ("wrong_math.py", "incorrect", "correct", "exceed atol"),
    ("wrong_shape.py", "incorrect", "lower", "kernel returns [((256, 128), 'bfloat16')]"),
    ("wrong_dtype.py", "incorrect", "lower", "kernel returns [((256, 512), 'float32')]"),
    ("nan_output.py", "incorrect", "correct", "NaN/Inf"),
    ("plain_jnp.py", "no_pallas", "trace", "no pallas_call"),
    ("matmul_outside.py", "no_pallas", "lower", "outside pallas_call"),
    ("policy_subprocess.py", "rejected", "static", "subprocess"),
    ("syntax_error.py", "compile_error", "static", "SyntaxError"),
    ("no_kernel.py", "compile_error", "static", "no top-level `kernel"),
    ("import_error.py", "compile_error", "trace", "does_not_exist"),
    ("raises.py", "compile_error", "trace", "contracting dimensions"),
    ("runtime_error.py", "runtime_error", "correct", "Out-of-bounds block index"),
    ("endless_loop.py", "timeout", "correct", "no verdict within"),
    ("hard_crash.py", "crashed", "trace", "SIGSEGV"),
    ("memory_bomb.py", "crashed", "trace", "memory"),
]


@pytest.mark.parametrize("name,status,stage,words", CASES, ids=[c[0] for c in CASES])
def test_bad_kernel_gets_its_status(evaluator, name, status, stage, words):
    timeout = 10 if status == "timeout" else 180  # generous: CI machines are slow and shared
    result = evaluator.evaluate(KERNELS / name, "8p_gemm", timeout_s=timeout, trials=2, memory_gb=3)
    assert (result.status, result.stage) == (status, stage), result.message
    assert words in result.message


def test_seed_is_correct_with_every_contract_field(evaluator):
    result = evaluator.evaluate(SEED, "8p_gemm")
    assert result.status == "correct", result.message
    import hashlib
    import sys

    import jax

    expected = {"task": "8p_gemm", "target": "tpu", "mode": "interpret", "size": "small",
                "status": "correct", "stage": "correct", "message": "",
                "judged_on": "trusted_export", "trials": 3,
                # interpret mode times nothing: no figure is made up
                "t_ref_ms": None, "t_kernel_ms": None, "speedup": None,
                "source_sha256": hashlib.sha256(SEED.read_bytes()).hexdigest()}
    assert {k: getattr(result, k) for k in expected} == expected
    assert result.rel_err >= 0 and 0 < result.tol_fraction <= 1
    assert isinstance(result.compile_s, float) and result.compile_s > 0
    assert result.versions["jax"] == jax.__version__
    assert result.versions["python"] == sys.version.split()[0]
    assert result.tolerance == {"atol": 1e-2, "rtol": 1e-2}
    assert result.stages["correct"]["tpu_interpreter"] == "ran"
    assert 0 < result.max_abs_err < 0.1


def test_evaluate_accepts_source_text():
    import jaxbench

    result = jaxbench.evaluate(SEED.read_text(), "8p_gemm", trials=1, tpu_interpret=False)
    assert result.status == "correct", result.message
    assert result.kernel_file == "<kernel>"


def _tracers(root: Path, parents: set[int] | None = None) -> dict[int, int]:
    """{pid: process group} of the live tracers with their directory under ``root`` whose
    parent is this process or one of ``parents`` (a pool's fork server); zombies excluded
    (the session's shared evaluator has tracers of its own)."""
    import os

    parents = {os.getpid()} | (parents or set())
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if int(fields[1]) not in parents or fields[0] == "Z":
            continue
        command = b"jaxbench.evaluator.sandbox.tracer" in cmdline and str(root).encode() in cmdline
        forked = b"jaxbench.evaluator.sandbox.zygote" in cmdline and cwd.startswith(str(root))
        if command or forked:
            found[int(entry)] = int(fields[2])
    return found


def _tracers_once_started(root: Path, parents: set[int], expected: dict[int, int] | set[int],
                          timeout_s: float = 10.0) -> dict[int, int]:
    """:func:`_tracers` once it matches ``expected`` or ``timeout_s`` has passed: a forked
    spare is in the pool as soon as it is forked, and takes its own process group and its
    directory a moment later."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        found = _tracers(root, parents)
        matches = found == expected if isinstance(expected, dict) else set(found) == expected
        if matches or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def _group_members(pgid: int) -> list[int]:
    """Live processes in a process group (a tracer leads its own)."""
    import os

    members = []
    for entry in os.listdir("/proc"):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, NotADirectoryError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


def test_worker_leaves_no_process_or_directory(tmp_path):
    """A timed-out tracer is killed with its whole process group before the verdict comes back;
    afterwards only the warm spare lives (process and directory), and nothing after close."""
    from jaxbench.evaluator import Evaluator

    with Evaluator(spares=1, work_dir=tmp_path) as ev:
        zygote = ev.pool._zygote
        servers = {zygote.proc.pid} if zygote is not None else set()
        ev.pool.settle()  # the spare started beside the caller
        busy = ev.pool._spares.queue[0].proc.pid  # the tracer the next evaluation takes
        assert _tracers_once_started(tmp_path, servers, {busy: busy}) == {busy: busy}
        # endless while it is traced: the tracer is the process that times out
        endless = Path(__file__).parent / "adversarial/kernels/endless_trace.py"
        result = ev.evaluate(endless, "8p_gemm", timeout_s=8, trials=1)
        assert result.status == "timeout" and result.message.endswith("tracer killed")
        assert _group_members(busy) == [], "the timed-out tracer outlived its verdict"
        ev.pool.settle()
        spares = {w.proc.pid for w in list(ev.pool._spares.queue)}
        assert set(_tracers_once_started(tmp_path, servers, spares)) == spares and busy not in spares
        ev.evaluate(KERNELS / "wrong_shape.py", "8p_gemm", trials=1, tpu_interpret=False)
        ev.pool.settle()
        spare_dirs = {w.dir for w in list(ev.pool._spares.queue)}
        assert set(tmp_path.iterdir()) == spare_dirs  # only the warm spare waits
        spares = {w.proc.pid for w in list(ev.pool._spares.queue)}
        assert set(_tracers_once_started(tmp_path, servers, spares)) == spares
    assert list(tmp_path.iterdir()) == []
    assert _tracers(tmp_path, servers) == {}
    if zygote is not None:  # the fork server went with the pool
        assert zygote.proc.poll() is not None


def test_without_spares_the_runner_starts_before_the_tracer_gets_its_job():
    """`jaxbench eval` keeps no spares: its one trusted runner is started as the evaluation
    begins, so it imports and warms up while the tracer works (started only once the tracer
    was done, it added its whole start-up to every verdict's wall time)."""
    from jaxbench.evaluator import Evaluator

    events: list[str] = []
    with Evaluator(spares=0) as ev:
        assert ev.runners._idle.empty()  # nothing was started ahead
        prestart, run = ev.runners.prestart, ev.pool.run

        def starting_runner() -> None:
            prestart()
            events.append(f"runner waiting: {not ev.runners._idle.empty()}")

        def tracer_job(*args, **kwargs):
            events.append("tracer job")
            return run(*args, **kwargs)

        ev.runners.prestart, ev.pool.run = starting_runner, tracer_job
        result = ev.evaluate(SEED, "8p_gemm", trials=1, tpu_interpret=False)
    assert result.status == "correct", result.message
    assert events == ["runner waiting: True", "tracer job"]


def test_a_prestarted_runner_serves_the_next_request_and_none_starts_twice(tmp_path,
                                                                           monkeypatch):
    import sys

    from jaxbench.evaluator.parent.judge_client import RunnerPool

    monkeypatch.setenv("FAKE_DEVICE_LOG", str(tmp_path / "device.log"))
    fake = (sys.executable, str(Path(__file__).with_name("fake_device_runner.py")))
    pool = RunnerPool(spares=0, command=fake)
    started = []
    spawn = pool._spawn
    pool._spawn = lambda: started.append(spawn()) or started[-1]
    try:
        pool.prestart()
        pool.prestart()  # one is waiting already
        assert len(started) == 1
        outcome = pool.run({"name": "k", "compile_s": 0, "time_s": 0}, 30.0, None)
        assert outcome.response == {"status": "ran", "name": "k"}
        assert len(started) == 1  # the request went to the runner started ahead
        pool.prestart()  # it waits again: nothing new
        assert len(started) == 1
    finally:
        pool.close()
    pool.prestart()  # a closed pool starts nothing
    assert len(started) == 1
    assert started[0].proc.wait(timeout=30) is not None
