"""The documentation pack is proven at the installed JAX: every code block in it runs.

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
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbench import compat
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
from jaxbench.evaluator.sandbox import exporting, gpu_rules, memory_rules
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
        conflict = gpu_rules.parallel_write_conflict(closed)
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


@pytest.mark.parametrize("task_id, target, feedback, wanted, unwanted", [
    ("47k_matmul_add_swish_tanh_gelu_hardtanh", "tpu", "", {"erf_gelu", "example_matmul"}, {"softmax"}),
    ("47k_matmul_add_swish_tanh_gelu_hardtanh", "gpu", "", {"erf_gelu", "triton_sizes"}, {"vmem_tpu"}),
    ("12p_rmsnorm", "tpu", "", set(), {"erf_gelu", "example_matmul"}),
    ("12p_rmsnorm", "tpu", "needs 40.0 MiB of VMEM on TPU v6 lite", {"vmem_tpu"}, set()),
    ("1p_flash_attention", "tpu", "", {"softmax"}, {"erf_gelu"}),
    ("7p_ragged_paged_attention", "tpu", "", {"prefetch_tpu"}, set()),
    ("12p_rmsnorm", "gpu", "requires that all operations have array arguments and results whose "
     "size is a power of 2", {"edge_masks_gpu"}, set()),
])
def test_targeted_sections(task_id, target, feedback, wanted, unwanted):
    from jaxbench.agents.prompts import reference_source

    task = get_task(task_id)
    names = {s.name for s in select(task, target, reference_source(task), feedback)}
    assert {"hardware", "pallas_api", "rules"} <= names
    assert wanted <= names and not (unwanted & names), names
