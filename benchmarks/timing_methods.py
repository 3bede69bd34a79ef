"""Wall clock per call vs device time from the profiler's trace, for a tiny and a large kernel.

    python benchmarks/timing_methods.py [--json out.json]

Runs on whatever device JAX sees (the device check runs it on the GPU). Both measurements
use the evaluator's own code (:mod:`jaxbench.evaluator.judge.timing`): the same warm-up, the same
alternating calls over rotated inputs. For a kernel of a few microseconds the wall clock
is mostly dispatch and launch overhead; the device time is not. It also prints what the
trace held (planes, lines, event counts), the data needed if a device's trace is laid out
differently from what the parser expects.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter

import jax
import jax.numpy as jnp


def cases(platform: str) -> list[tuple[str, object, list[tuple]]]:
    """(name, function, input sets): a tiny elementwise kernel and a large matmul."""
    n = 4096 if platform != "cpu" else 512
    keys = jax.random.split(jax.random.key(0), 6)
    tiny = [(jax.random.normal(k, (8, 128), jnp.float32),) for k in keys[:3]]
    big = [(jax.random.normal(k, (n, n), jnp.bfloat16),) for k in keys[3:]]
    return [("tiny: x * 2 + 1 on (8, 128) f32", jax.jit(lambda x: x * 2 + 1), tiny),
            (f"large: x @ x on ({n}, {n}) bf16", jax.jit(lambda x: x @ x), big)]


def inventory(directory: str) -> list[str]:
    from jaxbench import compat

    rows = []
    for plane in compat.read_profile(directory):
        for line in plane["lines"]:
            stats = Counter(k for e in line["events"] for k in e[3])
            rows.append(f"{plane['name']} / {line['name']}: {len(line['events'])} events, stats "
                        f"{sorted(stats)[:8]}")
    return rows


def main() -> None:
    from jaxbench.evaluator.judge.timing import time_device, time_interleaved, warm_up
    from jaxbench.evaluator.parent.figures import figures

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", default=None, help="also write the figures here")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    device = jax.devices()[0]
    print(f"# timing methods on {device.device_kind} ({device.platform}), JAX {jax.__version__}")
    print(f"{'case':40s} {'wall us':>10s} {'device us':>10s} {'wall/device':>11s}  device source")
    report = []
    for name, fn, sets in cases(device.platform):
        # the kernel against itself: A/B pairs as the evaluator makes them
        warm_up(fn, fn, sets, perf_counter=time.perf_counter)
        wall = time_interleaved(fn, fn, sets, perf_counter=time.perf_counter, warmup=0,
                                min_reps=args.reps, max_reps=args.reps, budget_s=0)
        with tempfile.TemporaryDirectory() as where:
            dev = time_device(fn, fn, sets, reps=args.reps, directory=where)
            lines = inventory(where)
        w = figures(wall["ref_s"], wall["kernel_s"])["t_kernel_ms"] * 1e3
        if "error" in dev:
            print(f"{name:40s} {w:10.2f} {'-':>10s} {'-':>11s}  {dev['error'][:80]}")
            d = None
        else:
            d = figures(dev["ref_s"], dev["kernel_s"])["t_kernel_ms"] * 1e3
            print(f"{name:40s} {w:10.2f} {d:10.2f} {w / d if d else float('inf'):10.1f}x  "
                  f"{dev['source']}")
        report.append({"case": name, "wall_us": w, "device_us": d, "device": dev.get("source"),
                       "error": dev.get("error"), "trace": lines})
    for row in report:
        print(f"\n## trace of {row['case']}")
        for line in row["trace"]:
            print("  " + line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device_kind": device.device_kind, "jax": jax.__version__,
                       "cases": report}, f, indent=1)


if __name__ == "__main__":
    main()
