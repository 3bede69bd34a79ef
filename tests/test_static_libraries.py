"""What a kernel may import from an allowed library's private tree (issue 48.3), decided from
the installed package's layout: every module of a folder of its kernel tree that holds a
Pallas kernel. Another private module of an allowed library is a policy refusal
(`compile_error`, `private_import`), never `rejected`; escape-capable imports stay `rejected`."""

from __future__ import annotations

import sys

import pytest
from optional_extras import require

from jaxbench.contract import StageFailure
from jaxbench.evaluator.parent import static

KERNEL = "\n\ndef kernel(x):\n    return x\n"


def _verdict(source: str) -> tuple[str, str] | None:
    try:
        static.check_source(source + KERNEL)
    except StageFailure as failure:
        return str(failure.status), str(failure.rule)
    return None


@pytest.fixture
def fakelib(tmp_path, monkeypatch):
    """An installed library ``fakelib`` with a kernel tree ``fakelib/_src/ops``."""
    ops = tmp_path / "fakelib" / "_src" / "ops"
    (ops / "gemm").mkdir(parents=True)
    (ops / "experimental" / "tpu" / "splash").mkdir(parents=True)
    (ops / "plain").mkdir()
    (tmp_path / "fakelib" / "__init__.py").write_text("")
    (ops / "gemm" / "pallas_tpu.py").write_text("from jax.experimental import pallas as pl\n")
    (ops / "gemm" / "base.py").write_text("import dataclasses\nimport types\n")
    (ops / "gemm" / "bench.py").write_text("import jax\n")
    (ops / "gemm" / "pallas_tpu_test.py").write_text("import jax\n")
    (ops / "gemm" / "launcher.py").write_text("import subprocess\n")
    (ops / "experimental" / "tpu" / "splash" / "kernel.py").write_text(
        "import jax.experimental.pallas.tpu as pltpu\n")
    (ops / "plain" / "xla.py").write_text("import jax.numpy as jnp\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(static.LIBRARY_KERNEL_TREES, "fakelib", ("fakelib", "_src", "ops"))
    static._library_layout.cache_clear()
    yield "fakelib"
    static._library_layout.cache_clear()
    sys.modules.pop("fakelib", None)


def test_the_kernel_modules_come_from_the_layout(fakelib):
    found = static.library_kernel_modules(fakelib)
    assert found == {
        "fakelib._src.ops.gemm", "fakelib._src.ops.gemm.pallas_tpu", "fakelib._src.ops.gemm.base",
        "fakelib._src.ops.experimental", "fakelib._src.ops.experimental.tpu",
        "fakelib._src.ops.experimental.tpu.splash",
        "fakelib._src.ops.experimental.tpu.splash.kernel"}
    # tests, benchmarks, a module importing what kernels may not, a folder without Pallas
    for name in ("gemm.bench", "gemm.pallas_tpu_test", "gemm.launcher", "plain", "plain.xla"):
        assert f"fakelib._src.ops.{name}" not in found
    assert "fakelib._src.ops.gemm.launcher" in static.library_modules(fakelib)
    assert "fakelib" not in sys.modules  # located, never imported


def test_an_uninstalled_library_has_no_kernel_modules(monkeypatch):
    monkeypatch.setitem(static.LIBRARY_KERNEL_TREES, "nolib_xyz", ("nolib_xyz", "_src", "ops"))
    static._library_layout.cache_clear()
    try:
        assert static.library_kernel_modules("nolib_xyz") == frozenset()
    finally:
        static._library_layout.cache_clear()


@pytest.mark.parametrize("source", [
    "from tokamax._src.ops.experimental.tpu.splash_attention import splash_attention_kernel",
    "from tokamax._src.ops.experimental.tpu.splash_attention import splash_attention_mask as m",
    "from tokamax._src.ops.experimental.tpu.splash_attention.splash_attention_kernel import "
    "make_splash_mha",
    "import tokamax._src.ops.ragged_dot.pallas_triton as rd",
    "from tokamax._src.ops.ragged_dot import pallas_mosaic_tpu",
    "from tokamax._src.ops.normalization import pallas_triton",
])
def test_tokamax_kernel_modules_may_be_imported(source):
    require("tokamax")
    assert _verdict(source) is None


@pytest.mark.parametrize("source", [
    "from tokamax._src import utils",
    "import tokamax._src.ops.op",
    "from tokamax._src.ops.attention import pallas_triton_test",
    "from tokamax._src.ops.experimental.tpu.splash_attention import splash_attention_test_utils",
])
def test_other_private_tokamax_modules_are_a_policy_refusal(source):
    require("tokamax")
    assert _verdict(source) == ("compile_error", "private_import")


@pytest.mark.parametrize("source", [
    "from jax._src import core",
    "import jax._src.pallas.core",
    "import jax.interpreters.mlir",
    "import subprocess",
    "import ctypes",
    "from tokamax._src.ops.ragged_dot.pallas_triton import os",
    "from tokamax._src.ops.ragged_dot.pallas_triton import __builtins__",
])
def test_escape_capable_imports_stay_rejected(source):
    if source.startswith("from tokamax"):  # judged from the installed package's layout
        require("tokamax")
    assert _verdict(source) == ("rejected", "static_policy")


@pytest.mark.parametrize("source,verdict", [
    # what a kernel module imported for itself is judged as if the kernel imported it
    ("from tokamax._src.ops.ragged_dot.pallas_mosaic_tpu import types",
     ("rejected", "static_policy")),
    ("from tokamax._src.ops.ragged_dot.pallas_mosaic_tpu import quantization",
     ("compile_error", "private_import")),
    ("from tokamax._src.ops.ragged_dot.pallas_mosaic_tpu import pltpu", None),
    ("from tokamax._src.ops.ragged_dot.pallas_mosaic_tpu import backend", None),
])
def test_names_a_kernel_module_imported_are_judged_as_direct_imports(source, verdict):
    require("tokamax")
    assert _verdict(source) == verdict


def test_a_reexport_is_read_from_the_layout(fakelib, tmp_path):
    kernel = tmp_path / "fakelib" / "_src" / "ops" / "gemm" / "pallas_tpu.py"
    kernel.write_text("import types\nfrom jax.experimental import pallas as pl\n"
                      "from . import base as helpers\n")
    static._library_layout.cache_clear()
    assert static.reexported_module("fakelib._src.ops.gemm.pallas_tpu", "types") == "types"
    assert static.reexported_module("fakelib._src.ops.gemm.pallas_tpu", "pl") == \
        "jax.experimental.pallas"
    assert static.reexported_module("fakelib._src.ops.gemm.pallas_tpu", "helpers") == \
        "fakelib._src.ops.gemm.base"
    assert static.reexported_module("fakelib._src.ops.gemm.pallas_tpu", "matmul") is None
