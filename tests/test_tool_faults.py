"""Faults of the judge's tools are not the kernel's (evaluator/judge/tool_faults.py): a crash
inside JAX's own code while the judge lowers, interprets or runs a kernel is named (the
innermost JAX frame, the JAX version, the known bug) and becomes `unverified` or a warning;
a deliberate error of JAX's (a `raise` that diagnoses the kernel: an out-of-bounds access, a
refused construct) stays the kernel's.

The faults here are synthetic, so the tests do not depend on a JAX bug staying unfixed: a
function compiled under a file name inside JAX's own `_src` directory stands for JAX's code."""

import linecache
import os

import jax
import jax.numpy as jnp
import pytest

from jaxbench.contract import StageFailure
from jaxbench.evaluator.judge import tool_faults

JAX_SRC = os.path.join(os.path.dirname(jax.__file__), "_src")
FAKE = os.path.join(JAX_SRC, "pallas", "mosaic", "interpret", "jaxbench_synthetic_fault.py")
SOURCE = '''\
def crash(*_args, **_kwargs):
    return {}[OrderedIOEffect]
def refuse(*_args, **_kwargs):
    raise IndexError("Range (slice(0, 9),) is entirely out of bounds for shape (8,).")
def invariant(*_args, **_kwargs):
    assert _args == ("never",), "a JAX invariant"
'''


def _fake_jax() -> dict:
    """Functions whose code lives, as far as tracebacks tell, in JAX's own source."""
    linecache.cache[FAKE] = (len(SOURCE), None, SOURCE.splitlines(True), FAKE)
    namespace = {"OrderedIOEffect": "OrderedIOEffect"}
    exec(compile(SOURCE, FAKE, "exec"), namespace)  # noqa: S102 - the test's own stand-in
    return namespace


def _raised(fn, *args):
    try:
        fn(*args)
    except Exception as exc:  # noqa: BLE001
        return exc
    raise AssertionError("did not raise")


def test_a_crash_inside_jax_is_the_tools_a_deliberate_error_the_kernels():
    fake = _fake_jax()
    fault = tool_faults.classify(_raised(fake["crash"]), "the TPU interpreter")
    assert fault is not None
    assert fault.frame == "jax/_src/pallas/mosaic/interpret/jaxbench_synthetic_fault.py:2 in crash"
    assert fault.error == "KeyError: 'OrderedIOEffect'" and fault.version == f"JAX {jax.__version__}"
    if jax.__version__ == "0.10.2":  # the table of known bugs names it
        assert "custom_vjp ragged dot" in fault.known
    assert "Not the kernel's fault" in fault.describe()
    # a failed assertion of JAX's own invariants is JAX's
    assert tool_faults.classify(_raised(fake["invariant"]), "x") is not None
    # a `raise` of JAX's is its diagnosis of the kernel (here: an out-of-bounds access)
    assert tool_faults.classify(_raised(fake["refuse"]), "the TPU interpreter") is None
    # an error whose innermost frame is not a tool's is not known to be the tool's
    assert tool_faults.classify(_raised(lambda: {}["k"]), "the TPU interpreter") is None
    # NotImplementedError is JAX saying it cannot (handled as "unsupported" by the callers)
    assert tool_faults.classify(NotImplementedError("x"), "x") is None


def test_a_wrapper_is_looked_through_to_the_error_it_carries():
    fake = _fake_jax()

    class LoweringException(Exception):  # as Pallas' Mosaic lowering wraps a rule's error
        pass

    def lower():
        try:
            fake["crash"]()
        except KeyError as exc:
            raise LoweringException("Exception while lowering eqn") from exc

    fault = tool_faults.classify(_raised(lower), "JAX's lowering for tpu")
    assert fault is not None and fault.error.startswith("KeyError")


def test_the_error_a_host_callback_raised_is_the_one_classified():
    """JAX's interpreters run in host callbacks; the caller sees only an XLA runtime error
    with text. The judge takes the callback's own exception from JAX's callback logger."""
    from jax.experimental import io_callback

    fake = _fake_jax()
    fn = jax.jit(lambda x: io_callback(fake["crash"], jax.ShapeDtypeStruct((2,), jnp.float32), x))
    with tool_faults.watch() as captured:
        exc = _raised(lambda: jax.block_until_ready(fn(jnp.ones(2))))
    assert type(exc).__name__ in tool_faults.WRAPPERS and captured
    fault = tool_faults.classify_run(exc, captured, "the TPU interpreter")
    assert fault is not None and fault.frame.endswith(":2 in crash")
    fn = jax.jit(lambda x: io_callback(fake["refuse"], jax.ShapeDtypeStruct((2,), jnp.float32), x))
    with tool_faults.watch() as captured:
        exc = _raised(lambda: jax.block_until_ready(fn(jnp.ones(2))))
    assert tool_faults.classify_run(exc, captured, "the TPU interpreter") is None


# -- the runner ------------------------------------------------------------------------------

def _request(tmp_path, tpu_interpreter=True):
    from pathlib import Path

    from jaxbench.evaluator.parent.compare import derive_keys
    from jaxbench.evaluator.sandbox import handover
    from jaxbench.tasks import get_task

    task = get_task("12p_rmsnorm")
    path = Path(task.folder) / "seed_tpu.py"
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - a shipped seed
    traces = {size: jax.make_jaxpr(namespace["kernel"])(*[
        jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in task.input_specs(size)])
        for size in task.inputs}
    (tmp_path / "jaxpr.pkl").write_bytes(handover.dumps(traces))
    return {"dir": str(tmp_path), "task": task.id, "size": "small", "platform": "tpu",
            "target": "tpu", "mode": "interpret",
            "trial_keys": derive_keys(b"s", task.id, "small", 1, "trial"), "recheck_keys": [],
            "tpu_interpreter_key": derive_keys(b"s", task.id, "small", 1, "probe")[0]
            if tpu_interpreter else None}


