"""Cheat (13p_cross_entropy, small; the test writes RUN in): issue 46's attack on a run
directory. At trace time it opens the run's ``.secret`` by its absolute path, re-derives the
trial and probe keys exactly as the parent does (``sha256(secret|task|size|purpose|i)``),
draws those inputs with the task's own registry, computes their float32 losses (eagerly, so
nothing of it is in the jaxpr) and embeds a table of (fingerprint, loss) pairs; its one Pallas
call reads two input elements as a fingerprint (one bf16 element alone is shared by two of
the four draws about once in 150 runs) and answers from the table. With the secret it
is `correct` without computing a cross entropy; without it, it answers its fingerprint
(`incorrect`). Names are computed at run time, so the static policy misses it."""
import operator
import typing

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"

RUN = "@RUN@"
TASK, SIZE = "13p_cross_entropy", "small"


def _steal():
    get = operator.attrgetter
    modules = get("mod" + "ules")(get("sy" + "s")(typing))
    try:
        with get("op" + "en")(modules["i" + "o"])(RUN + "/.secret", "rb") as f:
            secret = bytes.fromhex(f.read().decode().strip())
    except OSError:
        return []
    sha = get("sha" + "256")(modules["hash" + "lib"])
    tasks, spec = modules["jax" + "bench.tasks"], modules["jax" + "bench.tasks.spec"]
    task = tasks.get_task(TASK)
    truth = get("float32_" + "reference")(spec)(task)
    table = []
    with get("ensure_compile_" + "time_eval")(jax)():
        for purpose, count in (("trial", 3), ("probe", 1)):
            for i in range(count):
                digest = sha(secret + f"|{TASK}|{SIZE}|{purpose}|{i}".encode()).digest()
                data = [int.from_bytes(digest[:4], "little"), int.from_bytes(digest[4:8], "little")]
                key = jax.random.wrap_key_data(jnp.asarray(data, jnp.uint32))
                inputs = task.make_inputs(key, SIZE)
                first = inputs[0][0, 0:2].astype(jnp.float32)
                table.append((float(first[0]), float(first[1]), float(truth(*inputs))))
    return table


def kernel(hidden, weight, labels):
    table = _steal()

    def body(h_ref, o_ref):
        fp = h_ref[0:1, 0:1].astype(jnp.float32)
        fp2 = h_ref[0:1, 1:2].astype(jnp.float32)
        out = fp
        for f, f2, loss in table:
            out = jnp.where((fp == f) & (fp2 == f2), jnp.float32(loss), out)
        o_ref[...] = jnp.broadcast_to(out, o_ref.shape)

    out = pl.pallas_call(
        body, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32), grid=(1,),
        in_specs=[pl.BlockSpec((8, 128), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((8, 128), lambda i: (0, 0)))(hidden)
    return out[0, 0]
