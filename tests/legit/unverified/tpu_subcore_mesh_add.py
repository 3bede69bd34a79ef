"""l1_add over a SparseCore vector-subcore mesh (`plsc.VectorSubcoreMesh`, `pl.kernel`): each of
the 16 subcores copies its rows into VMEM, adds them and copies them back. JAX 0.10.2
cannot lower a mesh kernel that reads its axis index for the CPU interpreter, so nothing here
runs it: `unverified` (run it with --mode device), never `rejected` for its mesh."""
import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.experimental.pallas import tpu_sc as plsc

TARGET = "tpu"
CORES, SUBCORES = 1, 16


def kernel(x, y):
    m, n = x.shape
    rows = m // (CORES * SUBCORES)
    mesh = plsc.VectorSubcoreMesh(core_axis_name="core", subcore_axis_name="subcore",
                                  num_cores=CORES, num_subcores=SUBCORES)

    @pl.kernel(out_type=jax.ShapeDtypeStruct(x.shape, x.dtype), mesh=mesh,
               scratch_types=[pltpu.VMEM((rows, n), x.dtype), pltpu.VMEM((rows, n), x.dtype)])
    def add(x_hbm, y_hbm, o_hbm, a_vmem, b_vmem):
        worker = jax.lax.axis_index("core") * SUBCORES + jax.lax.axis_index("subcore")
        part = pl.ds(worker * rows, rows)
        pltpu.sync_copy(x_hbm.at[part], a_vmem)
        pltpu.sync_copy(y_hbm.at[part], b_vmem)
        a_vmem[...] = a_vmem[...] + b_vmem[...]
        pltpu.sync_copy(a_vmem, o_hbm.at[part])

    return add(x, y)
