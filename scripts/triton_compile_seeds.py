"""Compiles every shipped Triton GPU kernel (seeds and experts of all suites) with Triton's own
compiler for sm_90 on this CPU, at full size, and prints a markdown table: kernel, compile
result, shared memory needed (bytes) beside the evaluator's estimate, and warps/stages.

Needs the optional extra: pip install -e '.[triton]'.

    python scripts/triton_compile_seeds.py [--suite S] > results/cpu/triton_compile_seeds.md
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from jaxbench.evaluator.inprocess import export_trusted  # noqa: E402
from jaxbench.evaluator.judge import (  # noqa: E402
    exporting,
    triton_compile,  # noqa: E402
    triton_rules,
)
from jaxbench.tasks import list_tasks  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default=None)
    parser.add_argument("--size", default="full")
    args = parser.parse_args()
    if not triton_compile.available():
        print("error: the `triton` package is not installed (pip install -e '.[triton]')",
              file=sys.stderr)
        return 2
    print("| task | kernel | Triton compile (sm_90) | shared memory (bytes) | rule's estimate "
          "(bytes) | warps/stages |")
    print("|---|---|---|---:|---:|---|")
    failed = total = 0
    for task in list_tasks(args.suite):
        for (kind, target), path in sorted(task.kernel_files().items()):
            if target != "gpu" or "mosaic" in kind:
                continue
            try:
                closed, exported = export_trusted(path, task.id, args.size)
                text = exported.mlir_module()
                kernels = triton_compile.kernels_ttir(text)
                report = triton_compile.compile_all(kernels)
            except Exception as exc:  # noqa: BLE001 - reported in the table
                print(f"| {task.id} | {kind} | error: {type(exc).__name__}: "
                      f"{str(exc)[:120]} | | | |")
                failed += 1
                total += 1
                continue
            estimates = []
            for eqn in exporting.scan(closed).kernel_eqns:
                if eqn.primitive.name == "pallas_call" and triton_rules.is_triton(eqn):
                    estimates.append(triton_rules.check(eqn)[1]["dot_shared_bytes_estimate"])
            for i, k in enumerate(report["kernels"]):
                total += 1
                ok = k["ok"] and not report["problem"]
                failed += not ok
                verdict = "ok" if ok else (k["error"] or report["problem"])[:160]
                est = estimates[i] if i < len(estimates) else ""
                print(f"| {task.id} | {kind} `{k['name']}` | {verdict} | {k['shared_bytes']} | "
                      f"{est} | {k['num_warps']}/{k['num_stages']} |")
    print(f"\n{total - failed} of {total} kernels compiled for sm_90 within the block's shared "
          f"memory (Triton {report['triton_version'] if total else '?'}, size {args.size}).")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
