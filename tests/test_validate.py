"""The task validator: each check on a tiny task that breaks exactly that rule, the unrepaired
degenerate forms of 26k and 42k, the CLI's exit codes, and every shipped task."""

import json
import math
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from click.testing import CliRunner

from jaxbench.cli import validate as validate_cli
from jaxbench.tasks import get_task, list_tasks
from jaxbench.tasks.spec import Task, custom, normal, randint, uniform, weight
from jaxbench.validation import checks as validate_mod
from jaxbench.validation import validate_task


def tiny(reference, inputs, *, sizes=None, **kw):
    """A hand-made task: ``inputs`` maps dims to specs; small and full sizes are the same."""
    sizes = sizes or {"small": dict(N=64), "full": dict(N=64)}
    return Task(kw.pop("id", "tiny"), reference=reference, sizes=sizes, inputs=inputs,
                flops=lambda d: 1.0, **kw)


def flagged_checks(report):
    return {name for name in validate_mod.CHECKS if not getattr(report, name).ok}


def x_spec(d):
    return [normal("x", (d.N, d.N))]


# --- one check at a time -------------------------------------------------------------------------


def test_a_clean_task_passes_every_check():
    report = validate_task(tiny(lambda x, y: x * y + x, lambda d: [normal("x", (d.N,)),
                                                                 normal("y", (d.N,))]))
    assert not report.flagged, report.flags
    assert [(r.name, r.mode, r.matters) for r in report.inputs] == [("x", "alone", True),
                                                                     ("y", "alone", True)]
    assert 0 < report.tolerance.value <= 1


def test_non_finite_reference_is_flagged():
    report = validate_task(tiny(lambda x: (x * 2).at[0, 0].set(jnp.inf), x_spec))
    assert "finite" in flagged_checks(report)
    assert "NaN/Inf" in report.finite.note
    assert report.flagged


def test_tiny_output_is_flagged_as_constant():
    report = validate_task(tiny(lambda x: x * 1e-3, x_spec))  # |out| < 0.01 everywhere
    assert flagged_checks(report) == {"non_constant"}
    assert "all |out| < 0.01" in report.non_constant.note


def test_output_that_barely_moves_is_flagged_as_constant():
    report = validate_task(tiny(lambda x: 5.0 + x * 1e-3, x_spec))  # no element moves by 0.01
    assert flagged_checks(report) == {"non_constant"}
    assert "no element moves by 0.01" in report.non_constant.note


def test_ignored_input_is_flagged():
    report = validate_task(tiny(lambda x, y: x * 2, lambda d: [normal("x", (d.N,)),
                                                               normal("y", (d.N,))]))
    assert flagged_checks(report) == {"inputs_matter"}
    dead = [r.name for r in report.inputs if not r.matters]
    assert dead == ["y"] and report.inputs[1].change == 0.0
    assert "y does not change the output" in report.inputs_matter.note


def test_ignored_integer_input_is_flagged():
    task = tiny(lambda x, labels: x.sum(), lambda d: [normal("x", (d.N,)),
                                                      randint("labels", (d.N,), 0, 10)])
    report = validate_task(task)
    assert [r.name for r in report.inputs if not r.matters] == ["labels"]


def test_tolerance_the_bf16_reference_cannot_meet_is_flagged():
    report = validate_task(tiny(lambda x: x * 3.1, x_spec, atol=1e-5, rtol=1e-5))
    assert flagged_checks(report) == {"tolerance"}
    assert report.tolerance.value > 1
    assert "bf16 reference fails" in report.tolerance.note


def test_a_tolerance_under_which_zero_passes_is_flagged():
    """Softmax probabilities of ~1/64 under atol 1e-2: an all-zero kernel would pass."""
    loose = validate_task(tiny(lambda x: jax.nn.softmax(x, axis=-1), x_spec))
    assert flagged_checks(loose) == {"tolerance"}
    assert "a zero would pass" in loose.tolerance.note
    tight = validate_task(tiny(lambda x: jax.nn.softmax(x, axis=-1), x_spec, atol=1e-6, rtol=5e-2))
    assert not tight.flagged, tight.flags


def test_float32_tasks_are_calibrated_against_tf32_rounded_inputs():
    """A float32 task's reference on float32 inputs equals the truth; its tolerance is held to
    the reference on TF32-rounded inputs (what XLA's default GPU matmul precision reads)."""
    import numpy as np

    x = np.float32([1 + 2 ** -12, 1 + 2 ** -10, 3.0, -0.1])
    rounded = np.asarray(validate_mod._tf32_inputs([x])[0])
    assert rounded[0] == 1.0 and rounded[1] == x[1] and rounded[2] == 3.0
    assert abs(rounded[3] - x[3]) <= abs(x[3]) * 2 ** -11
    spec = lambda d: [normal("x", (d.N, d.N), dtype="float32"),  # noqa: E731
                      weight("w", (d.N, d.N), d.N, dtype="float32")]
    strict = validate_task(tiny(lambda x, w: x @ w, spec, atol=1e-7, rtol=1e-7))
    assert "tolerance" in flagged_checks(strict) and "TF32" not in strict.tolerance.note
    fair = validate_task(tiny(lambda x, w: x @ w, spec))
    assert not fair.flagged and "TF32-input reference" in fair.tolerance.note
    assert fair.tolerance.value > 0  # the rounding is applied: a float32 reference is exact


