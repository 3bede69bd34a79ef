"""``jaxbench export --format sakana``: the Sakana-archive record layout, Correct only from the
evaluator's verdict (an identity kernel is never correct), Speedup > 1 means faster, and
null for everything that was not measured."""

from __future__ import annotations

import hashlib
import json
import platform
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from report_runs import evaluation

from jaxbench.cli import main
from jaxbench.contract import EvaluationResult
from jaxbench.export import sakana
from jaxbench.report.data import load_run
from jaxbench.runs import RunDir
from jaxbench.tasks import get_task, list_tasks

DOCS = Path(__file__).resolve().parents[1] / "docs" / "results.md"

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
    result = result.replace(kernel_file=str(kernel_file))
    run.append(result.to_event(job="l1_relu|file|tpu|0", kind="file"))
    run.finish()
    return run.path, result


def test_identity_kernel_is_never_correct(identity_run, tmp_path):
    path, result = identity_run
    assert result.status == "incorrect"  # the evaluator's verdict: relu(x) != x
    [record] = sakana.records(path)
    assert tuple(record) == sakana.FIELD_NAMES
    assert record["Correct"] is False and record["Status"] == "incorrect"
    assert record["Error"] == result.message and "exceed atol" in record["Error"]
    assert record["Op_Name"] == "l1_relu" and record["Level_ID"] == 1 and record["Task_ID"] == 1
    assert record["Kernel_Name"] == "l1_relu.py"
    assert record["Pallas_Code"] == IDENTITY
    seed = (get_task("l1_relu").folder / "seed_tpu.py").read_text()
    assert record["Pallas_Code_Original"] == seed and record["Original_Kernel"] == "seed_tpu.py"
    assert record["Diff"].startswith("--- seed_tpu.py\n+++ l1_relu.py\n")
    assert "def reference" in record["JAX_Code"]
    # Interpret mode: nothing timed, so no runtime and no speedup, and no invented hardware.
    assert record["Pallas_Runtime"] is None and record["JAX_Baseline_Runtime"] is None
    assert record["Speedup"] is None
    assert record["Target_Hardware"] == "interpret (cpu), rules of TPU v6 lite"
    # the judged module's backend, as the evaluator recorded it
    assert result.kernel_backend == "mosaic_tpu" and record["Kernel_Backend"] == "mosaic_tpu"
    assert record["Triton_Version"] is None
    assert record["Input_Shapes"] == [[256, 512]]
    # --save-ir: the IR fields and the kernel's grid and blocks, read from the saved jaxpr.
    assert "pallas_call" in record["Jaxpr_IR"] and record["StableHLO_IR"]
    assert record["Mosaic_MLIR"] and record["Triton_MLIR"] is None
    assert record["Grid_Shape"] == [[2, 2]] and record["Block_Shape"] == [[[128, 256], [128, 256]]]


def test_correct_comes_only_from_the_status(tmp_path):
    """Events whose other fields look like success are still not Correct; an event without a
    status holds no verdict (EvaluationResult.read refuses it) and is no record at all."""
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
    assert [r["Correct"] for r in records] == [False, True]
    assert [r["Status"] for r in records] == ["incorrect", "correct"]


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
    assert fast["Triton_Version"] is None  # no event field says a Triton compiled it


def test_tpu_seed_itself_has_no_original_or_diff(tmp_path):
    task = get_task("l1_relu")
    seed_file = task.folder / "seed_tpu.py"
    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": "seed"})
    run.append(evaluation("l1_relu", "correct", kind="seed", target="tpu", mode="interpret",
                          kernel_file=str(seed_file), source_sha256=_sha(seed_file.read_text())))
    run.finish()
    [record] = sakana.records(run.path)
    assert record["Kernel_Name"] == "seed_tpu" and record["Pallas_Code"] == seed_file.read_text()
    assert record["Pallas_Code_Original"] is None and record["Diff"] is None
    assert record["Original_Kernel"] is None
    assert record["Jaxpr_IR"] is None and record["Grid_Shape"] is None  # no --save-ir
    assert record["Kernel_Backend"] == "mosaic_tpu"


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


