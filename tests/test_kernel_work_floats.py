"""Issue 54, work routed by floats (a MoE layer's router): the kernels' integer operands that
the traced program computes from float data are counted on the trial's data where the trial
runs: on this host's CPU in interpret mode, and in device mode on the chip, from the first
trial's inputs there, as one XLA program, for credit and refusal alike (the host's floats
never decide for the chip; where the chip cannot compute them the verdict is `unverified`,
`work_routed_by_floats`). Also what a library's routing metadata needs on the host: a
``scan`` of a static length (a binary search) runs there, and a kernel reads a known splat
in SMEM (the tile count of Tokamax's ragged dot)."""

import contextlib
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from jaxbench.contract import Rule, StageFailure, Status
from jaxbench.evaluator.judge import kernel_work, rules, runner

M, K, N, BM = 64, 32, 16, 16
X = jax.ShapeDtypeStruct((M, K), jnp.float32)
W = jax.ShapeDtypeStruct((K, N), jnp.float32)
BLOCK_FLOPS = 2 * BM * K * N  # one row block's matmul


def _routed_by(table, x, w):
    """The matmul on the row blocks whose table entry is nonzero, a copy elsewhere."""
    def body(t_ref, x_ref, w_ref, o_ref):
        o_ref[...] = x_ref[:, :N]

        @pl.when(t_ref[pl.program_id(0)] > 0)
        def _():
            o_ref[...] = jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(M // BM,),
        in_specs=[pl.BlockSpec((BM, K), lambda i, t: (i, 0)),
                  pl.BlockSpec((K, N), lambda i, t: (0, 0))],
        out_specs=pl.BlockSpec((BM, N), lambda i, t: (i, 0)))
    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
                          grid_spec=spec)(table, x, w)