def test_an_input_that_moves_the_output_within_tolerance_is_a_warning_only():
    # y moves the output by ~0.005: above the 1e-3 * max|out| threshold, below atol 1e-2
    task = tiny(lambda x, y: x * 0.5 + 2e-3 * y, lambda d: [normal("x", (d.N,)),
                                                            normal("y", (d.N,))])
    report = validate_task(task)
    assert not report.flagged, report.flags
    assert len(report.warnings) == 1 and "ignorable y" in report.warnings[0]


def _bias_before_norm(x, b):
    h = x.astype(jnp.float32) + b  # b is per column; subtracting the column mean cancels it
    return (h - h.mean(axis=0, keepdims=True)).astype(x.dtype)


def _bias_specs(d):
    return [normal("x", (d.N, d.N)), normal("b", (d.N,))]


def test_declared_inert_input_is_reported_not_flagged():
    report = validate_task(tiny(_bias_before_norm, _bias_specs,
                                meta={"inert_inputs": {"b": "cancelled by the mean subtraction"}}))
    assert not report.flagged, report.flags
    assert report.inputs[1].inert and not report.inputs[1].matters
    assert "b:inert" in report.inputs_matter.note
    undeclared = validate_task(tiny(_bias_before_norm, _bias_specs))
    assert flagged_checks(undeclared) == {"inputs_matter"}


def test_wrong_inert_declaration_is_flagged():
    report = validate_task(tiny(lambda x, b: x + b, _bias_specs, meta={"inert_inputs": ["b"]}))
    assert flagged_checks(report) == {"inputs_matter"}
    assert "b is declared inert but changes the output" in report.inputs_matter.note


def _correlated_inputs(key, d):
    kx, ka, kb = jax.random.split(key, 3)
    a = jax.random.randint(ka, (d.N,), 0, 100, jnp.int32)
    b = a + jax.random.randint(kb, (d.N,), 1, 5, jnp.int32)  # b > a always
    return normal("x", (d.N,)).draw(kx), a, b, jnp.arange(d.N, dtype=jnp.int32)


def _correlated_reference(x, a, b, idx):
    return x * jnp.sqrt((b - a - 1).astype(x.dtype)) + x + idx[0]  # NaN when b <= a


def _correlated_specs(d):
    return [normal("x", (d.N,)), custom("a", (d.N,)), custom("b", (d.N,)), custom("idx", (d.N,))]


def test_correlated_custom_inputs_fall_back_to_a_joint_redraw():
    task = tiny(_correlated_reference, _correlated_specs, make_inputs=_correlated_inputs)
    report = validate_task(task)
    assert not report.flagged, report.flags
    modes = {r.name: r.mode for r in report.inputs}
    assert modes == {"x": "alone", "a": "joint", "b": "joint", "idx": "fixed"}
    assert report.inputs[1].group == ["a", "b", "idx"]


def test_declared_validate_together_group():
    task = tiny(_correlated_reference, _correlated_specs, make_inputs=_correlated_inputs,
                meta={"validate_together": [["a", "b"]]})
    report = validate_task(task)
    assert not report.flagged, report.flags
    assert [(r.name, r.mode, r.group) for r in report.inputs[1:3]] == [
        ("a", "joint", ["a", "b"]), ("b", "joint", ["a", "b"])]


def test_declared_group_with_unknown_name_is_an_error():
    task = tiny(_correlated_reference, _correlated_specs, make_inputs=_correlated_inputs,
                meta={"validate_together": [["a", "nope"]]})
    with pytest.raises(ValueError, match="nope"):
        validate_task(task)


def test_too_few_seeds_is_an_error():
    with pytest.raises(ValueError, match="at least 2 seeds"):
        validate_task(tiny(lambda x: x, x_spec), seeds=1)


# --- degenerate KernelBench forms ----------------------------------------------------------------

K26 = "26k_bmm_instancenorm_sum_residualadd_multiply"
K42 = "42k_gemm_max_subtract_gelu"