def test_a_replay_runs_records_and_card_say_its_inputs_were_public(tmp_path):
    """A replay run (`jaxbench run --replay`) is exported, every record with ``Replay_Of``; its
    dataset card says its verdicts are not hardened instead of claiming unknown inputs. An
    ordinary run's records have null and its card claims inputs the kernel could not know."""
    from jaxbench.runs import Replay

    config = {"command": "run", "kernels": "seed"}
    source = RunDir.open(tmp_path / "source", config)
    source.append(evaluation("l1_relu", "correct", times=(2.0, 0.5), kind="seed"))
    source.finish()
    replay = RunDir.open(tmp_path / "replay", config, replay=Replay.of(source.path))
    replay.append(evaluation("l1_relu", "correct", times=(2.0, 0.6), kind="seed"))
    replay.finish()
    assert [r["Replay_Of"] for r in sakana.records(source.path)] == [None]
    assert [r["Replay_Of"] for r in sakana.records(replay.path)] == [str(source.path)]
    cards = {}
    for run in (source, replay):
        data = sakana.records(run.path)
        cards[run.path.name] = " ".join(sakana.dataset_card(load_run(run.path), data, {
            "level_1.parquet": len(data)}).split())
    guarantees = {name: card[card.index("## What the judge guarantees"):] for name, card in cards.items()}
    assert "inputs the kernel could not know" in guarantees["source"]
    assert "A replay." not in guarantees["source"]
    assert "inputs the kernel could not know" not in guarantees["replay"]
    assert (f"drew the inputs of `{source.path}` again" in guarantees["replay"]
            and "NOT hardened against a kernel tuned to them" in guarantees["replay"])


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


def _apply(original: str, diff: str) -> str:
    """Applies a unified diff (written here, independently of difflib) to ``original``."""
    old = original.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    lines = diff.splitlines(keepends=True)
    assert lines[0].startswith("--- ") and lines[1].startswith("+++ ")
    for line in lines[2:]:
        hunk = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", line)
        if hunk:
            start = int(hunk.group(1)) - (0 if hunk.group(2) == "0" else 1)
            out += old[at:start]
            at = start
        elif line.startswith(" "):
            assert old[at] == line[1:], (old[at], line)
            out.append(old[at])
            at += 1
        elif line.startswith("-"):
            assert old[at] == line[1:], (old[at], line)
            at += 1
        elif line.startswith("+"):
            out.append(line[1:])
        else:  # "\ No newline at end of file"
            assert line.startswith("\\"), line
    return "".join(out + old[at:])


@pytest.fixture(scope="module")
def pallasbench_gpu_seeds(tmp_path_factory):
    """A `jaxbench run --suite pallasbench --kernels seed --target gpu` as the CLI writes it,
    one GPU seed evaluation per task (verdicts made up; nothing evaluated)."""
    run = RunDir.open(tmp_path_factory.mktemp("pb") / "run",
                      {"command": "run", "kernels": "seed", "suite": "pallasbench", "target": "gpu",
                       "mode": "interpret", "size": "small"})
    for task in list_tasks("pallasbench"):
        seed = task.folder / "seed_gpu.py"
        source = seed.read_text()
        run.append(evaluation(task.id, "correct", kind="seed", target="gpu", mode="interpret",
                              size="small", kernel_file=str(seed), source_sha256=_sha(source),
                              source_file=run.keep_source(source), job=f"{task.id}|seed|gpu|0"))
    run.finish()
    return run.path


