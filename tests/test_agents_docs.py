"""The documentation pack is proven at the installed JAX: every code block in it runs. And the
prompts that carry it: sections chosen from the task and the evaluator's errors only, the
fixed part of every prompt first (for providers' prompt caching), and ``--prompt paper``.

Each ```python block of ``agents/docs/*.md`` is followed by a ``<!-- check ... -->``
comment (stripped from prompts) whose code runs in the block's namespace with these
helpers:

- ``expect(fn, args, want)``: runs ``fn`` in interpret mode (the TPU interpreter with race
  detection for TPU files, Pallas' generic interpreter for GPU files) and compares with
  ``want``; then cross-lowers ``fn`` for the file's target exactly as the evaluator does
  (its export, memory budgets and, on GPU, Triton's rules and the race rule).
- ``interpret(fn, args)``: only the interpret-mode run, for claims about what it shows;
  ``lowers(fn, args)``: only the lowering (args may be ``jax.ShapeDtypeStruct``, for sizes
  too large to interpret).
- ``refused(fn, args, match)``: the same lowering must fail with ``match`` in the message,
  so a claim that JAX refuses something (three pipeline buffers, erfc on TPU, a block over
  the scoped VMEM) stays true or the test says the docs are stale.

What this cannot prove off-chip: Mosaic's layout passes and the TPU/Triton compilers do not
run on a CPU (see the README), so layout advice is limited to forms JAX documents as
supported.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbench import compat
from jaxbench.agents import docs_pack
from jaxbench.agents.docs_pack import (
    CHECK_COMMENT,
    DOCS_DIR,
    SECTIONS,
    docs_checked_versions,
    docs_files,
    docs_versions,
    select,
)
from jaxbench.backends import interpret_mode, tpu_check_params
from jaxbench.evaluator.judge import exporting, memory_rules
from jaxbench.evaluator.judge.gpu import race
from jaxbench.tasks import get_task

BLOCK = re.compile(r"```python\n(.*?)```\n(\s*<!-- check\n(.*?)-->)?", re.DOTALL)


def _target(path: Path) -> str | None:
    stem = path.stem
    if stem.endswith("_tpu") or stem in ("hardware_tpu",):
        return "tpu"
    if stem.endswith("_gpu") or stem in ("triton_sizes",):
        return "gpu"
    return None


def cross_lower(fn, args, target: str) -> None:  # noqa: ANN001
    """The evaluator's lowering for ``target``: export, memory budgets, GPU rules."""
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
    platform = "tpu" if target == "tpu" else "cuda"
    kind = exporting.CROSS_LOWERING_TPU if target == "tpu" else exporting.CROSS_LOWERING_GPU
    with compat.abstract_device(platform, kind):
        closed = jax.make_jaxpr(fn)(*specs)
    assert exporting.scan(closed).kernels >= 1, "the snippet makes no pallas_call"
    exporting.export(closed, specs, platform)
    problem, _ = memory_rules.check(closed, target, "docs", exporting.CROSS_LOWERING_TPU)
    if problem:
        raise ValueError(problem)
    if target == "gpu":
        conflict = race.parallel_write_conflict(closed)
        if conflict:
            raise ValueError(conflict)


def helpers(target: str) -> dict:
    def rand(shape, dtype=jnp.float32, seed=0):  # noqa: ANN001, ANN202
        return jax.random.normal(jax.random.key(seed), shape, jnp.float32).astype(dtype)

    def interpret(fn, args):  # noqa: ANN001, ANN202
        if target == "tpu":
            with interpret_mode("tpu", **tpu_check_params(1)):
                return jax.block_until_ready(fn(*args))
        with interpret_mode("generic"):
            return jax.block_until_ready(fn(*args))

    def expect(fn, args, want, atol=1e-5, rtol=1e-5):  # noqa: ANN001, ANN202
        got = interpret(fn, args)
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
            np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(w, np.float32),
                                       atol=atol, rtol=rtol)
        cross_lower(fn, args, target)

    def refused(fn, args, match):  # noqa: ANN001, ANN202
        with pytest.raises(Exception, match=match):
            cross_lower(fn, args, target)

    def lowers(fn, args):  # noqa: ANN001, ANN202
        cross_lower(fn, args, target)

    return {"rand": rand, "expect": expect, "refused": refused, "interpret": interpret,
            "lowers": lowers, "jax": jax, "jnp": jnp, "np": np}


def snippets() -> list[tuple[str, int, str, str]]:
    found = []
    for path in docs_files():
        for i, match in enumerate(BLOCK.finditer(path.read_text())):
            found.append((path.name, i, match.group(1), match.group(3) or ""))
    return found


