"""Triton's own compiler on the CPU (evaluator/judge/gpu/triton_compile.py, the `triton` extra):
exported Pallas Triton kernels compiled for the chip's sm_XX without a GPU; compiler errors and
shared-memory needs over the chip's limit are compile errors."""

from pathlib import Path

import pytest

pytest.importorskip("triton", reason="the optional `triton` extra is not installed "
                                     "(pip install -e '.[triton]')")

from jaxbench.evaluator.judge.gpu import triton_compile  # noqa: E402

ROOT = Path(__file__).parent


def _ttir(path: Path, task_id: str, size: str = "small") -> list[dict]:
    from jaxbench.evaluator.inprocess import export_trusted

    _, exported = export_trusted(path, task_id, size, "gpu")
    return triton_compile.kernels_ttir(exported.mlir_module())


def test_a_seed_compiles_to_a_cubin_for_sm90():
    kernels = _ttir(ROOT.parent / "src/jaxbench/tasks/pallasbench/l1_relu/seed_gpu.py", "l1_relu")
    assert len(kernels) == 1 and "tt.func" in kernels[0]["ttir"]
    assert kernels[0]["num_warps"] == 4 and kernels[0]["num_stages"] == 1
    report = triton_compile.compile_all(kernels)
    assert report["problem"] == "" and report["capability"] == 90
    assert report["kernels"][0]["ok"] and report["kernels"][0]["shared_bytes"] == 0


def test_shared_memory_over_the_block_limit_is_found_by_the_compiler():
    """The calibration kernel's (64, 512) x (512, 256) float32 dot: Triton itself allocates
    ~576 KiB of shared memory for it (the rule's estimate said ~640 KiB)."""
    report = triton_compile.compile_all(_ttir(ROOT / "calibration/gpu_whole_row_tensor.py",
                                              "8p_gemm"))
    assert report["kernels"][0]["ok"]
    assert report["kernels"][0]["shared_bytes"] > triton_compile.SHARED_LIMIT[90]
    assert "shared memory, over the block limit" in report["problem"]


def test_compiler_errors_are_reported_not_raised():
    broken = [{"name": "broken", "ttir": "module {\n  tt.func public @broken() {\n"
                                        "    %0 = tt.not_an_op : i32\n  }\n}\n"}]
    report = triton_compile.compile_all(broken)
    assert not report["kernels"][0]["ok"] and report["kernels"][0]["error"]
    # IR Triton cannot parse is set aside as not checked by it: the evaluator hands over only
    # IR that jaxlib's own Triton dialect verified (kernels_ttir), so there it is a skew
    assert triton_compile.UNPARSABLE in report["kernels"][0]["error"]
    assert report["not_checked"] == ["broken"] and report["problem"] == ""


def test_the_evaluator_records_the_compile(evaluator, monkeypatch):
    """The trusted runner reads the Triton IR from the module it runs; the parent only hands
    it to the compiler and never deserializes the export itself."""
    from jaxbench import compat

    def refuse(*_a, **_k):
        raise AssertionError("the parent deserialized an export")

    monkeypatch.setattr(compat, "deserialize", refuse)
    monkeypatch.setenv("JAXBENCH_TRITON_COMPILE", "1")
    result = evaluator.evaluate(ROOT.parent / "src/jaxbench/tasks/pallasbench/l1_relu/seed_gpu.py",
                                "l1_relu", trials=1)
    assert result.status == "correct", result.message
    assert result.triton_compile["kernels"][0]["ok"]
    assert "Triton's compiler ran for sm_80" in result.lowering_fidelity  # PallasBench: A100
    assert result.triton_compile["capability"] == 80


def test_a_kernel_that_fits_hopper_but_not_an_a100(seven_stage_matmul):
    """l1_matmul's seed with num_stages=7: Triton allocates 196,608 bytes of shared memory for
    it, over an A100's 166,912 per block (sm_80), within Hopper's 232,448 (sm_90)."""
    kernels = _ttir(seven_stage_matmul, "l1_matmul")
    a100 = triton_compile.compile_all(kernels, 80)
    assert a100["kernels"][0]["shared_bytes"] == 196_608
    assert "for sm_80 needing 196,608 bytes of shared memory" in a100["problem"]
    assert triton_compile.compile_all(kernels, 90)["problem"] == ""


@pytest.fixture
def broken_triton(monkeypatch, tmp_path):
    """Triton's compile worker started by an interpreter in which `import triton` fails, as a
    broken install would (the worker runs as a script under `python -I`, so it is swapped at
    the command line)."""
    import subprocess
    import sys

    shim = tmp_path / "python-without-triton"
    shim.write_text("#!/bin/sh\n"  # $1 is -I, $2 the worker script, $3 the capability
                    f"exec {sys.executable} -I -c 'import runpy, sys; sys.modules[\"triton\"] = "
                    "None; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], "
                    "run_name=\"__main__\")' \"$2\" \"$3\"\n")
    shim.chmod(0o755)
    real = subprocess.run

    def run(argv, *args, **kwargs):
        if list(argv[:3]) == [sys.executable, "-I", triton_compile.__file__]:
            argv = [str(shim), *argv[1:]]
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(triton_compile.subprocess, "run", run)


