"""Snapshot every verdict the evaluator gives, to check that a refactor changes none.

    python scripts/verdict_snapshot.py record OUT    # on a checkout: writes OUT/
    python scripts/verdict_snapshot.py compare A B   # two snapshots: prints what differs

``record`` runs, on the host CPU in interpret mode:

- every shipped kernel (``jaxbench run --kernels seed`` and ``--kernels expert``, all suites,
  both targets), then ``jaxbench report --json`` and ``jaxbench export --format jsonl`` and
  ``--format sakana`` of each run;
- the adversarial and legitimate-kernel suites (tests/adversarial, tests/legit) under pytest,
  with every result the evaluator returns there recorded (this file is also the pytest
  plugin that records them: ``Evaluator.evaluate`` is wrapped, nothing else changes).

Each file is normalized before it is written: wall-clock figures (times, seconds, speedups
measured in interpret mode, versions, host names, temporary paths) and the error figures
(each run draws its inputs from a fresh secret) are dropped, and so are the figures the
first trial's data decides: the kernels' work where it was counted there, the count of
elements that uninitialised memory changed, the programs a race rule names on a trial.
Records are sorted by what they are about. ``compare`` prints every other difference, one per line, and
exits 1 when there is one. Two differences are allowed and listed apart, because the schema
adds them on purpose: a result's ``schema`` field, and a ``rule`` code where the record had
none (``null``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# Keys whose values are wall-clock measurements or host facts, anywhere in a record.
VOLATILE = {"started_at", "finished_at", "time", "compile_s", "seconds", "versions", "wall_s",
            "t_ref_ms", "t_kernel_ms", "elapsed_s", "duration_s", "host", "created", "created_at",
            "timestamp", "run_dir", "path", "secret_sha256", "secret", "generated_at", "pid",
            "worker_s", "eval_s", "total_s", "mean_s", "jax", "jaxlib", "jaxbench", "python",
            "event_time", "run_created_at", "time_p50_s", "time_total_s",
            "spans",  # the wall clock's parts (docs/evaluator.md, "spans")
            # error figures: each run draws its inputs from a fresh secret
            "max_abs_err", "rel_err", "tol_fraction", "Max_Diff",
            # what the kernel (or a library it calls) printed: logs with times and addresses
            "output"}
_TMP = re.compile(r"/tmp/[\w./-]+")
_CHECKOUT = re.compile(r"/[\w./-]*/src/jaxbench/")  # a checkout's package, wherever it is
# a task's folder (named as its task since the schema's refactor; the record names the task)
_TASK_FOLDER = re.compile(r"(jaxbench/tasks/(?:jaxbench|pallasbench)/)[\w.-]+/")
_HEX = re.compile(r"\b[0-9a-f]{32,64}\b")
_TESTS = re.compile(r"/[\w./-]*?/tests/")  # a checkout's tests, wherever it is
# a test's own folder of pretend run directories, in the checkout that recorded
_HOST_RUNS = re.compile(r"(/[\w.-]+)*/\.host-runs-[\w-]+")
_SECS = re.compile(r"\b\d+(\.\d+)? ?(s|ms|seconds)\b")
ADDED_KEYS = {"schema"}


# Text whose figures come from the random inputs, the machine or the moment: numbers masked.
_DRAWN = re.compile(r"exceed atol|NaN/Inf of|Revisited block|private directory held|"
                    r"the output differs in|race rule, on the inputs of trial")
# The kernels' work where it was counted on the first trial's data (a kernel with an integer
# operand the trace does not know: group sizes, page tables, lengths drawn with the inputs).
_COUNTED_ON_DATA = {"kernel_flops", "kernel_bytes", "outside_share"}
_FIGURES = re.compile(r"-?\d.*", re.DOTALL)
_PID = re.compile(r"/proc/\d+")
_ADDRESS = re.compile(r"0x[0-9a-f]+")
# a hand-over of random bytes: the pickle reader's complaint depends on the bytes
_GARBAGE = re.compile(r"the hand-over (is not an acceptable pickle|cannot be read|is malformed).*")


def _text(value: str) -> str:
    value = _TASK_FOLDER.sub(r"\1<task>/", _CHECKOUT.sub("<src>/jaxbench/", value))
    value = _HOST_RUNS.sub("<repo>/.host-runs-<id>", _TESTS.sub("<repo>/tests/", value))
    value = _ADDRESS.sub("<addr>", _PID.sub("/proc/<pid>", value))
    value = _GARBAGE.sub("the hand-over <refused>", value)
    if _DRAWN.search(value):  # its wording up to the first figure
        value = _FIGURES.sub("<figures>", value)
    return _SECS.sub("<secs>", _HEX.sub("<hex>", _TMP.sub("<tmp>", value)))


def normalize(value: Any) -> Any:
    if isinstance(value, dict):
        drawn = str(value.get("kernel_work_counted_on", "")).startswith("the first trial's data")
        return {k: normalize(v) for k, v in sorted(value.items())
                if k not in VOLATILE and not (drawn and k in _COUNTED_ON_DATA)}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, float):
        return round(value, 6)
    return value


# --- the pytest plugin: records every result the evaluator returns -----------------------

def pytest_configure(config):  # noqa: D103 - pytest hook
    out = os.environ.get("JAXBENCH_SNAPSHOT_LOG")
    if not out:
        return
    from jaxbench.evaluator import Evaluator

    original = Evaluator.evaluate

    def evaluate(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        # the result as its event (an EvaluationResult is no JSON object: str() would be its repr)
        event = result.to_event() if hasattr(result, "to_event") else result
        with open(out, "a") as f:
            f.write(json.dumps({"test": test, "result": event}, default=str) + "\n")
        return result

    Evaluator.evaluate = evaluate


# --- record ------------------------------------------------------------------------------

def _env(**extra: str) -> dict[str, str]:
    """This checkout's package first on the path (the venv may hold another checkout's)."""
    return {**os.environ, "JAX_PLATFORMS": "cpu",
            "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT / 'scripts'}", **extra}


def _run(cmd: list[str], log: Path) -> None:
    print("+", " ".join(cmd), flush=True)
    with log.open("a") as f:
        subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, check=False,
                       env=_env())


def record(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    raw = out / "raw"
    raw.mkdir(exist_ok=True)
    log = out / "log.txt"
    jaxbench = str(Path(sys.executable).parent / "jaxbench")
    for kernels in ("seed", "expert"):
        run = raw / f"run-{kernels}"
        _run([jaxbench, "run", "--kernels", kernels, "--out", str(run)], log)
        with (raw / f"report-{kernels}.json").open("w") as f:
            subprocess.run([jaxbench, "report", "--json", str(run)], cwd=ROOT, stdout=f, check=False,
                           env=_env())
        for fmt in ("jsonl", "sakana"):
            _run([jaxbench, "export", "--format", fmt, "--out", str(raw / f"export-{kernels}.{fmt}"),
                  str(run)], log)
    tests_log = raw / "tests.jsonl"
    tests_log.unlink(missing_ok=True)
    env = _env(JAXBENCH_SNAPSHOT_LOG=str(tests_log))
    print("+ pytest tests/adversarial tests/legit", flush=True)
    with log.open("a") as f:
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "verdict_snapshot", "-n", "2",
                        "tests/adversarial", "tests/legit"], cwd=ROOT, env=env, stdout=f,
                       stderr=subprocess.STDOUT, check=False)
    _write_normalized(raw, out)


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _key(record: dict[str, Any]) -> str:
    r = record.get("result", record)
    return json.dumps([record.get("test", ""), r.get("task"), r.get("target"), r.get("size"),
                       r.get("mode"), r.get("source_sha256"), r.get("type"), r.get("method"),
                       r.get("kernels")], default=str)


def _write_normalized(raw: Path, out: Path) -> None:
    for kernels in ("seed", "expert"):
        events = raw / f"run-{kernels}" / "events.jsonl"
        if events.exists():
            rows = sorted((normalize(e) for e in _events(events)), key=_key)
            (out / f"events-{kernels}.json").write_text(json.dumps(rows, indent=1))
        for name in (f"report-{kernels}.json", f"export-{kernels}.sakana"):
            if (raw / name).exists() and (raw / name).stat().st_size:
                data = normalize(json.loads((raw / name).read_text()))
                if isinstance(data, list):  # in the order evaluations finished: sorted here
                    data.sort(key=lambda record: json.dumps(record, sort_keys=True))
                (out / name.replace(".sakana", ".sakana.json")).write_text(json.dumps(data, indent=1))
        jsonl = raw / f"export-{kernels}.jsonl"
        if jsonl.exists():
            rows = sorted((normalize(e) for e in _events(jsonl)), key=_key)
            (out / f"export-{kernels}.rows.json").write_text(json.dumps(rows, indent=1))
    tests = raw / "tests.jsonl"
    if tests.exists():  # keyed by test and kernel: a test added or removed shows as one key
        keyed: dict[str, Any] = {}
        for row in sorted((normalize(e) for e in _events(tests)), key=_key):
            key = _key(row)
            n = sum(k.startswith(key) for k in keyed)
            keyed[f"{key}#{n}" if n else key] = row
        (out / "tests.json").write_text(json.dumps(keyed, indent=1))


# --- compare -----------------------------------------------------------------------------

def _diff(a: Any, b: Any, where: str, found: list[str], allowed: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            here = f"{where}.{key}"
            if key not in a and key in ADDED_KEYS:
                allowed.append(f"{here}: added {b[key]!r}")
            elif key == "rule" and a.get(key) is None and b.get(key) is not None:
                allowed.append(f"{here}: null -> {b[key]!r}")
            elif key not in a or key not in b:
                found.append(f"{here}: only in {'B' if key not in a else 'A'}")
            else:
                _diff(a[key], b[key], here, found, allowed)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{where}[{i}]", found, allowed)
    elif a != b:
        found.append(f"{where}: {json.dumps(a, default=str)[:300]} -> {json.dumps(b, default=str)[:300]}")


def compare(a: Path, b: Path) -> int:
    found: list[str] = []
    allowed: list[str] = []
    names = sorted({p.name for p in a.glob("*.json")} | {p.name for p in b.glob("*.json")})
    for name in names:
        if not (a / name).exists() or not (b / name).exists():
            found.append(f"{name}: only in {'A' if (a / name).exists() else 'B'}")
            continue
        _diff(json.loads((a / name).read_text()), json.loads((b / name).read_text()), name,
              found, allowed)
    for line in allowed:
        print("allowed:", line)
    for line in found:
        print("DIFFERS:", line)
    print(f"{len(names)} files compared: {len(found)} differences, {len(allowed)} allowed additions")
    return 1 if found else 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "record":
        record(Path(argv[1]).resolve())
        return 0
    if len(argv) == 2 and argv[0] == "normalize":  # re-normalize a recorded raw/ folder
        _write_normalized(Path(argv[1]) / "raw", Path(argv[1]))
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]))
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
