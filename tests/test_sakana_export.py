"""``jaxbench export --format sakana``: the Sakana-archive record layout, Correct only from the
evaluator's verdict (an identity kernel is never correct), Speedup > 1 means faster, and
null for everything that was not measured."""

from __future__ import annotations

import hashlib
import json
import textwrap

import pytest
from click.testing import CliRunner
from report_runs import evaluation

from jaxbench.cli import main
from jaxbench.export import sakana
from jaxbench.runs import RunDir
from jaxbench.tasks import get_task

IDENTITY = textwrap.dedent('''
    """Copies its input to its output: a kernel that does no work."""
    import jax
    from jax.experimental import pallas as pl

    TARGET = "tpu"


    def _copy(x_ref, o_ref):
        o_ref[...] = x_ref[...]


    def kernel(x):
        m, n = x.shape
        return pl.pallas_call(
            _copy,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(m // 128, n // 256),
            in_specs=[pl.BlockSpec((128, 256), lambda i, j: (i, j))],
            out_specs=pl.BlockSpec((128, 256), lambda i, j: (i, j)),
        )(x)
''')


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(scope="module")
def identity_run(tmp_path_factory, evaluator):
    """An identity kernel for l1_relu (max(x, 0)), judged by the real evaluator, in a run."""
    root = tmp_path_factory.mktemp("identity")
    kernel_file = root / "l1_relu.py"
    kernel_file.write_text(IDENTITY)
    result = evaluator.evaluate(kernel_file, "l1_relu", target="tpu", mode="interpret", trials=1,
                                tpu_interpret=False, save_ir=root / "run" / "artifacts" / "identity")
    run = RunDir.open(root / "run", {"command": "run", "kernels": str(root), "target": "tpu",
                                     "mode": "interpret", "size": "small"})
    result.update(job="l1_relu|file|tpu|0", kind="file", kernel_file=str(kernel_file))
    run.append(result)
    run.finish()
    return run.path, result


def test_identity_kernel_is_never_correct(identity_run, tmp_path):
    path, result = identity_run
    assert result["status"] == "incorrect"  # the evaluator's verdict: relu(x) != x
    [record] = sakana.records(path)
    assert tuple(record) == sakana.FIELD_NAMES
    assert record["Correct"] is False and record["Status"] == "incorrect"
    assert record["Error"] == result["message"] and "exceed atol" in record["Error"]
    assert record["Op_Name"] == "l1_relu" and record["Level_ID"] == 1 and record["Task_ID"] == 1
    assert record["Kernel_Name"] == "l1_relu.py"
    assert record["Pallas_Code"] == IDENTITY
    seed = (get_task("l1_relu").folder / "seed_tpu.py").read_text()
    assert record["Pallas_Code_Original"] == seed
    assert record["Diff"].startswith("--- seed_tpu.py\n+++ l1_relu.py\n")
    assert "def reference" in record["JAX_Code"]
    # Interpret mode: nothing timed, so no runtime and no speedup, and no invented hardware.
    assert record["Pallas_Runtime"] is None and record["JAX_Baseline_Runtime"] is None
    assert record["Speedup"] is None and record["Target_Hardware"] == "tpu"
    assert record["Input_Shapes"] == [[256, 512]]
    # --save-ir: the IR fields and the kernel's grid and blocks, read from the saved jaxpr.
    assert "pallas_call" in record["Jaxpr_IR"] and record["StableHLO_IR"]
    assert record["Mosaic_MLIR"] and record["Triton_MLIR"] is None
    assert record["Grid_Shape"] == [[2, 2]] and record["Block_Shape"] == [[[128, 256], [128, 256]]]


def test_correct_comes_only_from_the_status(tmp_path):
    """Events whose other fields look like success are still not Correct."""
    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": "x"})
    run.append(evaluation("l1_relu", "incorrect", max_abs_err=0.0, times=(2.0, 1.0), kind="file",
                          correct=True, verdict="correct"))
    run.append(evaluation("l1_relu", "correct", kind="file", target="tpu"))
    forged = evaluation("l1_relu", "correct", kind="file")
    forged.pop("status")
    forged["correct"] = True
    run.append(forged)
    run.finish()
    records = sakana.records(run.path)
    assert [r["Correct"] for r in records] == [False, True, False]
    assert [r["Status"] for r in records] == ["incorrect", "correct", None]


