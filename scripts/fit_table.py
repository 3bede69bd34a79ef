"""Which JAXBench references fit which chip at size ``full``: an estimate from this host.

For every task, XLA compiles the reference (bf16, the timing's baseline) for this host's CPU
from abstract shapes (nothing runs) and its memory analysis gives the arguments, outputs and
temporaries. A chip's own compiler plans its temporaries differently, so these are estimates;
a device owner decides on the chip itself, before anything runs there
(``jaxbench.evaluator.judge.fitting``). Prints a Markdown table; ``--json`` one object.

    JAX_PLATFORMS=cpu python scripts/fit_table.py [--suite jaxbench]
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from jaxbench.tasks import list_tasks  # noqa: E402

# Memory one chip's runtime offers a program (GiB): a v5e reported 15.75 GiB (measured), a
# v6e has 32 GiB of HBM, an H100 80 GB and an H200 141 GB (vendors' figures, less what the
# runtime keeps).
CHIPS = {"v5e": 15.75, "v6e": 31.25, "H100": 74.5, "H200": 131.0}


def needed(task, size: str = "full") -> dict[str, float]:
    specs = [jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in task.input_specs(size)]
    m = jax.jit(task.reference).lower(*specs).compile().memory_analysis()
    gib = 2**30
    return {"arguments": m.argument_size_in_bytes / gib, "outputs": m.output_size_in_bytes / gib,
            "temporaries": m.temp_size_in_bytes / gib,
            "total": (m.argument_size_in_bytes + m.output_size_in_bytes
                      + m.temp_size_in_bytes) / gib}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", default="jaxbench")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for task in list_tasks(args.suite):
        figures = needed(task)
        rows.append({"task": task.id, **{k: round(v, 2) for k, v in figures.items()},
                     "fits": {chip: figures["total"] <= room for chip, room in CHIPS.items()},
                     "batch": task.batch})
    if args.json:
        print(json.dumps(rows))
        return
    print("| task | inputs GiB | outputs GiB | temporaries GiB (CPU estimate) | "
          + " | ".join(CHIPS) + " |")
    print("|---|---:|---:|---:|" + "---|" * len(CHIPS))
    for r in rows:
        marks = " | ".join("fits" if r["fits"][c] else "**no**" for c in CHIPS)
        print(f"| {r['task']} | {r['arguments']:.2f} | {r['outputs']:.2f} | "
              f"{r['temporaries']:.2f} | {marks} |")


if __name__ == "__main__":
    main()