def unrepaired_26k():
    """KernelBench L2 #28 as translated: instance norm over a (M, N, 1, 1) map returns in_bias."""

    def reference(x, y, w, b, in_weight, in_bias):
        h = jnp.dot(x, w.T, preferred_element_type=jnp.float32) + b
        h = h.astype(x.dtype).astype(jnp.float32)[:, :, None, None]
        mean = h.mean(axis=(2, 3), keepdims=True)
        var = h.var(axis=(2, 3), keepdims=True)
        n = ((h - mean) * jax.lax.rsqrt(var + 1e-5))[:, :, 0, 0]
        n = n * in_weight + in_bias
        return ((n + y) * y).astype(x.dtype)

    return Task(
        K26 + "_unrepaired", reference=reference,
        sizes={"small": dict(M=64, K=128, N=128), "full": dict(M=64, K=128, N=128)},
        inputs=lambda d: [normal("x", (d.M, d.K)), normal("y", (d.M, d.N)),
                          weight("weight", (d.N, d.K), fan_in=d.K),
                          normal("bias", (d.N,), scale=0.1),
                          uniform("in_weight", (d.N,), 0.5, 1.5),
                          normal("in_bias", (d.N,), scale=0.1)],
        flops=lambda d: 2 * d.M * d.K * d.N, atol=4e-2)


def unrepaired_42k():
    """KernelBench L2 #80: the row max minus its mean over a size-1 axis is 0, so gelu(0) = 0."""

    def reference(x, w, b):
        y = (jnp.dot(x, w, preferred_element_type=jnp.float32) + b).astype(x.dtype)
        mx = jnp.max(y, axis=1, keepdims=True)
        return jax.nn.gelu(mx - jnp.mean(mx, axis=1, keepdims=True), approximate=False)

    return Task(
        K42 + "_unrepaired", reference=reference,
        sizes={"small": dict(M=64, K=128, N=128), "full": dict(M=64, K=128, N=128)},
        inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                          normal("bias", (d.N,), scale=0.1)],
        flops=lambda d: 2 * d.M * d.K * d.N)


def test_unrepaired_26k_is_flagged_dead_gemm():
    report = validate_task(unrepaired_26k())
    assert report.flagged
    assert "inputs_matter" in flagged_checks(report)
    dead = {r.name for r in report.inputs if not r.matters}
    assert dead == {"x", "weight", "bias", "in_weight"}


def test_unrepaired_42k_is_flagged_constant():
    report = validate_task(unrepaired_42k())
    assert {"non_constant", "inputs_matter"} <= flagged_checks(report)
    assert "all |out| < 0.01" in report.non_constant.note
    assert {r.name for r in report.inputs if not r.matters} == {"x", "weight", "bias"}


@pytest.mark.parametrize("task_id", [K26, K42])
def test_repaired_26k_and_42k_pass(task_id):
    report = validate_task(get_task(task_id))
    assert not report.flagged, report.flags
    assert all(r.matters and r.mode == "alone" for r in report.inputs)


# --- command line --------------------------------------------------------------------------------


def jaxbench(*args):
    return subprocess.run([sys.executable, "-m", "jaxbench.cli", *args],
                          capture_output=True, text=True, timeout=300)


def test_cli_exit_0_and_json_for_a_clean_task():
    out = jaxbench("validate", "--task", "8p_gemm", "--seeds", "2", "--json")
    assert out.returncode == 0, out.stderr
    (line,) = out.stdout.splitlines()
    row = json.loads(line)
    assert row["task"] == "8p_gemm" and row["flagged"] is False and row["seeds"] == 2
    assert {"finite", "non_constant", "inputs_matter", "tolerance", "inputs"} <= set(row)


@pytest.mark.parametrize("args,words", [
    (["validate", "--task", "nope"], "unknown task 'nope'"),
    (["validate", "--suite", "nope"], "unknown suite 'nope'"),
    (["validate", "--size", "huge"], "huge"),
    (["validate", "--seeds", "1"], "--seeds"),
])
def test_cli_usage_errors_exit_2(args, words):
    out = jaxbench(*args)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], out.stderr


def test_cli_exit_1_and_table_when_a_task_is_flagged(monkeypatch):
    from jaxbench.cli import main

    degenerate = unrepaired_42k()
    monkeypatch.setattr(validate_cli, "_select", lambda suite, ids: [degenerate])
    result = CliRunner().invoke(main, ["validate", "--task", "whatever", "--seeds", "2"])
    assert result.exit_code == 1, result.output
    assert degenerate.id in result.output and "FLAG" in result.output
    assert "1 flagged" in result.output


def test_cli_reports_a_task_whose_reference_raises(monkeypatch):
    from jaxbench.cli import main

    def broken(x):
        raise RuntimeError("reference exploded")

    monkeypatch.setattr(validate_cli, "_select", lambda suite, ids: [tiny(broken, x_spec)])
    result = CliRunner().invoke(main, ["validate", "--seeds", "2", "--json"])
    assert result.exit_code == 1, result.output
    row = json.loads(result.output.splitlines()[0])
    assert row["flagged"] and row["flags"] == [
        "finite: validation raised RuntimeError: reference exploded"]


