"""l3_triangle_update (PallasBench #45): a masked triangle multiplicative update.

    a[i, k, c] = z[i, k, c] · m[i, k]
    U[i, j, c] = Σ_k a[i, k, c] · a[k, j, c]        (per channel c: U_c = A_c A_c)
    y = z + U

z (N, N, C) = (64, 64, 32) float32 ~ 0.5 · N(0, 1); m (N, N) float32 in {0, 1},
Bernoulli(0.5); output y (N, N, C) float32.

Repair: the published task drew the mask from N(0, 1), which is not a mask; it is now
drawn in {0, 1}. z is scaled by 0.5 so that each 64-term sum (about 16 non-zero terms of
size 0.25) stays O(1), as a TF32 matmul on a GPU needs to meet the tolerance. The math is
unchanged, so there is no unrepaired reference.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, custom, normal


def reference(z, m):
    a = z * m[:, :, None]
    return z + jnp.einsum("ikc,kjc->ijc", a, a)


def _inputs(d):
    return [normal("z", (d.N, d.N, d.C), scale=0.5, dtype="float32"),
            custom("m", (d.N, d.N), dtype="float32")]


def _make_inputs(key, d):
    kz, km = jax.random.split(key)
    z = _inputs(d)[0].draw(kz)
    m = jax.random.bernoulli(km, 0.5, (d.N, d.N)).astype(jnp.float32)
    return z, m


TASK = Task(
    "l3_triangle_update",
    reference=reference,
    sizes={"small": dict(N=64, C=16), "full": dict(N=64, C=32)},
    inputs=_inputs,
    make_inputs=_make_inputs,
    # the contraction (2 N³ C), the mask product (N² C) and the residual (N² C)
    flops=lambda d: 2 * d.N ** 3 * d.C + 2 * d.N * d.N * d.C,
    suite=SUITE,
    meta=meta(45, 3, "triangle",
              repair="the mask was drawn from N(0, 1); it is now Bernoulli(0.5) in {0, 1} "
                     "(and z is 0.5 * N(0, 1) so the 64-term sums stay O(1)); math unchanged"),
)
