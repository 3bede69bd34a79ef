"""What compiling a task's input drawing costs on this host's default device, by size.

The judge compiles each task's input drawing for the chip (``Task.drawing``: one program per
size that draws every input from a key with JAX's threefry). On a TPU v5e the drawing of
12p_rmsnorm at size full took 19.7 s to compile, against 0.8 s for its reference. This prints,
for each task and size, the seconds to lower and to compile the drawing as the judge does, and
the drawing compiled without XLA's constant folding (and whether it draws the same bits),
the same inputs drawn by one program per input, and (a diagnosis: it draws other bits) the
drawing with ``jax_threefry_partitionable`` the other way, side by side in one run; JAX's persistent
compile cache is off, and every program is compiled in a fresh jit. Run from the repo root::

    python benchmarks/drawing_compile.py [TASK ...] [--sizes small full]
"""

from __future__ import annotations

import argparse
import json
import time

import jax

from jaxbench.tasks import get_task

DEFAULT_TASKS = ["12p_rmsnorm", "8p_gemm", "13p_cross_entropy"]


NO_FOLDING = {"xla_disable_hlo_passes": "constant_folding"}


def _seconds(fn, options: dict | None = None) -> tuple[float, float]:
    """(lower, compile) seconds of a fresh jit of ``fn`` on a key."""
    t0 = time.perf_counter()
    lowered = jax.jit(fn).lower(jax.random.key(0))
    t1 = time.perf_counter()
    lowered.compile(compiler_options=options)
    return t1 - t0, time.perf_counter() - t1


def _same_bits(fn) -> bool:
    """Whether the drawing compiled without XLA's constant folding draws the same bits."""
    import numpy as np

    key = jax.random.key(7)
    lowered = jax.jit(fn).lower(key)
    a = lowered.compile()(key)
    b = lowered.compile(compiler_options=NO_FOLDING)(key)
    return all(np.array_equal(np.asarray(x).view(np.uint8), np.asarray(y).view(np.uint8))
               for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b),
                               strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tasks", nargs="*", default=DEFAULT_TASKS)
    parser.add_argument("--sizes", nargs="+", default=["small", "full"])
    args = parser.parse_args()
    jax.config.update("jax_enable_compilation_cache", False)
    device = jax.devices()[0]
    print(f"device: {device.platform} {device.device_kind}; jax {jax.__version__}")
    rows = []
    for task_id in args.tasks:
        task = get_task(task_id)
        for size in args.sizes:
            whole = task.drawing(size)
            lower_s, compile_s = _seconds(lambda k, whole=whole: whole(k))
            flipped = not jax.config.jax_threefry_partitionable  # other bits: a diagnosis only
            jax.config.update("jax_threefry_partitionable", flipped)
            try:
                other_s = sum(_seconds(lambda k, whole=whole: whole(k)))
            finally:
                jax.config.update("jax_threefry_partitionable", not flipped)
            no_folding_s = sum(_seconds(lambda k, whole=whole: whole(k), NO_FOLDING))
            same = _same_bits(lambda k, whole=whole: whole(k))
            specs = task.input_specs(size)
            per_input = []
            if task._make_inputs is None:  # the same draws, one program each
                for i, spec in enumerate(specs):
                    def one(k, i=i, spec=spec, specs=specs):
                        return spec.draw(jax.random.split(k, len(specs))[i])
                    per_input.append(sum(_seconds(one)))
            row = {"task": task_id, "size": size, "lower_s": round(lower_s, 3),
                   "compile_s": round(compile_s, 3),
                   "per_input_s": [round(s, 3) for s in per_input],
                   "no_constant_folding_s": round(no_folding_s, 3), "same_bits": same,
                   "threefry_partitionable": not flipped, "other_partitionable_s": round(other_s, 3),
                   "bytes": sum(s.nbytes for s in specs)}
            rows.append(row)
            print(f"{task_id:28s} {size:6s} lower {lower_s:6.2f} s  compile {compile_s:6.2f} s  "
                  f"without constant folding {no_folding_s:.2f} s (same bits: {same})  "
                  f"one program per input {[f'{s:.2f}' for s in per_input]} s  "
                  f"partitionable={flipped}: {other_s:.2f} s  "
                  f"({row['bytes'] / 2**20:.0f} MiB of inputs)", flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
