"""Does XLA compiling beside a timing disturb it? The chip's owner compiles the next
candidates' programs (reference, truth, inputs, kernel) while the chip times another one
(docs/evaluator.md, "Compiles beside the chip"): the device's own time of a timed call must
not change with compiles running on the host's cores beside it.

A task's program is timed on the device (the profiler's device events, as the judge times:
judge/timing.py, ``time_device``) alone and with ``--compilers`` threads compiling large
throw-away XLA programs the whole time (compiled only, never run), in alternating rounds;
printed: the medians, their ratio (beside / alone; 1.00 is no disturbance) and the same for
the wall clock per call. Run from the repo root on the chip's host::

    python benchmarks/compile_beside_timing.py [--task 8p_gemm] [--size full] [--compilers 2]

Without an accelerator it runs on the CPU, DEGRADED and labelled so: the "device" times are
XLA's CPU ops, which run on the very cores the compiles take, so a ratio above 1 there says
nothing about a chip.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time


def _compile_forever(stop: threading.Event, counts: list[int], index: int, width: int) -> None:
    import jax
    import jax.numpy as jnp

    spec = jax.ShapeDtypeStruct((width, width), jnp.float32)
    n = 0
    while not stop.is_set():
        n += 1
        salt = float(index * 1_000_003 + n)  # a new program each time: no cache answers it

        def program(x, salt=salt):
            for i in range(48):
                x = jnp.tanh(x @ x.T * (salt + i)) + jnp.sin(x) * 0.5
            return x

        jax.jit(program).lower(spec).compile()
        counts[index] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="8p_gemm")
    parser.add_argument("--size", default=None, help="default: full on a chip, small on a CPU")
    parser.add_argument("--compilers", type=int, default=2, help="threads compiling beside")
    parser.add_argument("--reps", type=int, default=50, help="timed calls per round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of each side")
    args = parser.parse_args()

    import jax

    from jaxbench.evaluator.judge.timing import time_device
    from jaxbench.tasks import get_task

    backend = jax.default_backend()
    degraded = backend == "cpu"
    size = args.size or ("small" if degraded else "full")
    task = get_task(args.task)
    inputs = [task.make_inputs(jax.random.key(k), size) for k in range(3)]
    program = jax.jit(task.reference)  # the timed program: the task's reference (XLA)
    for x in inputs:
        jax.block_until_ready(program(*x))
    label = ("DEGRADED (CPU: the timed ops and the compiles share the host's cores; not a "
             "chip's figure)" if degraded else f"{jax.devices()[0].device_kind}")
    print(f"compile_beside_timing: {label}; task {task.id} size {size}, its reference timed, "
          f"{args.compilers} compiling threads beside", flush=True)

    sides: dict[str, dict[str, list[float]]] = {s: {"device": [], "wall": []}
                                               for s in ("alone", "beside")}
    compiled = [0] * args.compilers
    for _ in range(args.rounds):
        for side in ("alone", "beside"):
            stop = threading.Event()
            threads = [threading.Thread(target=_compile_forever, args=(stop, compiled, i, 256),
                                        daemon=True) for i in range(args.compilers)]
            if side == "beside":
                for t in threads:
                    t.start()
                time.sleep(1.0)  # the compiles under way
            got = time_device(None, program, inputs, reps=args.reps,
                              perf_counter=time.perf_counter)
            stop.set()
            for t in threads:
                if t.is_alive():
                    t.join()
            if "error" in got:
                raise SystemExit(f"compile_beside_timing: no device times: {got['error']}")
            sides[side]["device"] += got["kernel_s"]
            sides[side]["wall"] += got.get("kernel_wall_s", [])
    report = {"backend": backend, "degraded": degraded, "task": task.id, "size": size,
              "compilers": args.compilers, "programs_compiled_beside": sum(compiled),
              "reps_per_side": len(sides["alone"]["device"])}
    for kind in ("device", "wall"):
        alone = statistics.median(sides["alone"][kind])
        beside = statistics.median(sides["beside"][kind])
        report[f"{kind}_alone_ms"] = round(alone * 1e3, 4)
        report[f"{kind}_beside_ms"] = round(beside * 1e3, 4)
        report[f"{kind}_ratio"] = round(beside / alone, 4) if alone > 0 else None
        print(f"  {kind:6s} time per call: alone {alone * 1e3:9.4f} ms, with compiles beside "
              f"{beside * 1e3:9.4f} ms, ratio {beside / alone:.3f}x"
              + ("   [DEGRADED: CPU]" if degraded else ""))
    print(f"  programs compiled beside the timing: {sum(compiled)}")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
