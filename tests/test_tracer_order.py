"""The tracer's order is a property, checked here: every piece of candidate code runs before
the process is sealed, the hand-over is made and every file the parent reads is written while
sealed, and status.json is the last file written. Sealed, any audited action with candidate
code on the stack ends the process before it happens."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from jaxbench.tasks import get_task

RECORDER = textwrap.dedent("""
    import json, sys
    from pathlib import Path

    import jax

    import jaxbench.tasks
    from jax.experimental.pallas import tpu, triton  # noqa: F401 - what the tracer preloads
    from jaxbench.evaluator.sandbox import guards, handover, tracer

    jaxbench.tasks.list_tasks()
    guards.install_hook()  # as tracer.main does, before the job
    tracer._warm_up()
    events = []
    directory = Path(sys.argv[1])
    job = json.loads(Path(sys.argv[2]).read_text())
    sealed = lambda: bool(guards._state.get("sealed"))

    real_make_jaxpr = jax.make_jaxpr

    def make_jaxpr(fn, *a, **k):
        traced = real_make_jaxpr(fn, *a, **k)
        def call(*args):
            if getattr(fn, "__module__", None) == "candidate":  # the kernel's own function
                events.append(("candidate_trace", sealed()))
            return traced(*args)
        return call

    real_dumps = handover.dumps

    def dumps(*a, **k):
        events.append(("handover", sealed()))
        return real_dumps(*a, **k)

    real_write = tracer.Outbox.write

    def write(self, name, data):
        events.append(("write:" + name, sealed()))
        return real_write(self, name, data)

    jax.make_jaxpr, handover.dumps, tracer.Outbox.write = make_jaxpr, dumps, write
    tracer.run_job(job, directory, "test", tracer.Outbox(directory))
    sys.stdout.write("EVENTS " + json.dumps(events) + "\\n")
    sys.stdout.flush()
""")


def _job(task_id: str, kernel: Path) -> dict:
    task = get_task(task_id)
    return {"source": kernel.read_text(), "filename": str(kernel), "task": task.id,
            "size": "small", "target": "tpu", "platform": "tpu", "mode": "interpret",
            "specs": [[list(s.shape), str(s.dtype)] for s in task.input_specs("small")],
            "size_specs": {n: [[list(s.shape), str(s.dtype)] for s in task.input_specs(n)]
                           for n in task.inputs},
            "debug": False, "memory_bytes": None}


def test_candidate_code_runs_only_before_the_seal_and_status_is_written_last(tmp_path):
    task = get_task("12p_rmsnorm")
    (tmp_path / "dir").mkdir()
    (tmp_path / "job.json").write_text(json.dumps(_job(task.id, task.folder / "seed_tpu.py")))
    # A file, not `-c`: JAX's own exec'd helpers are named "<string>" too, and code compiled
    # after lock-down under a name counts as candidate code.
    (tmp_path / "recorder.py").write_text(RECORDER)
    run = subprocess.run([sys.executable, str(tmp_path / "recorder.py"), str(tmp_path / "dir"),
                          str(tmp_path / "job.json")], capture_output=True, text=True,
                         timeout=600)
    line = [ln for ln in run.stdout.splitlines() if ln.startswith("EVENTS ")]
    assert line, run.stderr[-3000:]
    events = json.loads(line[0][len("EVENTS "):])
    status = json.loads((tmp_path / "dir" / "status.json").read_text())
    assert status["status"] == "traced", status.get("message")
    traces = [i for i, (name, _) in enumerate(events) if name == "candidate_trace"]
    exports = [i for i, (name, _) in enumerate(events) if name == "handover"]
    files = [i for i, (name, _) in enumerate(events)
             if name.startswith("write:") and name != "write:status.json"]
    assert len(traces) == len(task.inputs)  # one trace per size
    assert exports and files, events
    assert max(traces) < min(exports), events  # no candidate trace after the hand-over
    assert not any(events[i][1] for i in traces), events  # candidate code ran unsealed
    assert all(events[i][1] for i in exports + files), events  # hand-over made/written sealed
    assert events[-1] == ["write:status.json", True], events  # the report is the last file
    written = {name[len("write:"):] for name, _ in events if name.startswith("write:")}
    assert written == {"jaxpr.pkl", "status.json"}


SEALED = textwrap.dedent("""
    import sys
    from pathlib import Path

    from jaxbench.evaluator.sandbox import guards

    root = Path(sys.argv[1])
    guards.lock_down(root)
    namespace = {}
    exec(compile("def act(path):\\n    open(path, 'w').write('x')\\n", str(root / "k.py"),
                 "exec"), namespace)  # candidate code: compiled after lock-down, in the dir
    if sys.argv[2] == "seal":
        guards.seal()
    namespace["act"](str(root / "late.txt"))
    print("acted")
""")


def test_sealed_process_ends_before_candidate_code_acts(tmp_path):
    from jaxbench.evaluator.common.procs import SEALED_EXIT

    for mode in ("open", "seal"):
        root = tmp_path / mode
        root.mkdir()
        run = subprocess.run([sys.executable, "-c", SEALED, str(root), mode],
                             capture_output=True, text=True, timeout=120)
        if mode == "open":  # control: unsealed, the candidate may write in its own dir
            assert run.returncode == 0 and (root / "late.txt").exists(), run.stderr[-2000:]
        else:
            assert run.returncode == SEALED_EXIT, run.stderr[-2000:]
            assert not (root / "late.txt").exists() and "acted" not in run.stdout
