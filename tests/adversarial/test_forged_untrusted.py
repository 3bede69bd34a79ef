"""A fully compromised untrusted side: whatever files it leaves, the verdict holds.

Each scenario replaces the tracer process with a function that writes into the
tracer's directory what an attacker who controls that process could write
(forged status claims, exports of other computations, links, FIFOs, malformed
arrays). The parent must take only export bytes and failure text, and the judge
must check exactly the module it runs.
"""

import io
import json
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl

from jaxbench import compat
from jaxbench.evaluator import Evaluator
from jaxbench.evaluator.arrays import pack
from jaxbench.evaluator.judge import exporting
from jaxbench.evaluator.pool import WorkerOutcome
from jaxbench.tasks import get_task

TASK = get_task("8p_gemm")
SPECS = [jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in TASK.input_specs("small")]
FULL_SPECS = [jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in TASK.input_specs("full")]
# The job a scenario is answering: a fully compromised tracer has read its token.
JOB: dict = {}


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def _pallas_copy(x):
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def _xla_matmul(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)


def _export(fn, platform="tpu", interpret=False, specs=SPECS):
    closed = jax.make_jaxpr(fn)(*specs)
    with_kernels = exporting.scan(closed).kernels
    if platform == "tpu" and with_kernels:
        with compat.abstract_tpu(exporting.CROSS_LOWERING_TPU):
            closed = jax.make_jaxpr(fn)(*specs)
    return exporting.export(closed, specs, platform, interpret=interpret).serialize()


def _status(**fields):
    return json.dumps({"status": "traced", "stages": {"trace": {"seconds": 0.1}},
                       "isolation": "forged", "nonce": JOB.get("nonce"), **fields}).encode()


def _write(directory: Path, files: dict) -> None:
    for name, data in files.items():
        (directory / name).write_bytes(data)


class _CompromisedPool:
    """Stands in for the tracer pool: the 'tracer' is an attacker's function."""

    def __init__(self, scenario, full_export=True):
        self.scenario = scenario
        self.jobs = []
        self.full_export = full_export

    def run(self, job, timeout_s, memory_bytes, full_export=True):
        self.jobs.append(job)
        JOB.clear()
        JOB.update(job)
        directory = Path(tempfile.mkdtemp(prefix="jaxbench-forged-"))
        self.scenario(directory, job)
        full = directory / exporting.size_export("full")
        if (directory / "target.export").is_file() and not os.path.lexists(full) \
                and self.full_export:
            full.write_bytes(_FULL_EXPORT())  # the other size's module (memory budgets only)
        return WorkerOutcome(0, False, False, 0.1, directory, "")

    def close(self):
        pass


def _tiled_kernel(a, b):
    def body(a_ref, b_ref, o_ref):
        o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                             preferred_element_type=jnp.float32).astype(o_ref.dtype)

    (m, k), n = a.shape, b.shape[1]
    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
                          grid=(m // 256, n // 512),
                          in_specs=[pl.BlockSpec((256, k), lambda i, j: (i, 0)),
                                    pl.BlockSpec((k, 512), lambda i, j: (0, j))],
                          out_specs=pl.BlockSpec((256, 512), lambda i, j: (i, j)))(a, b)


def _FULL_EXPORT():  # noqa: N802 - built once, on first use
    if "full" not in _CACHE:  # a kernel whose blocks fit the chip at full size
        _CACHE["full"] = _export(_tiled_kernel, specs=FULL_SPECS)
    return _CACHE["full"]


_CACHE: dict = {}


def _honest_interpret():
    return _export(lambda a, b: _pallas_copy(_xla_matmul(a, b)) * 0 + _xla_matmul(a, b),
                   "cpu", True)


def _zeros_kernel(a, b):
    def body(a_ref, b_ref, o_ref):
        o_ref[...] = jnp.zeros(o_ref.shape, o_ref.dtype)

    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]),
                                                               a.dtype))(a, b)


def _correct_kernel(a, b):
    def body(a_ref, b_ref, o_ref):
        o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                             preferred_element_type=jnp.float32).astype(o_ref.dtype)

    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]),
                                                               a.dtype))(a, b)


def _link(directory, job):
    real = Path(tempfile.mkdtemp()) / "real.export"
    real.write_bytes(_export(_correct_kernel))
    os.symlink(real, directory / "target.export")
    _write(directory, {"status.json": _status(),
                       "interpret.export": _export(_correct_kernel, "cpu", True)})


def _fifo(directory, job):
    os.mkfifo(directory / "target.export")
    _write(directory, {"status.json": _status()})