def test_every_pallasbench_gpu_record_pairs_the_tpu_original_the_gpu_code_and_their_diff(
        pallasbench_gpu_seeds):
    tasks = list_tasks("pallasbench")
    records = sakana.records(pallasbench_gpu_seeds)
    assert len(tasks) == 45 and [r["Op_Name"] for r in records] == [t.id for t in tasks]
    for task, record in zip(tasks, records, strict=True):
        tpu_style = (task.folder / "seed_tpu.py").read_text()
        gpu = (task.folder / "seed_gpu.py").read_text()
        assert record["Kernel_Name"] == "seed_gpu", task.id
        assert record["Pallas_Code"] == gpu, task.id
        assert record["Pallas_Code_Original"] == tpu_style, task.id
        assert record["Original_Kernel"] == "seed_tpu.py", task.id
        assert record["Diff"].startswith("--- seed_tpu.py\n+++ seed_gpu\n"), task.id
        assert _apply(tpu_style, record["Diff"]) == gpu, task.id  # the diff turns one into the other
        assert record["Level_ID"] == task.meta["level"] and record["Task_ID"] == task.meta["number"]
        # no backend in these events: the seeds' imports (Triton's compiler params) say it
        assert record["Kernel_Backend"] == "triton", task.id
        assert record["Target_Hardware"] == "interpret (cpu), rules of NVIDIA H200"
        assert record["Triton_Version"] is None and record["Speedup"] is None
        assert record["Pallas_Runtime"] is None and record["JAX_Baseline_Runtime"] is None


def test_the_parent_an_agent_started_from_is_the_original(tmp_path):
    task = get_task("l1_relu")
    seed = (task.folder / "seed_gpu.py").read_text()
    child = seed.replace("jnp.maximum(x_ref[...], 0)", "jnp.where(x_ref[...] > 0, x_ref[...], 0)")
    grandchild = child.replace("num_warps=4", "num_warps=8")
    run = RunDir.open(tmp_path / "run", {"command": "optimize", "method": "evolve", "target": "gpu"})
    for step, code, parent, sample in (("seed/seed_gpu", seed, None, None), ("s0", child, "seed/seed_gpu", 0),
                                       ("s1", grandchild, "s0", 1), ("s2", child, "s7", 2)):
        run.append(evaluation("l1_relu", "correct", mode="interpret", method="evolve", sample=sample,
                              step=step, parent=parent, source_sha256=_sha(code),
                              source_file=run.keep_source(code)))
    run.finish()
    by_step = {r["Kernel_Name"]: r for r in sakana.records(run.path)}
    # the seed an optimizer evaluated first: its TPU-style original (PallasBench, GPU)
    tpu_style = (task.folder / "seed_tpu.py").read_text()
    assert by_step["evolve/seed/seed_gpu"]["Pallas_Code_Original"] == tpu_style
    first = by_step["evolve/s0"]
    assert first["Pallas_Code_Original"] == seed and first["Original_Kernel"] == "evolve/seed/seed_gpu"
    assert first["Diff"].startswith("--- evolve/seed/seed_gpu\n+++ evolve/s0\n")
    assert _apply(seed, first["Diff"]) == child
    second = by_step["evolve/s1"]
    assert second["Pallas_Code_Original"] == child and second["Original_Kernel"] == "evolve/s0"
    assert "-        compiler_params=plgpu.CompilerParams(num_warps=4" in second["Diff"]
    # a parent the run does not hold: named, not guessed
    lost = by_step["evolve/s2"]
    assert lost["Original_Kernel"] == "evolve/s7"
    assert lost["Pallas_Code_Original"] is None and lost["Diff"] is None


def test_kernel_backend_from_the_event_the_saved_ir_or_the_imports(tmp_path):
    triton_seed = (get_task("l1_relu").folder / "seed_gpu.py").read_text()
    mosaic_gpu_seed = (get_task("12p_rmsnorm").folder / "seed_mosaic_gpu.py").read_text()

    def result(target: str = "gpu", **fields: Any) -> EvaluationResult:
        return EvaluationResult(task="l1_relu", target=target, mode="interpret", size="small",
                                status="correct", **fields)

    # recorded by the evaluator from the judged module: wins over what the source imports
    assert sakana.kernel_backend(result(kernel_backend="mosaic_gpu"), triton_seed) == "mosaic_gpu"
    assert sakana.kernel_backend(result(structure={"custom_calls": {
        "__gpu$xla.gpu.triton": 2, "mosaic_gpu": 1}}), None) == "mosaic_gpu+triton"
    # the module saved with --save-ir
    stablehlo = tmp_path / "stablehlo.mlir"
    stablehlo.write_text('%0 = stablehlo.custom_call @mosaic_gpu(%arg0) {call_target_name = "mosaic_gpu"}')
    assert sakana.kernel_backend(result(), triton_seed, {"stablehlo": stablehlo}) == "mosaic_gpu"
    # the kernel's imports: a Mosaic GPU kernel is not passed off as a Triton one
    assert sakana.kernel_backend(result(), triton_seed) == "triton"
    assert sakana.kernel_backend(result(), mosaic_gpu_seed) == "mosaic_gpu"
    assert sakana.kernel_backend(result("tpu"), "import jax\n") == "mosaic_tpu"
    assert sakana.kernel_backend(result(), "import jax\n") is None  # not decided: null


