# ruff: noqa
# Recorded as it ran on the TPU v5e (see ../README.md), these two lines added: not linted.
import jax, sys, time
from jaxbench.tasks import get_task
print(jax.devices()[0].device_kind, jax.__version__)
for name in sys.argv[1:]:
    t = get_task(name)
    fn = t.drawing_fn("full")
    for part in (False, True):
        def f(k, fn=fn, part=part):
            with jax.threefry_partitionable(part):
                return fn(k)
        t0 = time.perf_counter()
        with jax.threefry_partitionable(part):
            c = jax.jit(f).lower(jax.random.key(0)).compile()
        m = c.memory_analysis()
        print(name, "partitionable" if part else "classic", "compile %.1f s" % (time.perf_counter() - t0),
              "temp GiB %.2f out GiB %.2f arg %.2f" % (m.temp_size_in_bytes / 2**30, m.output_size_in_bytes / 2**30,
                                                      m.argument_size_in_bytes / 2**30), flush=True)