def _malformed_probe(directory, job):
    data, layout = pack([("tpu_interpreter", [0, 0], np.zeros((256, 512), np.float32))])
    layout[0]["leaves"][0]["dtype"] = "bfloat16"  # declared bf16, stored as f32
    _write(directory, {
        "status.json": _status(probe=layout, tpu_interpreter="ran"),
        "target.export": _export(_correct_kernel),
        "interpret.export": _export(_correct_kernel, "cpu", True), "probe.npy": data})


def _terabyte_probe(directory, job):
    """A probe whose .npy header claims (2^20, 2^20) float32 (4 TiB) over a few bytes: refused
    from the header, before anything is allocated."""
    from numpy.lib import format as npy

    header = io.BytesIO()
    npy.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                        "shape": (1 << 20, 1 << 20)})
    layout = [{"label": "tpu_interpreter", "key": [0, 0],
               "leaves": [{"shape": [1 << 20, 1 << 20], "dtype": "float32"}]}]
    _write(directory, {
        "status.json": _status(probe=layout, tpu_interpreter="ran"),
        "target.export": _export(_correct_kernel),
        "interpret.export": _export(_correct_kernel, "cpu", True),
        "probe.npy": header.getvalue() + b"\0" * 64})


def _deep_directories(directory, job, depth=20_000):
    """A directory chain deeper than any recursive removal goes, beside honest exports."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    _write(directory, {"status.json": _status(), "target.export": _export(_correct_kernel),
                       "interpret.export": _export(_correct_kernel, "cpu", True)})



def _claims_no_interpret_export(directory, kernel):
    """The claim that no interpret export exists, beside both of ``kernel``'s exports."""
    _write(directory, {
        "status.json": _status(stages={"lower": {"seconds": 0.1,
                                                 "interpret_export_error": "claimed"}}),
        "target.export": _export(kernel),
        "interpret.export": _export(kernel, "cpu", True)})

SCENARIOS = [
    # name, scenario, status, stage, words
    ("claims_correct", lambda d, j: _write(d, {"status.json": json.dumps(
        {"status": "correct", "speedup": 99.0}).encode()}), "crashed", "trace",
     "before reporting a verdict"),
    ("traced_without_exports", lambda d, j: _write(d, {"status.json": _status()}),
     "crashed", "lower", "no target export"),
    ("plain_xla_export", lambda d, j: _write(d, {
        "status.json": _status(), "target.export": _export(_xla_matmul),
        "interpret.export": _export(_xla_matmul, "cpu")}),
     "no_pallas", "lower", "no Pallas kernel custom call"),
    ("kernel_copies_xla_result", lambda d, j: _write(d, {
        "status.json": _status(),
        "target.export": _export(lambda a, b: _pallas_copy(_xla_matmul(a, b))),
        "interpret.export": _export(lambda a, b: _pallas_copy(_xla_matmul(a, b)), "cpu", True)}),
     "rejected", "lower", "work outside pallas_call"),
    ("swapped_interpret_export", lambda d, j: _write(d, {
        "status.json": _status(), "target.export": _export(_zeros_kernel),
        "interpret.export": _export(_xla_matmul, "cpu")}),
     "rejected", "lower", "must come from one trace"),
    ("interpret_export_from_other_kernel_plus_xla", lambda d, j: _write(d, {
        "status.json": _status(), "target.export": _export(_zeros_kernel),
        "interpret.export": _honest_interpret()}),
     "rejected", "lower", "must come from one trace"),
    ("target_export_for_cpu", lambda d, j: _write(d, {
        "status.json": _status(), "target.export": _export(_correct_kernel, "cpu", True),
        "interpret.export": _export(_correct_kernel, "cpu", True)}),
     "rejected", "lower", "export is for ('cpu',)"),
    ("symlinked_export", _link, "crashed", "lower", "no target export"),
    ("fifo_export", _fifo, "crashed", "lower", "no target export"),
    ("oversized_status", lambda d, j: _write(d, {
        "status.json": b" " * (2 << 20) + _status(), "target.export": _export(_correct_kernel)}),
     "crashed", "trace", "before reporting a verdict"),
    ("malformed_untrusted_outputs", _malformed_probe, "rejected", "correct",
     "do not match their layout"),
    ("failure_claim_is_believed", lambda d, j: _write(d, {"status.json": json.dumps(
        {"status": "runtime_error", "stage": "correct", "message": "m"}).encode()}),
     "runtime_error", "correct", "m"),
    # the parent cannot be crashed by hostile files
    ("deeply_nested_status", lambda d, j: _write(d, {"status.json": b"[" * 200_000}),
     "crashed", "trace", "before reporting a verdict"),
    ("terabyte_probe_header", _terabyte_probe, "rejected", "correct",
     "header claims more bytes than the stream holds"),
    # a report in the harness's form, without the job's token: candidate code wrote it
    ("report_without_token", lambda d, j: _write(d, {
        "status.json": json.dumps({"status": "traced", "stages": {}}).encode(),
        "target.export": _export(_correct_kernel),
        "interpret.export": _export(_correct_kernel, "cpu", True)}),
     "crashed", "lower", "not written by the harness's last step"),
    # no interpret-mode module: nothing trusted ran the kernel, so never `correct`
    ("no_interpret_export_claimed", lambda d, j: _write(d, {
        "status.json": _status(stages={"lower": {"seconds": 0.1,
                                                 "interpret_export_error": "claimed"}}),
        "target.export": _export(_correct_kernel)}),
     "unverified", "correct", "no exportable interpret-mode lowering"),
    # the same claim beside an interpret export: the trusted side runs the module it has, so
    # the claim can neither hide a wrong kernel nor cost a right one its verdict
    ("export_error_claimed_beside_a_wrong_export",
     lambda d, j: _claims_no_interpret_export(d, _zeros_kernel), "incorrect", "correct",
     "got 0, truth"),
    ("export_error_claimed_beside_a_right_export",
     lambda d, j: _claims_no_interpret_export(d, _correct_kernel), "correct", "correct", ""),
]