def test_a_mosaic_gpu_record_says_so(tmp_path):
    task = get_task("12p_rmsnorm")
    source = (task.folder / "seed_mosaic_gpu.py").read_text()
    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": "seed_mosaic"})
    run.append(evaluation("12p_rmsnorm", "correct", kind="seed_mosaic", target="gpu", times=(0.610, 0.7),
                          kernel_backend="mosaic_gpu", source_sha256=_sha(source),
                          source_file=run.keep_source(source)))
    run.finish()
    [record] = sakana.records(run.path)
    assert record["Kernel_Name"] == "seed_mosaic_gpu" and record["Kernel_Backend"] == "mosaic_gpu"
    assert record["Target_Hardware"] == "NVIDIA H200" and record["Triton_Version"] is None
    # the JAXBench suite: the shipped seed for the target is the original
    assert record["Original_Kernel"] == "seed_gpu.py"


def test_target_hardware_is_the_measured_device_or_says_interpret(tmp_path):
    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": "x"})
    run.append(evaluation("l1_relu", "correct", times=(2.0, 1.0), kind="file"))
    run.append(evaluation("l1_relu", "correct", mode="interpret", kind="file"))
    run.append(evaluation("l1_relu", "correct", mode="interpret", target="tpu", kind="file"))
    run.finish()
    assert [r["Target_Hardware"] for r in sakana.records(run.path)] == [
        "NVIDIA H200", "interpret (cpu), rules of NVIDIA H200", "interpret (cpu), rules of TPU v6 lite"]


def test_triton_version_only_when_triton_compiled_the_kernel(tmp_path):
    here = {"jax": "0.10.2", "host": platform.node()}
    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": "x"})
    # Triton's own compiler ran on it (interpret mode, the triton extra)
    run.append(evaluation("l1_relu", "correct", mode="interpret", kind="file", kernel_backend="triton",
                          triton_compile={"triton_version": "3.9.0", "capability": 90, "kernels": []}))
    # the event's versions name Triton, for a Triton kernel, and for a Mosaic GPU one
    run.append(evaluation("l1_relu", "correct", kind="file", kernel_backend="triton",
                          versions={**here, "triton": "3.4.0"}))
    run.append(evaluation("l1_relu", "correct", kind="file", kernel_backend="mosaic_gpu",
                          versions={**here, "triton": "3.4.0"}))
    # evaluated on this very host (where Triton may be installed: the old export then took its
    # version), but nothing says Triton compiled it
    run.append(evaluation("l1_relu", "correct", mode="interpret", kind="file", kernel_backend="triton",
                          versions=here))
    run.finish()
    assert [r["Triton_Version"] for r in sakana.records(run.path)] == ["3.9.0", "3.4.0", None, None]


@pytest.fixture(scope="module")
def gpu_seed_run(tmp_path_factory, evaluator):
    """l1_relu's GPU seed judged by the real evaluator with --save-ir, in a run."""
    root = tmp_path_factory.mktemp("gpu_seed")
    seed = get_task("l1_relu").folder / "seed_gpu.py"
    run = RunDir.open(root / "run", {"command": "run", "kernels": "seed", "target": "gpu",
                                     "mode": "interpret", "size": "small", "save_ir": True})
    result = evaluator.evaluate(seed, "l1_relu", target="gpu", mode="interpret", trials=1,
                                save_ir=run.path / "artifacts" / "l1_relu-seed-gpu")
    run.append(result.to_event(job="l1_relu|seed|gpu|0", kind="seed"))
    run.finish()
    return run.path, result


