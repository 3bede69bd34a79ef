# ruff: noqa
# Recorded as it ran on the TPU v5e (see ../README.md), these two lines added: not linted.
import jax, sys, time
from jaxbench.tasks import get_task
print(jax.devices()[0].device_kind, jax.__version__)
for name in sys.argv[1:]:
    t = get_task(name)
    t0 = time.perf_counter()
    c = t.drawing("full").lower(jax.random.key(0)).compile()
    m = c.memory_analysis()
    t1 = time.perf_counter()
    out = jax.block_until_ready(c(jax.random.key(1)))
    print(name, "compile %.1f s run %.2f s" % (t1 - t0, time.perf_counter() - t1),
          "temp GiB %.2f out GiB %.2f" % (m.temp_size_in_bytes / 2**30, m.output_size_in_bytes / 2**30),
          "x0 mean/std %.4f %.4f" % (float(out[0].astype("float32").mean()), float(out[0].astype("float32").std())), flush=True)
    del out, c
