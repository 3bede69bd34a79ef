"""What one round of the device-trace timing costs beyond its calls, with JAX's default
profiler options against leaner ones, side by side in one process.

A round of :func:`jaxbench.evaluator.judge.timing.time_device` starts a profiler trace, makes
``reps`` interleaved calls of a reference and a candidate, stops the trace and reads it back.
JAX's default :class:`jax.profiler.ProfileOptions` trace every Python call
(``python_tracer_level=1``), host events down to level 2 and the executed modules' HLO; the
timing needs only its own annotations (host level 1) and the device's events. For each set of
options this prints the round's wall clock, the calls' summed device time, the difference
(the overhead) and the candidate's median device time, so one sees both what a round costs and
that the measurement is the same. ``--beside T`` runs T threads beside every round that trace,
lower and compile new small programs in a loop, as the chip owner's other requests do while
one is timed (the Python tracer records their calls too). Run on the machine whose chip is to
be measured::

    python benchmarks/profiler_overhead.py [--n 4096] [--reps 10] [--repeat 3] [--beside 2]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import threading
import time

import jax
import jax.numpy as jnp

from jaxbench import compat
from jaxbench.evaluator.judge import timing


class WithOptions(timing.Profiler):
    """The timing's profiler with the given options (None: JAX's defaults)."""

    def __init__(self, options: jax.profiler.ProfileOptions | None) -> None:
        self.options = options

    def trace(self, directory: str):  # type: ignore[override]
        return jax.profiler.trace(directory, profiler_options=self.options)


def _options(**fields: int | bool) -> jax.profiler.ProfileOptions:
    options = jax.profiler.ProfileOptions()
    for name, value in fields.items():
        setattr(options, name, value)
    return options


@contextlib.contextmanager
def _compiling_beside(threads: int, done: list[int]):
    """``threads`` threads tracing, lowering and compiling a new program each turn until the
    block ends; ``done`` gets how many they compiled."""
    stop = threading.Event()

    def work(seed: int) -> None:
        turn = 0
        while not stop.is_set():
            turn += 1
            rows = 64 + (seed * 7919 + turn) % 512  # a new shape: traced and compiled anew
            fn = jax.jit(lambda x, k=turn: jnp.tanh(x @ x.T).sum(axis=0) * k)
            fn.lower(jax.ShapeDtypeStruct((rows, 128), jnp.float32)).compile()
            done.append(1)

    workers = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(threads)]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        stop.set()
        for worker in workers:
            worker.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=4096, help="the matmuls' size")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--beside", type=int, default=0,
                        help="threads compiling new programs beside every round")
    args = parser.parse_args()
    n = args.n
    a = jax.random.normal(jax.random.key(0), (n, n), jnp.bfloat16)
    reference = jax.jit(lambda x, y: jax.nn.gelu(x @ y))
    candidate = jax.jit(lambda x, y: jax.nn.gelu(jnp.dot(x, y, preferred_element_type=jnp.float32)
                                                 ).astype(jnp.bfloat16))
    sets = [(a, a), (a * 2, a), (a, a * 3)]
    for inputs in sets:
        jax.block_until_ready(reference(*inputs))
        jax.block_until_ready(candidate(*inputs))
    kinds = {"default": None,
             "no python tracer, no HLO": _options(python_tracer_level=0, enable_hlo_proto=False),
             "and host level 1": _options(python_tracer_level=0, enable_hlo_proto=False,
                                          host_tracer_level=1),
             "the timing's (lean)": compat.lean_profile_options()}
    rows: dict[str, list[tuple[float, float, float]]] = {k: [] for k in kinds}
    compiled: list[int] = []
    for _ in range(args.repeat):
        for name, options in kinds.items():  # alternating, so drift falls on every kind
            with _compiling_beside(args.beside, compiled):
                started = time.perf_counter()
                got = timing.time_device(reference, candidate, sets, reps=args.reps,
                                         profiler=WithOptions(options))
                wall = time.perf_counter() - started
            if "error" in got:
                print(f"{name}: {got['error']}")
                continue
            device = sum(got["ref_s"]) + sum(got["kernel_s"])
            rows[name].append((wall, device, statistics.median(got["kernel_s"])))
    print(f"{jax.devices()[0].device_kind}: {args.reps} calls a side a round, best of "
          f"{args.repeat}; {args.beside} threads compiling beside ({len(compiled)} programs)")
    base = min((r[0] - r[1] for r in rows["default"]), default=None)
    for name, got in rows.items():
        if not got:
            continue
        wall, device, kernel = min(got)
        over = wall - device
        ratio = f"{over / base:.2f}x the default's" if base else ""
        print(f"{name:28s} round {wall:7.3f} s, calls {device:7.3f} s, overhead {over:7.3f} s "
              f"{ratio}; candidate median {kernel * 1e3:.4f} ms")


if __name__ == "__main__":
    main()