def test_a_judged_gpu_seed_with_saved_ir(gpu_seed_run):
    path, result = gpu_seed_run
    import jax

    assert result.status == "correct" and result.kernel_backend == "triton"
    [record] = sakana.records(path)
    task = get_task("l1_relu")
    assert record["Pallas_Code"] == (task.folder / "seed_gpu.py").read_text()
    assert record["Pallas_Code_Original"] == (task.folder / "seed_tpu.py").read_text()
    assert _apply(record["Pallas_Code_Original"], record["Diff"]) == record["Pallas_Code"]
    assert record["Kernel_Backend"] == "triton" and record["Correct"] is True
    assert record["Triton_MLIR"].startswith("// Triton kernel") and record["Mosaic_MLIR"] is None
    # small is (256, 512) in (64, 256) tiles
    assert record["Grid_Shape"] == [[4, 2]] and record["Block_Shape"] == [[[64, 256], [64, 256]]]
    assert record["Target_Hardware"] == "interpret (cpu), rules of NVIDIA A100"  # PallasBench's
    assert record["Triton_Version"] is None  # Triton's compiler is off in the suite (conftest)
    assert record["JAX_Version"] == jax.__version__


def _card_front_matter(card: str) -> dict:
    yaml = pytest.importorskip("yaml")
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n")[1])


def test_parquet_levels_load_with_pandas_and_datasets_and_carry_a_card(pallasbench_gpu_seeds, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    out = tmp_path / "sakanaai_pallasbench"
    files = sakana.write_parquet(pallasbench_gpu_seeds, out)
    assert files == {"level_1.parquet": 27, "level_2.parquet": 13, "level_3.parquet": 5}
    frames = {name: pd.read_parquet(out / name) for name in files}
    for name, frame in frames.items():
        assert list(frame.columns) == list(sakana.FIELD_NAMES) and len(frame) == files[name]
        assert frame["Correct"].all() and frame["Speedup"].isna().all()
        assert (frame["Kernel_Backend"] == "triton").all() and frame["Pallas_Code_Original"].notna().all()
    card = (out / sakana.CARD).read_text()
    front = _card_front_matter(card)
    assert front["configs"][0]["data_files"] == [{"split": n.removesuffix(".parquet"), "path": n}
                                                 for n in sorted(files)]
    for name in sakana.FIELD_NAMES:
        assert f"| `{name}` |" in card
    assert "45 records" in card and "Apache-2.0" in card and "PallasBench" in card
    assert "Status: correct 45" in card and "nothing was timed" in card
    datasets = pytest.importorskip("datasets", reason="the `datasets` library is not installed")
    cache = str(tmp_path / "hf_cache")
    one = datasets.load_dataset("parquet", data_files=str(out / "level_3.parquet"), split="train",
                                cache_dir=cache)
    assert one.column_names == list(sakana.FIELD_NAMES) and len(one) == 5
    assert one[0]["Op_Name"] == "l3_flash_attention" and one[0]["Correct"] is True
    # the folder itself, through the card's configs: one split per level
    every = datasets.load_dataset(str(out), cache_dir=cache)
    assert {name: len(split) for name, split in every.items()} == {"level_1": 27, "level_2": 13, "level_3": 5}


def test_docs_list_every_field_in_order():
    text = DOCS.read_text()
    section = text[text.index("## Sakana-archive records"):]
    section = section[:section.find("\n## ", 4)] if "\n## " in section[4:] else section
    documented = re.findall(r"^\| `(\w+)` \| (\w+) \|", section, flags=re.M)
    kinds = {"string": "string", "int64": "int", "float64": "float", "bool": "bool", "grids": "list",
             "blocks": "list"}
    assert [name for name, _ in documented] == list(sakana.FIELD_NAMES)
    assert [kind for _, kind in documented] == [kinds[k] for _, k, _ in sakana.FIELDS]