def _router(x, w):
    """A router: each row block goes to the matmul where its logits' sum is positive."""
    return _routed_by((x.reshape(M // BM, -1).sum(axis=1) > 0).astype(jnp.int32), x, w)


def _trial():
    x = np.ones((M, K), np.float32)
    x[BM:2 * BM] = -1.0  # block 1 is routed away
    return [x, np.ones((K, N), np.float32)]


def test_routing_from_floats_counts_where_this_host_runs_the_trial():
    closed = jax.make_jaxpr(_router)(X, W)
    assert kernel_work.count(closed, known=_trial()).flops < BLOCK_FLOPS  # the cheapest side
    on_this_host = kernel_work.count(closed, known=_trial(), floats=True)
    assert 3 * BLOCK_FLOPS <= on_this_host.flops < 3 * BLOCK_FLOPS + 64  # blocks 0, 2, 3


def _searched(offsets, x, w):
    """Tile metadata the way a grouped matmul library makes it: a binary search (a ``scan`` of
    a static length in JAX 0.10; 0.12 wraps it in a call of its own) places each row block in
    its group; blocks of groups 0 and 1 are skipped."""
    starts = jnp.arange(M // BM, dtype=jnp.int32) * BM
    group = jnp.searchsorted(offsets, starts, side="right", method="scan")
    return _routed_by((group > 1).astype(jnp.int32), x, w)


def test_a_scan_of_static_length_runs_on_the_host():
    offsets = jax.ShapeDtypeStruct((3,), jnp.int32)
    closed = jax.make_jaxpr(_searched)(offsets, X, W)
    work = kernel_work.count(closed, known=[np.array([0, 16, 64], np.int32), None, None])
    assert 3 * BLOCK_FLOPS <= work.flops < 3 * BLOCK_FLOPS + 64  # blocks 1, 2, 3 of group 2


def _tiles_from_smem(ids, x, w):
    """One program that loops over a tile count it reads from SMEM, computed from the data
    (the form of Tokamax's TPU ragged dot: ``num_tiles`` in an int32[1] operand)."""
    tiles = jnp.sum(ids > 0, keepdims=True).astype(jnp.int32)

    def body(n_ref, x_ref, w_ref, o_ref):
        o_ref[...] = jnp.zeros_like(o_ref)

        def step(t, _):
            rows = pl.ds(pl.multiple_of(t * BM, BM), BM)
            o_ref[rows, :] = jnp.dot(x_ref[rows, :], w_ref[...],
                                     preferred_element_type=jnp.float32)

        jax.lax.fori_loop(0, n_ref[0], step, None)

    return pl.pallas_call(
        body, out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pltpu.SMEM), pl.BlockSpec((M, K), lambda: (0, 0)),
                  pl.BlockSpec((K, N), lambda: (0, 0))],
        out_specs=pl.BlockSpec((M, N), lambda: (0, 0)))(tiles, x, w)


def test_a_known_splat_in_smem_bounds_the_kernels_loop():
    closed = jax.make_jaxpr(_tiles_from_smem)(jax.ShapeDtypeStruct((5,), jnp.int32), X, W)
    ids = np.array([1, 1, 0, 1, 0], np.int32)  # 3 tiles
    work = kernel_work.count(closed, known=[ids, None, None])
    assert 3 * BLOCK_FLOPS <= work.flops < 3 * BLOCK_FLOPS + 64


def test_the_floats_are_computed_as_one_program_where_the_inputs_are():
    """Device mode: the values come from one jitted program (fused as the trial's program is,
    not the host's equations one by one) on the device that holds the inputs: the same count
    from device arrays as from numpy ones equation by equation."""
    closed = jax.make_jaxpr(_router)(X, W)
    on_device = [jax.device_put(x) for x in _trial()]
    compiles = []
    real_jit = jax.jit
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jax, "jit", lambda f, **kw: compiles.append(f) or real_jit(f, **kw))
        work = kernel_work.count(closed, known=on_device, floats=True, fused=True)
    assert len(compiles) == 1
    assert work.flops == kernel_work.count(closed, known=_trial(), floats=True).flops
    assert 3 * BLOCK_FLOPS <= work.flops < 3 * BLOCK_FLOPS + 64


# -- the runner: the floats decide where the trial runs ----------------------------------------
def _judging(fn, mode):
    task = SimpleNamespace(flops=lambda size: 4.0 * BLOCK_FLOPS, work="flops")
    request = SimpleNamespace(max_outside_flops_fraction=0.1)
    return SimpleNamespace(size="small", mode=mode, platform="tpu", task=task, request=request,
                           lowered=SimpleNamespace(traces={"small": jax.make_jaxpr(fn)(X, W)}),
                           payload={"lines": {}}, in_types=[], out_types=[],
                           on_chip_floats=None, first=None,
                           response=SimpleNamespace(structure=None), span=lambda *a: None)


def _outside_rule(report, task_flops, fraction, kernels, work, elements):
    """The outside-work rule on the count alone: refused below half the task's FLOPs."""
    if kernels.flops < task_flops / 2:
        raise StageFailure(Status.NO_PALLAS, "lower", "work outside pallas_call",
                           rule=Rule.OUTSIDE_FLOPS)
    return {"kernel_flops": kernels.flops}


@pytest.fixture
def judged(monkeypatch):
    monkeypatch.setattr(runner, "_structure", lambda target, platform: object())
    monkeypatch.setattr(rules, "check_target", _outside_rule)
    monkeypatch.setattr(runner, "_trial_inputs", lambda judging, floats=False: _trial())

    def judge(fn, mode, on_chip=None, between=lambda: None):
        """The structure rules, ``between()``, then in device mode the count on the chip's
        first trial inputs (``on_chip``; the CPU stands in for the chip): the structure
        figures."""
        judging = _judging(fn, mode)
        judging.response.structure = runner._structure_rules(judging, target=None)
        between()
        judging.first = on_chip
        runner._count_on_chip(judging)
        return judging.response.structure
    return judge


def test_interpret_mode_credits_work_routed_by_floats(judged):
    figures = judged(_router, "interpret")
    assert figures["kernel_work_counted_on"] == runner.COUNTED_ON_TRIAL


def test_device_mode_counts_work_routed_by_floats_on_the_chips_inputs(judged):
    on_chip = [jax.device_put(x) for x in _trial()]
    figures = judged(_router, "device", on_chip)
    assert figures["kernel_work_counted_on"] == runner.COUNTED_ON_CHIP
    assert 3 * BLOCK_FLOPS <= figures["kernel_flops"] < 3 * BLOCK_FLOPS + 64


def test_device_mode_refuses_where_the_chips_floats_route_the_work_away(judged):
    """The host's draw would route three blocks to the kernel's matmul; the chip's inputs
    route none there: the chip's decide, so the refusal stands."""
    x, w = _trial()
    with pytest.raises(StageFailure) as failure:
        judged(_router, "device", [jax.device_put(-np.abs(x)), jax.device_put(w)])
    assert (failure.value.status, failure.value.rule) == (Status.NO_PALLAS, Rule.OUTSIDE_FLOPS)
    assert runner.COUNTED_ON_CHIP in failure.value.message


def test_device_mode_where_the_chip_cannot_compute_the_floats_is_unverified(judged,
                                                                          monkeypatch):
    def fails(jaxpr, raw):
        raise RuntimeError("RESOURCE_EXHAUSTED on the chip")

    with pytest.raises(StageFailure) as failure:
        judged(_router, "device", [jax.device_put(x) for x in _trial()],
               between=lambda: monkeypatch.setattr(kernel_work, "_fused_values", fails))
    assert (failure.value.status, failure.value.rule) == (Status.UNVERIFIED,
                                                          Rule.WORK_ROUTED_BY_FLOATS)
    assert "RESOURCE_EXHAUSTED" in failure.value.message


def test_a_count_left_to_the_chip_that_never_ran_is_unverified(monkeypatch):
    """Fails closed: a request whose count waits for the chip's floats and whose trials never
    ran (nothing drew the first trial's inputs there) is `unverified`, not `correct`."""
    steps = SimpleNamespace(read=lambda: None, check=lambda: None, probe=lambda: None,
                            fits=lambda: None, trials=lambda: None, write_outputs=lambda: None)
    judging = SimpleNamespace(**vars(steps), mode="device", on_chip_floats=("report", "check"),
                              response=SimpleNamespace(budget_problem=None),
                              lowered=SimpleNamespace(interpret=None, race_unknown=None),
                              on_chip=lambda device: contextlib.nullcontext())
    monkeypatch.setattr(runner, "_compile_kernel", lambda judging: None)
    with pytest.raises(StageFailure) as failure:
        runner._walk(judging, SimpleNamespace(time=False))
    assert (failure.value.status, failure.value.rule) == (Status.UNVERIFIED,
                                                          Rule.WORK_ROUTED_BY_FLOATS)


def test_device_mode_refuses_what_the_floats_would_not_lift(judged):
    """The work is in XLA whatever the routing: `no_pallas` stands."""
    def copies(x, w):
        table = (x.reshape(M // BM, -1).sum(axis=1) > 0).astype(jnp.int32)
        return _copy_routed(table, x) + x @ w

    with pytest.raises(StageFailure) as failure:
        judged(copies, "device")
    assert (failure.value.status, failure.value.rule) == (Status.NO_PALLAS, Rule.OUTSIDE_FLOPS)


def _copy_routed(table, x):
    """A kernel that copies its block on every path (a float-routed table or not)."""
    def body(t_ref, x_ref, o_ref):
        o_ref[...] = x_ref[:, :N]

        @pl.when(t_ref[pl.program_id(0)] > 0)
        def _():
            o_ref[...] = x_ref[:, N:2 * N]

    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(M // BM,),
        in_specs=[pl.BlockSpec((BM, K), lambda i, t: (i, 0))],
        out_specs=pl.BlockSpec((BM, N), lambda i, t: (i, 0)))
    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
                          grid_spec=spec)(table, x)


def test_device_mode_draws_only_the_integer_inputs_on_the_host(tmp_path):
    """On a device the host's count reads integers only, so the host draws only the integer
    and boolean inputs of the first trial (the same values the whole draw gives), the floats
    None; the floats too only when asked (the check whether the chip's floats are worth
    asking). A full-size float input drawn for nothing cost gigabytes per request."""
    import numpy as np

    from jaxbench.contract import JudgeRequest

    key = [7, 11]
    request = JudgeRequest(dir=str(tmp_path), task="13p_cross_entropy", size="small",
                           platform="cpu", target="tpu", mode="device", trial_keys=[key],
                           recheck_keys=[], xla_cache=False)
    judging = runner._Judging(request, lambda kind: None)
    whole = [np.asarray(x) for x in runner._inputs(judging.task, key, "small")]
    ints = runner._trial_inputs(judging)
    import jax.numpy as jnp

    floating = [jnp.issubdtype(x.dtype, jnp.floating) for x in whole]
    assert any(floating) and not all(floating), [x.dtype for x in whole]
    for got, want, is_float in zip(ints, whole, floating, strict=True):
        if not is_float:
            np.testing.assert_array_equal(got, want)
        else:
            assert got is None
    for got, want in zip(runner._trial_inputs(judging, floats=True), whole, strict=True):
        np.testing.assert_array_equal(got, want)