def test_every_snippet_has_a_check_and_a_target():
    for path in docs_files():
        text = path.read_text()
        blocks = re.findall(r"```(\w*)\n", text)
        assert all(lang == "python" for lang in blocks[::2]), (path.name, blocks)
        for match in BLOCK.finditer(text):
            assert match.group(3), f"{path.name}: a code block without a <!-- check --> comment"
            assert _target(path), f"{path.name}: code in a file that names no target"
    assert len(snippets()) >= 14


@pytest.mark.parametrize("name, index, code, check", snippets(),
                         ids=[f"{s[0]}#{s[1]}" for s in snippets()])
def test_snippet_runs_and_lowers(name, index, code, check):
    target = _target(DOCS_DIR / name)
    namespace: dict = {}
    exec(compile(code, f"{name}#{index}", "exec"), namespace)  # noqa: S102
    namespace.update(helpers(target))
    exec(compile(check, f"{name}#{index}:check", "exec"), namespace)  # noqa: S102


def test_docs_describe_the_installed_jax():
    """The prose is written for one JAX release; every file's snippets were run on the
    installed release too (this file's snippet tests are that run)."""
    versions = docs_versions()
    assert versions and set(versions.values()) == {"0.10.2"}, versions
    checked = docs_checked_versions()
    assert all(jax.__version__ in v for v in checked.values()), checked
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu
    from jax.experimental.pallas import triton as plgpu

    modules = {"pl": pl, "pltpu": pltpu, "plgpu": plgpu}
    for path in docs_files():
        for alias, name in re.findall(r"\b(pl|pltpu|plgpu)\.([A-Za-z_]\w*)", path.read_text()):
            assert hasattr(modules[alias], name), f"{path.name}: {alias}.{name} is not in jax"


def test_no_advice_the_installed_jax_refuses():
    """Things JAX 0.10 refuses must not be recommended anywhere a model reads."""
    from jaxbench.agents import autocomp

    texts = [CHECK_COMMENT.sub("", p.read_text()) for p in docs_files()]
    texts += list(autocomp.OPTIMIZATION_MENU["tpu"]) + list(autocomp.TRANSLATION_MENU["tpu"])
    for text in texts:
        assert not re.search(r"Buffered\(\s*(buffer_count\s*=\s*)?[3-9]", text), text[:200]
        for match in re.finditer(r"approximate=False", text):
            window = text[max(0, match.start() - 300): match.end() + 300]
            assert re.search(r"not lower|neither|refused", window), window
    gpu_menu = " ".join(autocomp.OPTIMIZATION_MENU["gpu"] + autocomp.TRANSLATION_MENU["gpu"])
    for tpu_only in ("PrefetchScalarGridSpec", "VMEM", "pltpu", "megacore", "'arbitrary'"):
        assert tpu_only not in gpu_menu