def test_a_broken_triton_is_the_environments_fault_not_the_kernels(evaluator, broken_triton,
                                                                    monkeypatch):
    with pytest.raises(triton_compile.TritonUnusable, match="triton does not import"):
        triton_compile.compile_all(_ttir(ROOT.parent / "src/jaxbench/tasks/pallasbench/l1_relu/"
                                         "seed_gpu.py", "l1_relu"))
    monkeypatch.setenv("JAXBENCH_TRITON_COMPILE", "1")
    result = evaluator.evaluate(ROOT.parent / "src/jaxbench/tasks/pallasbench/l1_relu/seed_gpu.py",
                                "l1_relu", trials=1)
    assert result.status == "correct", result.message
    assert result.triton_compile.startswith("skipped: triton does not import")
    assert any("an environment problem, not the kernel's" in w for w in result.warnings)
    assert "Triton's compiler was unusable here" in result.lowering_fidelity
    from jaxbench.evaluator.doctor import triton_compiler

    assert triton_compiler().startswith("unusable: triton does not import")


# A load with an eviction policy in the two forms jaxlib writes it: 0.10/0.11 and 0.12.
_EVICTING = """module {
  tt.func public @evict(%arg0: !tt.ptr<f32>, %arg1: !tt.ptr<f32>) {
    %0 = tt.splat %arg0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %1 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %2 = tt.addptr %0, %1 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %3 = tt.load %2 LOAD : tensor<128x!tt.ptr<f32>>
    %4 = tt.splat %arg1 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %5 = tt.addptr %4, %1 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    tt.store %5, %3 : tensor<128x!tt.ptr<f32>>
    tt.return
  }
}
"""
_LOAD_FORMS = {"0.10.2": "evictionPolicy = evict_last",
               "0.12.0": "{cachePolicy = #tt.cache_policy<cache_modifier = none, "
                         "eviction_policy = evict_last>}"}


def test_the_installed_triton_reads_exactly_the_ir_forms_its_table_says():
    """MATCHING_TRITON, checked against the installed Triton: it parses the IR of the jaxlibs
    it is listed for, and IR of another jaxlib it cannot read is `not_checked`, not a failure."""
    from importlib import metadata

    version = metadata.version("triton")
    kernels = [{"name": jaxlib, "ttir": _EVICTING.replace("LOAD", load)}
               for jaxlib, load in _LOAD_FORMS.items()]
    report = triton_compile.compile_all(kernels)
    readable = {k["name"] for k in report["kernels"] if k["ok"]}
    assert readable == {j for j in _LOAD_FORMS if not triton_compile.skew(j, version)}, version
    assert readable, f"Triton {version} reads neither form: add it to MATCHING_TRITON"
    assert set(report["not_checked"]) == set(_LOAD_FORMS) - readable
    assert report["problem"] == ""


def test_the_matching_triton_table():
    assert triton_compile.matching_triton("0.10.2") == ">=3.4,<3.9"
    assert triton_compile.matching_triton("0.11.2") == ">=3.4,<3.9"
    assert triton_compile.matching_triton("0.12.0.1") == ">=3.9"
    assert triton_compile.matching_triton("0.9.0") is None
    assert triton_compile.skew("0.10.2", "3.8.0") == ""
    assert triton_compile.skew("0.12.0.1", "3.9.0") == ""
    assert "install 'triton>=3.4,<3.9'" in triton_compile.skew("0.10.2", "3.9.0")
    assert "install 'triton>=3.9'" in triton_compile.skew("0.12.0.1", "3.8.0")


@pytest.mark.parametrize("name,task_id", [("gpu_rms_norm_l1.py", "l1_rmsnorm"),
                                          ("gpu_layer_norm_l1.py", "l1_layernorm")])
def test_jax_own_gpu_norms_are_checked_by_the_matching_triton(evaluator, monkeypatch, name,
                                                               task_id):
    """JAX's own GPU rms_norm and layer_norm (their loads carry an eviction policy): with the
    Triton the extra installs for this jaxlib, its compiler checks them and they are
    `correct`; with a mismatched Triton they are still `correct`, the kernel named as not
    checked and the warning saying which Triton to install."""
    monkeypatch.setenv("JAXBENCH_TRITON_COMPILE", "1")
    result = evaluator.evaluate(ROOT / "legit/jax_ops" / name, task_id, trials=1)
    assert result.status == "correct", result.message
    compiled = result.triton_compile
    from importlib import metadata

    skew = triton_compile.skew(triton_compile.jaxlib_version(), metadata.version("triton"))
    if not skew:
        assert compiled["not_checked"] == () and all(k["ok"] for k in compiled["kernels"])
    else:
        assert compiled["not_checked"], compiled
        assert any(skew in w for w in result.warnings), result.warnings


def test_the_doctor_names_a_skewed_triton_and_its_fix(monkeypatch):
    from click.testing import CliRunner

    from jaxbench.cli import main
    from jaxbench.evaluator import doctor

    fix = triton_compile.skew("0.10.2", "3.9.0")
    monkeypatch.setenv("JAXBENCH_TRITON_COMPILE", "1")
    monkeypatch.setattr(triton_compile, "skew", lambda jaxlib, triton: fix)
    assert doctor.triton_compiler() == f"skew: {fix}; kernels it cannot read are not checked by it"
    monkeypatch.setattr("jaxbench.evaluator.diagnose", lambda: {
        "versions": {"python": "3", "jax": "j", "jaxlib": "l", "system": "s"},
        "backends": {"this process": ["cpu:0 cpu"], "accelerator": "none"},
        "pallas_backends": {}, "isolation": "i", "seal": "seccomp",
        "host_limits": {"all": "none missing"},
        "cross_lowering": {},
        "peaks": {"device_kind": "cpu", "peak_bf16_flops": None, "note": "n"},
        "triton_compiler": doctor.triton_compiler(), "profiler": "p", "compile_cache": "c"})
    shown = " ".join(CliRunner().invoke(main, ["doctor"], terminal_width=400).output.split())
    assert "pip install -e '.[triton]'" in shown  # text, not rich markup