@pytest.mark.parametrize("name,scenario,status,stage,words", SCENARIOS,
                         ids=[s[0] for s in SCENARIOS])
def test_forged_untrusted_side_gets_its_verdict(name, scenario, status, stage, words):
    with Evaluator(spares=0) as ev:
        ev.pool.close()
        ev.pool = _CompromisedPool(scenario)
        result = ev.evaluate(TASK.folder / "seed_tpu.py", TASK.id, trials=2, tpu_interpret=False)
    assert (result["status"], result["stage"]) == (status, stage), result["message"]
    assert words in result["message"], result["message"]
    assert result["speedup"] is None


def test_forged_figures_are_ignored():
    """An honest pair of exports with forged claims beside them: the parent takes the exports,
    computes the figures itself, and keeps none of the claimed ones."""
    def scenario(d, j):
        _write(d, {"status.json": _status(speedup=50.0, trials=[], stages={
            "trace": {"seconds": 0.1}, "time": {"speedup": 50.0}, "correct": {"forged": True}}),
            "target.export": _export(_correct_kernel),
            "interpret.export": _export(_correct_kernel, "cpu", True)})

    with Evaluator(spares=0) as ev:
        ev.pool.close()
        ev.pool = pool = _CompromisedPool(scenario)
        result = ev.evaluate(TASK.folder / "seed_tpu.py", TASK.id, trials=2, tpu_interpret=False)
    assert result["status"] == "correct", result["message"]
    assert result["judged_on"] == "trusted_export" and result["trials"] == 2
    assert result["isolation"] != "forged"  # what the parent set up, not the tracer's word
    assert result["speedup"] is None and "time" not in result["stages"]
    assert "forged" not in result["stages"].get("correct", {})
    # the untrusted side never saw the trial keys
    assert "trial_keys" not in pool.jobs[0] and "recheck_keys" not in pool.jobs[0]


def _evaluate_forged(scenario, **options):
    full_export = options.pop("full_export", True)
    with Evaluator(spares=0) as ev:
        ev.pool.close()
        ev.pool = _CompromisedPool(scenario, full_export)
        return ev.evaluate(TASK.folder / "seed_tpu.py", TASK.id, trials=2, **options)


def test_missing_size_export_is_a_failure():
    """The judge computes the memory budgets from the target module at every size: a tracer
    that leaves out the other size's module does not skip them."""
    result = _evaluate_forged(lambda d, j: _write(d, {
        "status.json": _status(), "target.export": _export(_correct_kernel),
        "interpret.export": _export(_correct_kernel, "cpu", True)}),
        tpu_interpret=False, full_export=False)
    assert (result["status"], result["stage"]) == ("crashed", "lower"), result["message"]
    assert "no target export at size(s) ['full']" in result["message"]


def test_missing_probe_is_a_failure():
    """The TPU-interpreter check was asked for; a report without it is a failure, not a pass."""
    result = _evaluate_forged(lambda d, j: _write(d, {
        "status.json": _status(), "target.export": _export(_correct_kernel),
        "interpret.export": _export(_correct_kernel, "cpu", True)}), tpu_interpret=True)
    assert (result["status"], result["stage"]) == ("crashed", "correct"), result["message"]
    assert "did not report the TPU-interpreter check" in result["message"]


def test_deep_directory_chain_is_removed_and_the_parent_survives(monkeypatch):
    made = []

    def scenario(d, j):
        made.append(d)
        _deep_directories(d, j)

    result = _evaluate_forged(scenario, tpu_interpret=False)
    assert result["status"] == "correct", result["message"]
    assert made and not os.path.lexists(made[0])