@pytest.mark.parametrize("target", ["tpu", "gpu"])
def test_the_elementwise_ops_the_api_section_lists_lower(target):
    """pallas_api.md says these lower on both backends."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plgpu

    x = jnp.ones((16, 256), jnp.float32)
    for op in (jnp.exp, jnp.tanh, jnp.log, jax.nn.sigmoid, jax.nn.softplus, jax.lax.rsqrt):
        def fn(x, op=op):  # noqa: ANN001, ANN202
            params = plgpu.CompilerParams(num_warps=4) if target == "gpu" else None
            return pl.pallas_call(lambda x_ref, o_ref: o_ref.__setitem__(Ellipsis, op(x_ref[...])),
                                  out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                                  compiler_params=params)(x)
        cross_lower(fn, (x,), target)


def test_sections_exist_for_their_targets():
    for section in SECTIONS:
        for target in section.targets:
            assert section.path(target).is_file(), (section.name, target)


@pytest.mark.parametrize("task_id, target, errors, wanted, unwanted", [
    ("47k_matmul_add_swish_tanh_gelu_hardtanh", "tpu", "", {"erf_gelu", "example_matmul"}, {"softmax"}),
    ("47k_matmul_add_swish_tanh_gelu_hardtanh", "gpu", "", {"erf_gelu", "triton_sizes"}, {"vmem_tpu"}),
    ("12p_rmsnorm", "tpu", "", set(), {"erf_gelu", "example_matmul"}),
    ("12p_rmsnorm", "tpu", "needs 40.0 MiB of VMEM on TPU v6 lite", {"vmem_tpu"}, set()),
    ("1p_flash_attention", "tpu", "", {"softmax"}, {"erf_gelu"}),
    ("7p_ragged_paged_attention", "tpu", "", {"prefetch_tpu"}, set()),
    ("12p_rmsnorm", "gpu", "requires that all operations have array arguments and results whose "
     "size is a power of 2", {"edge_masks_gpu"}, set()),
    ("12p_rmsnorm", "tpu", "Not implemented: Unsupported shape cast", {"reshape_tpu"}, set()),
    # the evaluator's note that glue may stay in jnp names reshapes, but no reshape failed
    ("12p_rmsnorm", "tpu", "work outside pallas_call: 100% of the task's FLOPs run in XLA; at most "
     "10% may (glue like reshapes, casts and padding is free)", set(), {"reshape_tpu"}),
])
def test_targeted_sections(task_id, target, errors, wanted, unwanted):
    from jaxbench.agents.prompts import reference_source

    task = get_task(task_id)
    names = {s.name for s in select(task, target, reference_source(task), errors)}
    assert {"hardware", "pallas_api", "rules"} <= names
    assert wanted <= names and not (unwanted & names), names


# -- what chooses the sections: the task and the evaluator's errors, never the harness's words --

def _context(task_id: str = "12p_rmsnorm", target: str = "tpu", docs: bool = True,
             prompt_mode: str | None = None):
    from jaxbench.agents.base import Budget, Context, Journal
    from jaxbench.contract import Settings

    return Context(task=get_task(task_id), method="m",
                   settings=Settings.of(target=target, mode="interpret", size="small", trials=1),
                   docs=docs, model=None, evaluator=None, run=None, budget=Budget(1),
                   pool=None, journal=Journal(), eval_slots=threading.Semaphore(1),
                   prompt_mode=prompt_mode)


WRAPPER = """import jax
from jax.experimental import pallas as pl


def kernel(x, w):
    rows = x.reshape(-1, x.shape[-1])  # a wrapper reshape, outside the kernel
    return pl.pallas_call(_body, out_shape=jax.ShapeDtypeStruct(rows.shape, rows.dtype))(rows, w)
