"""The GPU-rule table of the PallasBench suite: which kernels would fail on a GPU, and why.

For every pallasbench task, its TPU-style seed (the "original": large blocks) is traced at
full size as if it were sent unchanged to the Pallas Triton backend, and Triton's rules
(jaxbench.evaluator.judge.gpu.triton_rules: power-of-two tensors of at most 2^20 elements,
masked edge blocks, the shared-memory estimate) are checked on it; the GPU port (seed_gpu.py)
is checked the same way. No GPU is needed: the rules read the traced jaxpr.

    python scripts/pallasbench_gpu_rules.py > docs/pallasbench_gpu_rules.md
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from jaxbench.evaluator.inprocess import trace_trusted  # noqa: E402
from jaxbench.evaluator.judge.gpu import triton_rules  # noqa: E402
from jaxbench.tasks import list_tasks  # noqa: E402


def _findings(path, task, size="full"):
    closed = trace_trusted(path, task.id, size, "gpu")
    locate = triton_rules.location(path.read_text(), str(path))
    return triton_rules.check_trace(closed, locate=locate, every_kernel=True)


def _cell(found) -> str:
    if not found:
        return "passes"
    rules = sorted({v.rule for _, v in found})
    first = found[0][1]
    line = first.where.rsplit(":", 1)[-1] if first.where else "?"
    return f"**{', '.join(rules)}**: {first.subject}, line {line}".replace("|", "\\|")


def main() -> int:
    rows, failing = [], {"tpu": 0, "gpu": 0}
    tasks = list_tasks("pallasbench")
    for task in tasks:
        cells = []
        for target in ("tpu", "gpu"):
            path = task.kernel_files().get(("seed", target))
            if path is None:
                cells.append("(no seed)")
                continue
            try:
                found = _findings(path, task)
            except Exception as exc:  # noqa: BLE001 - reported in the table
                cells.append(f"trace error: {type(exc).__name__}")
                failing[target] += 1
                continue
            failing[target] += bool(found)
            cells.append(_cell(found))
        rows.append(f"| {task.meta.get('number')} | `{task.id}` | {cells[0]} | {cells[1]} |")
    print("| # | task | original TPU-style seed, sent to Triton unchanged | GPU port (seed_gpu.py) |")
    print("|---:|---|---|---|")
    print("\n".join(rows))
    print(f"\n{failing['tpu']} of {len(tasks)} TPU-style seeds break Triton's rules at full size; "
          f"{failing['gpu']} of {len(tasks)} GPU ports do.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
