"""What compiling a task's input drawing costs on this host's default device, by size.

The judge compiles each task's input drawing for the chip (``Task.drawing``: one program per
size that draws every input from a key with JAX's threefry). On a TPU v5e the drawing of
12p_rmsnorm at size full took 17.8-19.7 s to compile with JAX's default, partitionable
threefry, against 0.8 s for its reference, and 4.1-4.9 s with the classic threefry, which
``Task.drawing`` now uses. This prints, for each task and size, the seconds to lower and to
compile the drawing as the judge does (classic threefry) and the same draws with the
partitionable threefry, side by side in one run, and whether the drawing's integer inputs are
the same on this device as on the CPU (the host's count of a kernel's work reads them).
JAX's persistent compile cache is off, and every program is compiled in a fresh jit. Run from
the repo root::

    python benchmarks/drawing_compile.py [TASK ...] [--sizes small full]
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import numpy as np

from jaxbench.tasks import get_task

DEFAULT_TASKS = ["12p_rmsnorm", "8p_gemm", "13p_cross_entropy"]


def _seconds(fn) -> tuple[float, float]:
    """(lower, compile) seconds of a fresh jit of ``fn`` on a key."""
    t0 = time.perf_counter()
    lowered = jax.jit(fn).lower(jax.random.key(0))
    t1 = time.perf_counter()
    lowered.compile()
    return t1 - t0, time.perf_counter() - t1


def _partitionable(draw):
    def run(k):
        with jax.threefry_partitionable(True):
            return draw(k)
    return run


def _integers_as_on_cpu(task, size: str) -> bool | None:
    """Whether the judge's drawing gives the same integer (and boolean) inputs here as on the
    CPU, as the host's count of a kernel's work needs (None: this is the CPU, or the task has
    none). Floats are not compared: a chip's float32 arithmetic (``erf_inv`` in a normal draw)
    rounds otherwise than the CPU's, whichever threefry drew the bits."""
    if jax.devices()[0].platform == "cpu":
        return None
    key = jax.random.key(11)
    here = jax.tree_util.tree_leaves(task.drawing(size)(key))
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        there = jax.tree_util.tree_leaves(task.drawing(size)(jax.device_put(key, cpu)))
    pairs = [(np.asarray(a), np.asarray(b)) for a, b in zip(here, there, strict=True)
             if np.issubdtype(np.asarray(b).dtype, np.integer) or np.asarray(b).dtype == bool]
    return all(np.array_equal(a, b) for a, b in pairs) if pairs else None


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
            judged = task.drawing(size)
            lower_s, compile_s = _seconds(lambda k, judged=judged: judged(k))
            default_s = sum(_seconds(_partitionable(task.drawing_fn(size))))
            same = _integers_as_on_cpu(task, size)
            row = {"task": task_id, "size": size, "lower_s": round(lower_s, 3),
                   "compile_s": round(compile_s, 3), "partitionable_s": round(default_s, 3),
                   "integers_as_on_cpu": same,
                   "bytes": sum(s.nbytes for s in task.input_specs(size))}
            rows.append(row)
            print(f"{task_id:28s} {size:6s} classic threefry (judged): lower {lower_s:6.2f} s "
                  f"compile {compile_s:6.2f} s   partitionable (JAX's default): lower+compile "
                  f"{default_s:6.2f} s   integer inputs as on the CPU: {same}   "
                  f"({row['bytes'] / 2**20:.0f} MiB of inputs)", flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
