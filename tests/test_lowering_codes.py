"""The rule codes of the judge's lowering verdicts (evaluator/judge/lowering.py): decided by
where JAX raised, never by the message's words (a kernel's own names can land in a message);
and the memory estimate's failures, recorded but deciding nothing, except a bug of jaxbench's
own code, which propagates."""

import os

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl

from jaxbench.contract import Finding, Rule, Stage, Status
from jaxbench.evaluator.judge import exporting, lowering, tool_faults

JAX_SRC = os.path.join(os.path.dirname(jax.__file__), "_src")
JAXBENCH = os.path.dirname(os.path.dirname(os.path.abspath(tool_faults.__file__)))


def _body(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2


def _kernel(block, compiler_params=None):
    def kernel(x):
        return pl.pallas_call(_body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(x.shape[0] // block[0],),
                              in_specs=[pl.BlockSpec(block, lambda i: (i, 0))],
                              out_specs=pl.BlockSpec(block, lambda i: (i, 0)),
                              compiler_params=compiler_params)(x)
    return kernel


def _lowering_error(kernel, platform, target):
    spec = jax.ShapeDtypeStruct((28, 100), jnp.float32)
    closed = jax.make_jaxpr(kernel)(spec)
    try:
        with tool_faults.watch():
            exporting.export(closed, [spec], platform, target=target)
    except Exception as exc:  # noqa: BLE001
        return exc
    raise AssertionError("lowered")


def _raised(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001
        return exc
    raise AssertionError("did not raise")


def _compiled(path, source):
    """Functions whose code lives, as far as tracebacks tell, at ``path``."""
    import linecache

    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    namespace: dict = {}
    exec(compile(source, path, "exec"), namespace)  # noqa: S102 - the test's own stand-in
    return namespace


def test_a_block_spec_pallas_refuses_for_tpu_is_block_shape():
    exc = _lowering_error(_kernel((7, 100)), "tpu", "tpu")  # 7 rows: not a multiple of 8
    assert lowering.lowering_rule(exc) is Rule.BLOCK_SHAPE
    failure = lowering._lowering_failure(exc, "tpu", "small", "small", "")
    assert (failure.status, failure.stage, failure.rule) == \
        (Status.COMPILE_ERROR, Stage.LOWER, Rule.BLOCK_SHAPE)
    assert failure.message.startswith("lowering for tpu: ValueError: ")


def test_a_refusal_of_pallas_triton_lowering_is_a_triton_rule():
    from jax.experimental.pallas import triton as plgpu

    exc = _lowering_error(_kernel((7, 100), plgpu.CompilerParams(num_warps=4)), "cuda", "gpu")
    assert lowering.lowering_rule(exc) is Rule.TRITON_RULE


def test_block_shape_words_raised_elsewhere_are_not_block_shape():
    words = ("Block spec for x has block shape (7, 100): The Pallas TPU lowering currently "
             "requires that the last two dimensions of your block shape are divisible by 8 "
             "and 128")
    # raised by the test's own code (where a kernel's text could come from)
    assert lowering.lowering_rule(ValueError(words)) is Rule.LOWERING
    assert lowering.lowering_rule(_raised(lambda: (_ for _ in ()).throw(ValueError(words)))) \
        is Rule.LOWERING
    # raised inside JAX, by a function that is not one of its BlockSpec checks (and by one
    # named like them in another file)
    source = (f"def elsewhere():\n    raise ValueError({words!r})\n"
              f"def _check_block_mappings():\n    raise ValueError({words!r})\n")
    fake = _compiled(os.path.join(JAX_SRC, "pallas", "mosaic", "jaxbench_synthetic.py"), source)
    for name in ("elsewhere", "_check_block_mappings"):
        exc = _raised(fake[name])
        assert tool_faults.jax_frame(exc)[0] == "jax/_src/pallas/mosaic/jaxbench_synthetic.py"
        assert lowering.lowering_rule(exc) is Rule.LOWERING
        failure = lowering._lowering_failure(exc, "tpu", "small", "small", "")
        assert failure.status == Status.COMPILE_ERROR and failure.rule is Rule.LOWERING


def test_a_budget_problem_before_a_lowering_error_decides_its_code():
    exc = _lowering_error(_kernel((7, 100)), "tpu", "tpu")
    problem = Finding("memory budget at size 'small', pallas_call #0: needs 200 MiB", Rule.VMEM_BUDGET)
    failure = lowering._lowering_failure(exc, "tpu", "small", "small", problem)
    assert failure.rule is Rule.VMEM_BUDGET
    assert failure.message.startswith(problem + "; lowering for tpu: ")


def test_the_jaxpr_rules_carry_their_codes():
    def callback_kernel(x):
        y = jax.pure_callback(lambda a: a, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        return _kernel((8, 100))(y)

    spec = jax.ShapeDtypeStruct((32, 100), jnp.float32)
    problem = lowering.jaxpr_problem(exporting.scan(jax.make_jaxpr(callback_kernel)(spec)))
    assert isinstance(problem, Finding) and problem.rule is Rule.HOST_CALLBACK
    assert problem.startswith("host callback (")
    assert lowering.jaxpr_problem(exporting.scan(jax.make_jaxpr(_kernel((8, 100)))(spec))) is None
    with pytest.raises(Exception) as info:
        lowering.jaxpr_rules(jax.make_jaxpr(lambda x: x * 2)(spec), "at size 'full': ",
                             Stage.LOWER)
    failure = info.value
    assert (failure.status, failure.stage, failure.rule) == \
        (Status.NO_PALLAS, Stage.LOWER, Rule.NO_KERNEL)
    assert failure.message == ("at size 'full': no pallas_call in the traced kernel: the hot "
                               "path must be Pallas")


def _estimate(monkeypatch, fn):
    from jaxbench.evaluator.judge import memory_rules

    monkeypatch.setattr(memory_rules, "tpu_vmem", fn)
    spec = jax.ShapeDtypeStruct((32, 100), jnp.float32)
    lowered = lowering.Lowered(traces={"small": jax.make_jaxpr(_kernel((8, 100)))(spec)})
    lowering._estimates(lowered, ["small"], "tpu", "TPU v6 lite", "NVIDIA H200",
                        lambda _eqn: "")
    return lowered


def test_a_failing_memory_estimate_decides_nothing_but_is_recorded(monkeypatch):
    fake = _compiled(os.path.join(JAX_SRC, "pallas", "jaxbench_synthetic_estimate.py"),
                     "def crash(*_args):\n    return {}['grid']\n")
    lowered = _estimate(monkeypatch, fake["crash"])
    assert lowered.budget_problem == "" and lowered.budget_rule is None
    [fault] = lowered.tool_faults
    assert fault["tool"] == "the judge's memory estimate"
    assert fault["error"] == "KeyError: 'grid'"
    assert fault["frame"] == "jax/_src/pallas/jaxbench_synthetic_estimate.py:2 in crash"
    assert set(fault) == {"tool", "error", "frame", "version", "known", "text"}
    assert "decides nothing" in fault["text"]


@pytest.mark.parametrize("line", ["from jaxbench.no_such_module import x",
                                  "return no_such_name", "return jax_module.no_such_attribute"])
def test_a_bug_of_jaxbenchs_own_code_in_the_estimate_propagates(monkeypatch, line):
    fake = _compiled(os.path.join(JAXBENCH, "judge", "jaxbench_synthetic_bug.py"),
                     f"import os as jax_module\ndef broken(*_args):\n    {line}\n")
    with pytest.raises((ImportError, NameError, AttributeError)):
        _estimate(monkeypatch, fake["broken"])


def test_a_budget_the_estimate_finds_carries_its_code(monkeypatch):
    lowered = _estimate(monkeypatch, lambda *_a: (Finding("needs 300 MiB", Rule.VMEM_BUDGET), {}))
    assert lowered.budget_problem == "memory budget at size 'small', pallas_call #0: needs 300 MiB"
    assert lowered.budget_rule is Rule.VMEM_BUDGET and lowered.budget_problem.rule is Rule.VMEM_BUDGET