"""


def _shown(ctx, status: str, code: str = WRAPPER, step: str = "s0", **fields) -> str:  # noqa: ANN001, ANN003
    """The feedback a method shows for a candidate judged ``status`` with the result's
    ``fields`` (kept in ``ctx``)."""
    from agent_fakes import verdict

    from jaxbench.agents.base import Candidate
    from jaxbench.agents.prompts import describe_verdict

    result = verdict(status, **fields)
    ctx.candidates.append(Candidate(step, 0, code, result))
    return f"## Your previous attempt\n```python\n{code.rstrip()}\n```\n{describe_verdict(result, code)}"


def test_the_harness_wording_and_the_candidates_code_select_nothing():
    ctx = _context()
    base = set(ctx.prompt().docs)
    memory = {"lower": {"memory": [{"kernel": 0, "size": "small", "vmem_bytes": 2 * 2**20,
                                    "vmem_limit_bytes": 16 * 2**20}]}}
    correct = _shown(ctx, "correct", stage="correct", max_abs_err=1e-6, stages=memory)
    wrong = _shown(ctx, "incorrect", stage="correctness", max_abs_err=0.5,
                   message="max abs error 0.5 at output index (3, 7)", stages=memory, step="s1")
    for feedback in (correct, wrong):
        assert "MiB of VMEM" in feedback and "reshape" in feedback  # trigger words, all the harness's
        prompt = ctx.prompt(feedback, "Make it faster.")
        assert set(prompt.docs) == base, prompt.docs
        assert docs_pack.ERROR_DOCS_TITLE not in prompt
    # a verdict the harness made up (an edit that does not apply) is not the evaluator's word
    synthetic = _shown(ctx, "compile_error", stage="static", synthetic=True,
                       message="the edit does not apply: scoped VMEM limit line not found", step="s2")
    assert set(ctx.prompt(synthetic).docs) == base


def test_an_evaluator_error_selects_its_section_after_the_feedback():
    ctx = _context()
    plain = ctx.prompt()
    assert "vmem_tpu" not in plain.docs
    feedback = _shown(ctx, "compile_error", stage="lower", message=(
        "memory budget at size 'full', pallas_call #0: needs 40.0 MiB of VMEM on "
        "TPU v6 lite, over the 16 MiB scoped limit"))
    prompt = ctx.prompt(feedback, "Fix the problem above.")
    assert "vmem_tpu" in prompt.docs and "vmem_tpu" not in docs_pack.for_task(
        ctx.task, "tpu", ctx.reference)
    assert prompt.index(feedback) < prompt.index(docs_pack.ERROR_DOCS_TITLE) < prompt.index(
        docs_pack.section_text("vmem_tpu", "tpu")[:80])
    assert prompt[:prompt.fixed] == plain[:plain.fixed]  # the fixed prefix does not move
    # a message that quotes the candidate's reshape line names no reshape failure ...
    quoting = _shown(ctx, "compile_error", stage="lower", message=(
        "ValueError: grid (4,) does not match the inputs at <kernel>:6: "
        "rows = x.reshape(-1, x.shape[-1])  # a wrapper reshape, outside the kernel"), step="s1")
    assert "reshape_tpu" not in ctx.prompt(quoting).docs
    # ... Mosaic refusing a shape cast does
    refused = _shown(ctx, "compile_error", stage="lower",
                     message="Mosaic: Not implemented: Unsupported shape cast", step="s2")
    assert "reshape_tpu" in ctx.prompt(refused).docs
    # a method may name the errors itself
    assert "vmem_tpu" in ctx.prompt("## Anything", errors=["RESOURCE_EXHAUSTED: scoped vmem"]).docs
    assert "vmem_tpu" not in ctx.prompt(feedback, errors=[]).docs


def test_evaluator_text_drops_the_candidates_quoted_lines():
    code = "def kernel(x):\n    y = x.reshape(5, 7)\n    return y\n"
    text = docs_pack.evaluator_text("Triton rule power_of_two: tensor f32[5,7] at <kernel>:2: "
                                    "y = x.reshape(5, 7)", code)
    assert "reshape" not in text and "power_of_two" in text


# -- the fixed part of every prompt comes first (providers cache the longest common prefix) ----

@pytest.mark.parametrize("prompt_mode", ["default", "paper"])
def test_prompts_of_a_task_share_a_long_fixed_prefix(tmp_path, prompt_mode):
    from agent_fakes import FakeEvaluator, events_of, kernels, script

    from jaxbench.agents import get_method, optimize
    from jaxbench.llm import get_model
    from jaxbench.runs import RunDir

    run = RunDir.open(tmp_path / "run", {"prompt": prompt_mode})
    model = get_model(script(tmp_path / "s", *kernels("tpu", 4)))
    optimize(["8p_gemm"], get_method("iterative", chains=1), model, run, budget=3, target="tpu",
             size="small", mode="interpret", trials=1, docs=True, workers=1,
             evaluator=FakeEvaluator(correct_every=3))
    calls = {c["step"]: c for c in events_of(run, "llm_call")}
    prompts = [calls[f"chain0/turn{i}"]["prompt"] for i in range(3)]
    ctx = _context("8p_gemm", prompt_mode=prompt_mode)
    head = ctx.statement + "\n\n" + docs_pack.render(docs_pack.for_task(ctx.task, "tpu", ctx.reference),
                                                     "tpu")
    assert ctx.prompt().fixed == len(head) and len(ctx.statement) > 2000
    assert ("## Profile" in head) == (prompt_mode == "default")
    for prompt in prompts:  # the task statement and the task's docs, then the step's own part
        assert prompt.startswith(head + "\n\n")
    assert prompts[1][len(head):].startswith("\n\n## ")  # a method section
    assert all(c.get("cached_input_tokens", "absent") is None for c in calls.values())  # scripted


# -- --prompt paper: the paper's no-docs and +docs arms ------------------------------------------

def test_paper_statement_is_the_task_alone():
    from jaxbench.agents.prompts import PROMPT_MODES, task_statement

    task = get_task("47k_matmul_add_swish_tanh_gelu_hardtanh")
    default, paper = task_statement(task, "tpu"), task_statement(task, "tpu", prompt_mode="paper")
    assert "## Profile" in default and "-bound**" in default and "`jax.lax.erf` lowers" in default
    for advice in ("## Profile", "-bound", "roofline", "ridge point", "FLOP/byte", "jax.lax.erf",
                   "exact GELU", "Memory-bound", "Compute-bound"):
        assert advice not in paper, advice
    for kept in ("def reference(", "## Shapes", "## Kernel contract", 'TARGET = "tpu"',
                 "Size full (the benchmark times this size)", "atol="):
        assert kept in paper, kept
    assert "compiler_params=plgpu.CompilerParams(" in task_statement(task, "gpu", prompt_mode="paper")
    assert PROMPT_MODES == ("default", "paper")
    with pytest.raises(ValueError, match="prompt mode 'kernelbench'"):
        task_statement(task, "tpu", prompt_mode="kernelbench")


@pytest.mark.parametrize("target", ["tpu", "gpu"])
def test_paper_arms_differ_only_by_the_docs_block(target):
    task_id = "47k_matmul_add_swish_tanh_gelu_hardtanh"
    no_docs = _context(task_id, target, docs=False, prompt_mode="paper").prompt()
    with_docs = _context(task_id, target, docs=True, prompt_mode="paper").prompt()
    assert no_docs.docs == () and "Reference documentation" not in no_docs
    assert "## Profile" not in no_docs and "-bound" not in no_docs
    for section in SECTIONS:  # not a line of any docs section
        if target in section.targets:
            assert docs_pack.section_text(section.name, target)[:120] not in no_docs, section.name
    assert "## Profile" not in with_docs
    assert "# Reference documentation\n" in with_docs and {"hardware", "pallas_api", "erf_gelu"} <= set(
        with_docs.docs)
    block = "\n\n" + with_docs[no_docs.fixed + 2:with_docs.fixed]
    assert block.startswith("\n\n# Reference documentation") and with_docs.replace(block, "", 1) == no_docs
    default = _context(task_id, target, docs=False).prompt()  # default mode: unchanged
    assert "## Profile" in default and default.startswith(_context(task_id, target, docs=False).statement)


def _optimize_cli(tmp_path, monkeypatch, *args: str):  # noqa: ANN202
    """`jaxbench optimize` with a scripted model and the instant evaluator."""
    from agent_fakes import FakeEvaluator, kernels, script
    from click.testing import CliRunner

    import jaxbench.agents as agents
    from jaxbench.cli import main

    real = agents.optimize
    monkeypatch.setattr(agents, "optimize", lambda *a, **kw: real(*a, **{**kw, "evaluator": FakeEvaluator()}))
    spec = script(tmp_path / "s", *kernels("tpu", 2))
    return CliRunner().invoke(main, ["optimize", "--method", "best_of_n", "--model", spec, "--tasks",
                                     "12p_rmsnorm", "--budget", "1", "--mode", "interpret", "--trials",
                                     "1", "--no-cache", *args])


@pytest.mark.parametrize("mode, docs", [("paper", False), ("paper", True), ("default", False)])
def test_cli_prompt_mode_reaches_the_prompts_and_the_manifest(tmp_path, monkeypatch, mode, docs):
    import json

    from agent_fakes import events_of

    out = tmp_path / "run"
    args = ["--out", str(out), *(["--docs"] if docs else []),
            *(["--prompt", mode] if mode != "default" else [])]
    result = _optimize_cli(tmp_path, monkeypatch, *args)
    assert result.exit_code == 0, result.output
    config = json.loads((out / "manifest.json").read_text())["config"]
    assert config["prompt"] == mode and config["docs"] is docs
    (call,) = events_of(out, "llm_call")
    assert ("## Profile" in call["prompt"]) == (mode == "default")
    assert ("Reference documentation" in call["prompt"]) == docs and bool(call["docs"]) == docs
    assert "cached_input_tokens" in call


def test_cli_unknown_prompt_mode_is_one_line(tmp_path, monkeypatch):
    result = _optimize_cli(tmp_path, monkeypatch, "--prompt", "kernelbench", "--out", str(tmp_path / "run"))
    assert result.exit_code == 2
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "kernelbench" in lines[0] and "paper" in lines[0], result.stderr
    assert not (tmp_path / "run").exists()


def test_the_evaluators_own_failures_choose_docs_by_rule_code_not_by_their_words():
    """A failure of one of the evaluator's checks picks sections by its code; its message's
    words count only for a compiler's or JAX's own diagnosis (a kernel's text can land in a
    message)."""
    from jaxbench.contract import Rule

    decoy = "Unsupported shape cast; VMEM; power of 2; divisible by"
    chosen = [s.name for s in docs_pack.for_errors("tpu", [(Rule.VMEM_BUDGET, decoy)])]
    assert chosen == ["vmem_tpu"]
    assert docs_pack.for_errors("tpu", [(Rule.EXPORT_CONTRACT, decoy)]) == []
    assert docs_pack.for_errors("tpu", [(Rule.TRACE_ERROR, "no such thing")]) == []
    by_words = [s.name for s in docs_pack.for_errors("tpu", [(Rule.LOWERING,
                                                            "Mosaic: Unsupported shape cast")])]
    assert by_words == ["reshape_tpu"]
    assert [s.name for s in docs_pack.for_errors("gpu", [(Rule.TRITON_RULE, "")])] == [
        "edge_masks_gpu"]