def test_an_evaluator_error_is_a_crashed_verdict(monkeypatch):
    """Anything that goes wrong inside one evaluation ends that evaluation as `crashed`, with
    a message, instead of escaping to the caller (a run goes on)."""
    def broken(self, *args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(Evaluator, "_judge", broken)
    result = _evaluate_forged(lambda d, j: _write(d, {
        "status.json": _status(), "target.export": _export(_correct_kernel),
        "interpret.export": _export(_correct_kernel, "cpu", True)}), tpu_interpret=False)
    assert (result["status"], result["stage"]) == ("crashed", "lower"), result["message"]
    assert "the evaluator failed on this kernel: RecursionError" in result["message"]


# --- a GPU kernel with no trusted interpret export (plgpu.kernel): the Mosaic GPU interpreter's
# check is due; it can only find the kernel wrong, and a report without it is a failure ------

def _mosaic_gpu_body(a_ref, b_ref, o_ref):  # an empty Mosaic GPU kernel: only its shape counts
    del a_ref, b_ref, o_ref


def _mosaic_gpu_kernel(a, b):
    from jax.experimental.pallas import mosaic_gpu as plgpu

    out = jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype)
    return plgpu.kernel(_mosaic_gpu_body, out_type=out, grid=(2,), grid_names=("g",))(a, b)


def _gpu_exports(directory: Path, **status_fields) -> None:
    """Target exports of a Mosaic GPU kernel at both sizes, and the claim that no interpret
    export exists, with ``status_fields`` (the interpreter's report) beside them."""
    closed = {name: jax.make_jaxpr(_mosaic_gpu_kernel)(*specs)
              for name, specs in (("small", SPECS), ("full", FULL_SPECS))}
    _write(directory, {
        "status.json": _status(stages={"lower": {"seconds": 0.1, "interpret_export_error":
                                                 "NotImplementedError: claimed"}},
                               **status_fields),
        "target.export": exporting.export(closed["small"], SPECS, "cuda").serialize(),
        exporting.size_export("full"): exporting.export(closed["full"], FULL_SPECS,
                                                        "cuda").serialize()})


def _gpu_probe(directory: Path, job: dict, outputs) -> None:
    data, layout = pack([("gpu_interpreter", job["gpu_interpreter_key"], outputs)])
    (directory / "probe.npy").write_bytes(data)
    _gpu_exports(directory, probe=layout, gpu_interpreter="ran")


def _gpu_truth(job: dict):
    from jaxbench.tasks.spec import upcast

    inputs = TASK.make_inputs(jax.random.wrap_key_data(
        np.asarray(job["gpu_interpreter_key"], np.uint32)), "small")
    return np.asarray(TASK.reference(*upcast(inputs))).astype(jnp.bfloat16)


GPU_SCENARIOS = [
    ("gpu_interpreter_not_reported", lambda d, j: _gpu_exports(d),
     "crashed", "correct", "did not report the Mosaic GPU interpreter check"),
    ("gpu_interpreter_finds_it_wrong",
     lambda d, j: _gpu_probe(d, j, np.zeros((256, 512), jnp.bfloat16)),
     "incorrect", "correct", "got 0, truth"),
    ("gpu_interpreter_agrees", lambda d, j: _gpu_probe(d, j, _gpu_truth(j)),
     "unverified", "correct", "its outputs matched the truth, which cannot make it `correct`"),
    # "cannot run it" is taken as said, and leaves the kernel unverified: never `correct`
    ("gpu_interpreter_claims_unsupported",
     lambda d, j: _gpu_exports(d, gpu_interpreter="unsupported: claimed"),
     "unverified", "correct", "JAX's Mosaic GPU interpreter: unsupported: claimed"),
    # believed only where the installed JAX has no Mosaic GPU interpreter (0.10)
    ("gpu_interpreter_unavailable",
     lambda d, j: _gpu_exports(d, gpu_interpreter="unavailable: no interpreter"),
     *(("unverified", "correct", "JAX's Mosaic GPU interpreter: unavailable: no interpreter")
       if compat.gpu_interpreter() is None else
       ("crashed", "correct", "did not report the Mosaic GPU interpreter check"))),
]


@pytest.mark.parametrize("name,scenario,status,stage,words", GPU_SCENARIOS,
                         ids=[s[0] for s in GPU_SCENARIOS])
def test_mosaic_gpu_interpreter_is_add_only(name, scenario, status, stage, words):
    with Evaluator(spares=0) as ev:
        ev.pool.close()
        ev.pool = pool = _CompromisedPool(scenario)
        result = ev.evaluate(TASK.folder / "seed_gpu.py", TASK.id, trials=2)
    assert pool.jobs[0]["gpu_interpreter_key"] is not None
    assert (result["status"], result["stage"]) == (status, stage), result["message"]
    assert words in result["message"], result["message"]