def test_a_tpu_interpreter_crash_leaves_the_kernel_to_the_interpret_mode_trials(
        tmp_path, monkeypatch):
    from jax._src.pallas.mosaic.interpret import interpret_pallas_call as tpu_interpreter

    from jaxbench.evaluator.judge import runner

    monkeypatch.setattr(tpu_interpreter, "get", _fake_jax()["crash"])  # every load crashes
    response = runner.judge(_request(tmp_path)).to_dict()
    assert response["tpu_interpreter"].startswith("failed: the TPU interpreter crashed inside "
                                                  "its own code"), response["tpu_interpreter"]
    (fault,) = response["tool_faults"]
    assert fault["tool"] == "the TPU interpreter" and fault["error"].startswith("KeyError")
    assert "jaxbench_synthetic_fault.py:2" in fault["frame"]
    assert [t["label"] for t in response["trials"]] == ["trial0"]  # still judged on them


def test_an_out_of_bounds_access_the_tpu_interpreter_finds_stays_the_kernels(
        tmp_path, monkeypatch):
    from jax._src.pallas.mosaic.interpret import interpret_pallas_call as tpu_interpreter

    from jaxbench.evaluator.judge import runner

    monkeypatch.setattr(tpu_interpreter, "get", _fake_jax()["refuse"])
    with pytest.raises(StageFailure) as failure:
        runner.judge(_request(tmp_path))
    assert (failure.value.status, failure.value.stage) == ("runtime_error", "correct")
    assert "out of bounds" in failure.value.message


def test_a_crash_of_jaxs_lowering_is_unverified_not_a_compile_error(tmp_path, monkeypatch):
    from jaxbench.evaluator.judge import exporting, runner

    crash = _fake_jax()["crash"]
    monkeypatch.setattr(exporting, "export", lambda *a, **k: crash())
    with pytest.raises(StageFailure) as failure:
        runner.judge(_request(tmp_path, tpu_interpreter=False))
    assert (failure.value.status, failure.value.stage) == ("unverified", "lower")
    message = failure.value.message
    assert "JAX's lowering for tpu crashed inside its own code" in message
    assert f"JAX {jax.__version__}" in message and "jaxbench_synthetic_fault.py:2" in message


def test_a_crash_of_the_interpret_mode_run_is_unverified(tmp_path, monkeypatch):
    from jaxbench.evaluator.judge import runner

    crash = _fake_jax()["crash"]
    monkeypatch.setattr(runner, "_inputs", lambda *a, **k: crash())
    with pytest.raises(StageFailure) as failure:
        runner.judge(_request(tmp_path, tpu_interpreter=False))
    assert (failure.value.status, failure.value.stage) == ("unverified", "correct")
    assert "JAX's interpret-mode run crashed inside its own code" in failure.value.message


def test_the_parent_turns_a_tool_fault_into_a_warning():
    from jaxbench.evaluator.parent.chip_checks import tool_faults as _tool_faults

    fault = tool_faults.classify(_raised(_fake_jax()["crash"]), "the TPU interpreter")
    (warning,), records = _tool_faults([fault.as_dict()])
    assert warning.startswith("tool fault: the TPU interpreter crashed") and \
        "race detection" in warning
    assert records[0]["frame"] == fault.frame
    assert _tool_faults("not a list") == ([], [])  # what is not the runner's shape is ignored


def test_a_crash_inside_tritons_own_code_is_not_the_kernels():
    fault = tool_faults.classify_frames(
        "AttributeError", "'NoneType' object has no attribute 'shape'",
        [("triton/backends/nvidia/compiler.py", 300, "make_ttgir", "x = mod.shape")],
        "Triton's compiler for sm_80", "Triton 3.8.0")
    assert fault is not None and fault.frame == "triton/backends/nvidia/compiler.py:300 in make_ttgir"
    # a `raise` of Triton's (its out-of-resources report, say) is its finding
    assert tool_faults.classify_frames(
        "ValueError", "out of resource", [("triton/compiler.py", 9, "f", "raise ValueError(m)")],
        "x", "y") is None
    assert tool_faults.classify_frames("RuntimeError", "PassManager::run failed",
                                       [("triton/compiler.py", 9, "f", "pm.run(mod)")],
                                       "x", "y") is None


@pytest.mark.skipif(jax.__version__ != "0.10.2", reason="the JAX 0.10.2 bugs this kernel meets")
def test_a_kernel_both_jax_interpreters_crash_on_is_unverified_with_the_jax_frames(evaluator):
    """JAX's own ops.tpu.ragged_paged_attention: JAX 0.10.2's interpret-mode lowering crashes
    on its TypedInt operands and its TPU interpreter on its reshaped refs (known bugs, in the
    table). Before, the interpreter's crash was the kernel's `runtime_error`."""
    from pathlib import Path

    path = Path(__file__).parent / "legit" / "jax_ops" / "tpu_ragged_paged_attention_7p.py"
    result = evaluator.evaluate(path, "7p_ragged_paged_attention", trials=1, timeout_s=300)
    assert (result.status, result.stage) == ("unverified", "correct"), result.message
    assert "JAX's interpret-mode lowering crashed inside its own code (JAX 0.10.2, at " \
           "jax/_src/" in result.message
    (fault,) = result.tool_faults
    assert fault["tool"] == "the TPU interpreter" and fault["version"] == "JAX 0.10.2"
    assert "ReshapeTransform" in fault["known"] or "reshaped" in fault["known"]
    assert any(w.startswith("tool fault: the TPU interpreter crashed") for w in result.warnings)
    assert result.stages["correct"]["tpu_interpreter"].startswith("failed: ")