# --- every shipped task --------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", [t.id for t in list_tasks()])
def test_shipped_task_passes_the_validator(task_id):
    started = time.monotonic()
    report = validate_task(get_task(task_id))
    assert not report.flagged, f"{task_id}: {report.flags}"
    assert math.isfinite(report.tolerance.value) and report.tolerance.value <= 1
    print(f"{task_id}: {time.monotonic() - started:.1f} s")


def test_validate_prints_progress_lines_when_not_a_terminal():
    """In a log (stderr not a terminal) every validated task prints one plain line."""
    proc = subprocess.run([sys.executable, "-m", "jaxbench.cli", "validate", "--task",
                           "l1_relu,l1_tanh", "--seeds", "2"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "validating: 2 jobs" in proc.stderr
    assert "[1/2] l1_relu ok (0 failed so far" in proc.stderr
    assert "[2/2] l1_tanh ok" in proc.stderr and "ETA" in proc.stderr


# --- the task's currency (work) ------------------------------------------------------------------


def _gather_task(work):
    # float32, as l1_embedding_lookup: XLA's CPU cost analysis counts a bf16 gather's converts
    # as FLOPs (0.5 per byte), and a table of a few rows becomes a one-hot product
    return tiny(lambda t, i: t[i], lambda d: [normal("t", (d.V, 384), dtype="float32"),
                                              randint("i", (d.N,), 0, d.V)],
                sizes={"small": dict(N=64, V=600), "full": dict(N=64, V=600)}, work=work)


def test_a_data_movement_task_must_declare_bytes():
    check = validate_mod.check_work(_gather_task("flops"), "small")
    assert not check.ok and "declare work='bytes'" in check.note
    assert validate_mod.check_work(_gather_task("bytes"), "small").ok


def test_a_computing_task_may_not_declare_bytes():
    task = tiny(lambda x: jnp.tanh(x) * x, x_spec, work="bytes")
    check = validate_mod.check_work(task, "small")
    assert not check.ok and "the reference computes" in check.note


def test_the_shipped_data_movement_task_declares_it():
    assert get_task("l1_embedding_lookup").work == "bytes"
    assert validate_mod.check_work(get_task("l1_embedding_lookup"), "small").ok
    assert validate_mod.check_work(get_task("8p_gemm"), "small").ok


def test_an_unknown_currency_is_refused():
    with pytest.raises(ValueError, match="work must be one of"):
        tiny(lambda x: x, x_spec, work="joules")


TINY_OUTPUTS = '''"""my_small_outputs: outputs of about 0.04, checked with the default atol of 0.01."""

from jaxbench.tasks.spec import Task, normal


def reference(x, y):
    return (0.04 + 0.004 * x * y).astype(x.dtype)


TASK = Task(
    "my_small_outputs",
    reference=reference,
    sizes={"small": dict(N=256), "full": dict(N=256)},
    inputs=lambda d: [normal("x", (d.N,)), normal("y", (d.N,))],
    flops=lambda d: 3 * d.N,
)
'''


def test_a_tolerance_large_against_the_typical_output_is_a_warning(tmp_path):
    """atol 0.01 against outputs of about 0.04 passes an error of a quarter of the output
    (a zero still fails, so the tolerance check passes): `validate` says so in a warning and
    suggests a tighter atol; the task is not flagged (exit 0)."""
    (tmp_path / "small_task.py").write_text(TINY_OUTPUTS)
    out = subprocess.run([sys.executable, "-m", "jaxbench.cli", "validate", "--task-file",
                          "small_task.py", "--seeds", "2", "--json"], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    row = json.loads(out.stdout.splitlines()[-1])
    assert row["task"] == "my_small_outputs" and not row["flagged"] and row["tolerance"]["ok"]
    (warning,) = [w for w in row["warnings"] if w.startswith("loose atol")]
    assert "atol 0.01 is 25% of the reference's typical |output| (median 0.04)" in warning, warning
    assert "consider atol 0.001 " in warning  # 5 % of the median, rounded down


def test_a_tolerance_small_against_the_output_gives_no_warning():
    report = validate_task(tiny(lambda x, y: x * y + x, lambda d: [normal("x", (d.N,)),
                                                                 normal("y", (d.N,))]))
    assert not [w for w in report.warnings if w.startswith("loose atol")], report.warnings
    assert validate_mod.loose_atol([[np.full(8, 0.04, np.float32)]], 0.001) is None
    assert "25%" in validate_mod.loose_atol([[np.full(8, 0.04, np.float32)]], 0.01)