def test_speedup_above_one_means_faster(tmp_path):
    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": "x"})
    run.append(evaluation("l1_relu", "correct", times=(2.0, 0.5), kind="file"))   # 4x faster
    run.append(evaluation("l1_relu", "correct", times=(1.0, 4.0), kind="file"))   # 4x slower
    run.finish()
    fast, slow = sakana.records(run.path)
    assert fast["Speedup"] == pytest.approx(4.0) and slow["Speedup"] == pytest.approx(0.25)
    for r in (fast, slow):
        assert r["Speedup"] == pytest.approx(r["JAX_Baseline_Runtime"] / r["Pallas_Runtime"])
        assert (r["Speedup"] > 1) == (r["Pallas_Runtime"] < r["JAX_Baseline_Runtime"])
        assert r["Target_Hardware"] == "NVIDIA H200"
    assert fast["JAX_Version"] == "0.11.2"
    assert fast["Triton_Version"] is None  # not recorded, and evaluated on another host


def test_seed_itself_has_no_original_or_diff(tmp_path):
    task = get_task("l1_relu")
    seed_file = task.folder / "seed_gpu.py"
    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": "seed"})
    run.append(evaluation("l1_relu", "correct", kind="seed", target="gpu", mode="interpret",
                          kernel_file=str(seed_file), source_sha256=_sha(seed_file.read_text())))
    run.finish()
    [record] = sakana.records(run.path)
    assert record["Kernel_Name"] == "seed_gpu" and record["Pallas_Code"] == seed_file.read_text()
    assert record["Pallas_Code_Original"] is None and record["Diff"] is None
    assert record["Jaxpr_IR"] is None and record["Grid_Shape"] is None  # no --save-ir


def test_edited_kernel_file_is_not_passed_off_as_the_evaluated_source(tmp_path):
    kernel_file = tmp_path / "l1_relu.py"
    kernel_file.write_text("# edited after the run\n")
    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": str(tmp_path)})
    run.append(evaluation("l1_relu", "correct", kind="file", target="tpu", mode="interpret",
                          kernel_file=str(kernel_file), source_sha256=_sha("# the evaluated one\n")))
    run.finish()
    [record] = sakana.records(run.path)
    assert record["Pallas_Code"] is None and record["Diff"] is None
    # ... but a content-addressed copy in the run directory is found.
    (run.path / "sources").mkdir()
    (run.path / "sources" / f"{_sha('# the evaluated one' + chr(10))[:16]}.py").write_text(
        "# the evaluated one\n")
    [record] = sakana.records(run.path)
    assert record["Pallas_Code"] == "# the evaluated one\n"


def test_jaxbench_suite_level_is_null(tmp_path):
    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": "seed"})
    run.append(evaluation("12p_rmsnorm", "correct", kind="seed", mode="interpret"))
    run.finish()
    [record] = sakana.records(run.path)
    assert record["Level_ID"] is None and record["Task_ID"] == 12
    # its Parquet file is named by the task's own level, not "none"
    assert sakana.level_file(record) == "level_production.parquet"
    assert sakana.level_file(dict(record, Op_Name="no_such_task")) == "level_unknown.parquet"
    assert sakana.level_file(dict(record, Level_ID=2)) == "level_2.parquet"


def test_sakana_cli_json_and_parquet_per_level(identity_run, tmp_path, monkeypatch):
    path, _ = identity_run
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(main, ["export", str(path), "--format", "sakana"])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / sakana.DEFAULT_JSON).read_text())
    assert [r["Op_Name"] for r in data] == ["l1_relu"] and data[0]["Correct"] is False
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    result = runner.invoke(main, ["export", str(path), "--format", "sakana-parquet"])
    assert result.exit_code == 0, result.output
    frame = pd.read_parquet(tmp_path / sakana.DEFAULT_PARQUET_DIR / "level_1.parquet")
    assert list(frame.columns) == list(sakana.FIELD_NAMES)
    assert not frame["Correct"].iloc[0] and frame["Speedup"].isna().all()
    assert [list(g) for g in frame["Grid_Shape"].iloc[0]] == [[2, 2]]


def test_grid_and_block_parsing():
    jaxpr = ("pallas_call[ grid_mapping=GridMapping(grid=(4, 2), block_mappings=("
             "BlockMapping(block_shape=(Squeezed(), Blocked(block_size=128))), "
             "BlockMapping(block_shape=(Blocked(block_size=8), Blocked(block_size=256)))), "
             "index_map_jaxpr={ lambda ; a:i32[] b:i32[]. let in (a, b) }) ] x\n"
             "pallas_call[ grid_mapping=GridMapping(grid=(), block_mappings=("
             "BlockMapping(block_shape=(Blocked(block_size=16),)),)) ]")
    grids, blocks = sakana.grid_and_blocks(jaxpr)
    assert grids == [[4, 2], []]
    assert blocks == [[[None, 128], [8, 256]], [[16]]]
    assert sakana.grid_and_blocks("no kernels here") == (None, None)
    assert sakana.grid_and_blocks(None) == (None, None)
