"""The cheating and broken kernels of tests/adversarial (or, with ``--legit``, the honest ones
of tests/legit) on a chip: each TPU case of ``CASES`` in the folder's test file (with the
verdict the suite expects on the CPU, in interpret mode; `correct` for the honest ones)
evaluated in device mode, and the two verdicts side by side.

    python scripts/chip_vs_cpu.py OUT_DIR [--legit] [--budget-s 480] [--size small]

Writes OUT_DIR/chip_vs_cpu.json (legit_vs_cpu.json with ``--legit``): one entry per case
(file, task, expected and chip status and stage, message, wall seconds) and prints a table;
cases left when the budget runs out are listed as not run. Runs on a host with a TPU
(``--mode device``); one evaluator, so the chip's owner is started once.
"""

from __future__ import annotations

import argparse
import ast
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITES = {"adversarial": ROOT / "tests" / "adversarial" / "test_adversarial.py",
          "legit": ROOT / "tests" / "legit" / "test_legit.py"}


def cases(test_file: Path) -> list[tuple[str, str, str, str]]:
    """(file, task, status, stage) of every case whose kernel is not a GPU one, the cases
    that run (decided at the correct, recheck or time stage) first; a case of a file and a
    task only is an honest kernel (`correct`, decided at the recheck)."""
    tree = ast.parse(test_file.read_text())
    names: dict[str, str] = {}
    found: list[tuple[str, str, str, str]] = []
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        target = node.targets[0]
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
            for name, value in zip(target.elts, node.value.elts, strict=False):
                if isinstance(name, ast.Name) and isinstance(value, ast.Constant):
                    names[name.id] = value.value
        elif isinstance(target, ast.Name) and isinstance(node.value, ast.Constant):
            names[target.id] = node.value.value
        elif isinstance(target, ast.Name) and target.id == "CASES":
            for entry in node.value.elts:
                file, task, *verdict = entry.elts
                status, stage = verdict[:2] if verdict else (ast.Constant("correct"),
                                                             ast.Constant("recheck"))
                task_id = names.get(task.id) if isinstance(task, ast.Name) else None
                if task_id is None and isinstance(task, ast.Constant):
                    task_id = task.value
                if not isinstance(file, ast.Constant) or task_id is None or "gpu" in file.value:
                    continue
                found.append((file.value, task_id, ast.literal_eval(status),
                              ast.literal_eval(stage)))
    return sorted(found, key=lambda c: c[3] not in ("correct", "recheck", "time"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--budget-s", type=float, default=480.0)
    parser.add_argument("--size", default="small")
    parser.add_argument("--legit", action="store_true", help="the honest kernels of tests/legit")
    args = parser.parse_args()
    test_file = SUITES["legit" if args.legit else "adversarial"]
    report = args.out / ("legit_vs_cpu.json" if args.legit else "chip_vs_cpu.json")
    from jaxbench.evaluator import Evaluator

    args.out.mkdir(parents=True, exist_ok=True)
    started, rows = time.monotonic(), []
    with Evaluator(spares=0) as evaluator:
        for file, task, status, stage in cases(test_file):
            row = {"file": file, "task": task, "cpu_expected": f"{status}/{stage}"}
            if time.monotonic() - started > args.budget_s:
                rows.append({**row, "chip": "not run (budget)"})
                continue
            begun = time.monotonic()
            result = evaluator.evaluate(test_file.parent / "kernels" / file, task, target="tpu",
                                        mode="device", size=args.size, timeout_s=60)
            rows.append({**row, "chip": f"{result.status}/{result.stage}",
                         "same": (result.status, result.stage) == (status, stage),
                         "message": result.message[:200],
                         "wall_s": round(time.monotonic() - begun, 1)})
            print(f"{file:45} {row['cpu_expected']:32} chip {rows[-1]['chip']:32} "
                  f"{'same' if rows[-1]['same'] else 'DIFFERS'}", flush=True)
            report.write_text(json.dumps(rows, indent=1))
    ran = [r for r in rows if "same" in r]
    print(f"{sum(r['same'] for r in ran)} of {len(ran)} run on the chip match the CPU "
          f"verdict; {len(rows) - len(ran)} not run")
    report.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
