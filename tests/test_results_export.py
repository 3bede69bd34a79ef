"""``jaxbench export``: one row per evaluation, the documented versioned schema, the same columns
for every suite and method, catalogue order, read back by pandas (and `datasets` if present)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from report_runs import H200_SEEDS, device_run, interpret_run

from jaxbench import export
from jaxbench.cli import main
from jaxbench.tasks import list_tasks

DOCS = Path(__file__).parent.parent / "docs" / "results.md"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return {"device": device_run(root / "device"), "interpret": interpret_run(root / "interpret")}


def test_one_row_per_evaluation_with_the_schema_columns(runs):
    for path in runs.values():
        events = [json.loads(line) for line in (path / "events.jsonl").read_text().splitlines()]
        rows = export.rows(path)
        assert len(rows) == sum(e["type"] == "evaluation" for e in events)
        assert all(tuple(r) == export.COLUMN_NAMES for r in rows)
        assert {r["schema_version"] for r in rows} == {export.SCHEMA_VERSION}


def test_rows_follow_catalogue_order_not_string_order(runs):
    tasks = []
    for row in export.rows(runs["device"]):
        if row["task"] not in tasks:
            tasks.append(row["task"])
    catalogue = [t.id for t in list_tasks() if t.id in H200_SEEDS]
    assert tasks == catalogue == ["1p_flash_attention", "8p_gemm", "12p_rmsnorm", "13p_cross_entropy",
                                  "50k_matmul_gelu_softmax"]
    assert tasks != sorted(tasks)  # as strings 12p, 13p would come before 1p, 8p


def test_values_are_measured_or_null(runs):
    rows = export.rows(runs["device"])
    gemm = [r for r in rows if r["task"] == "8p_gemm" and r["method"] == "best_of_n"]
    assert [r["sample"] for r in gemm] == [0, 1, 2, 3]  # slot order
    timed = gemm[3]
    assert timed["speedup"] == pytest.approx(6.541 / 7.557)
    assert timed["t_ref_ms"] / timed["t_kernel_ms"] == pytest.approx(timed["speedup"])
    assert timed["achieved_flops_per_s"] == pytest.approx(timed["flops"] / (7.557e-3))
    assert timed["secret_verified"] is True and timed["suite"] == "jaxbench"
    failed = gemm[0]
    assert failed["status"] == "compile_error" and failed["correct"] is False
    assert failed["speedup"] is None and failed["t_kernel_ms"] is None and failed["compiled"] is False
    seed = [r for r in rows if r["method"] == "evolve" and r["origin"] == "seed"]
    assert len(seed) == 5 and all(r["sample"] is None for r in seed)
    for row in export.rows(runs["interpret"]):  # interpret mode: nothing timed, nothing invented
        assert row["speedup"] is None and row["t_ref_ms"] is None and row["achieved_flops_per_s"] is None
        assert row["method"] == "run:seed" and row["kernel"] == "seed_tpu" and row["model"] is None


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv"])
def test_formats_load_back_with_pandas(runs, tmp_path, fmt):
    pd = pytest.importorskip("pandas")
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / f"results.{fmt}"
    assert export.write(runs["device"], fmt, out) == 45
    frame = {"parquet": pd.read_parquet, "csv": pd.read_csv,
             "jsonl": lambda p: pd.read_json(p, lines=True)}[fmt](out)
    assert list(frame.columns) == list(export.COLUMN_NAMES)
    assert len(frame) == 45
    correct = frame[frame["correct"].astype(bool)]
    assert len(correct) == 20 and correct["speedup"].notna().all()
    assert frame.loc[frame["status"] == "compile_error", "speedup"].isna().all()


def test_parquet_schema_is_typed_and_versioned_even_when_a_column_is_all_null(runs, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "interpret.parquet"
    export.write(runs["interpret"], "parquet", out)
    table = pq.read_table(out)
    assert table.schema.metadata[b"jaxbench.schema_version"] == str(export.SCHEMA_VERSION).encode()
    # speedup is null in every interpret row and still a float column, so runs concatenate.
    assert str(table.schema.field("speedup").type) == "double"
    assert str(table.schema.field("sample").type) == "int64"
    other = tmp_path / "device.parquet"
    export.write(runs["device"], "parquet", other)
    assert pq.read_table(other).schema.equals(table.schema, check_metadata=False)


def test_datasets_loads_the_parquet_file(runs, tmp_path):
    datasets = pytest.importorskip("datasets", reason="the `datasets` library is not installed")
    out = tmp_path / "results.parquet"
    export.write(runs["device"], "parquet", out)
    loaded = datasets.load_dataset("parquet", data_files=str(out), split="train")
    assert loaded.column_names == list(export.COLUMN_NAMES) and len(loaded) == 45


def test_csv_has_the_same_header_for_every_run(runs, tmp_path):
    headers = []
    for name, path in runs.items():
        out = tmp_path / f"{name}.csv"
        export.write(path, "csv", out)
        with open(out, newline="") as f:
            headers.append(next(csv.reader(f)))
    assert headers[0] == headers[1] == list(export.COLUMN_NAMES)


def test_docs_document_every_column_in_order():
    documented = re.findall(r"^\| `(\w+)` \| (\w+) \|", DOCS.read_text(), flags=re.M)
    assert [name for name, _ in documented[:len(export.COLUMNS)]] == list(export.COLUMN_NAMES)
    assert [kind for _, kind in documented[:len(export.COLUMNS)]] == [k for _, k, _ in export.COLUMNS]
    assert f"schema version {export.SCHEMA_VERSION}" in DOCS.read_text()


def test_export_cli(runs, tmp_path):
    runner = CliRunner()
    out = tmp_path / "r.jsonl"
    result = runner.invoke(main, ["export", str(runs["interpret"]), "--format", "jsonl", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 5 rows" in result.stdout
    tasks = [json.loads(line)["task"] for line in out.read_text().splitlines()]
    assert tasks == ["2p_gqa_attention", "8p_gemm", "10p_sparse_moe", "12p_rmsnorm",
                     "19k_matmul_subtract_multiply_relu"]
    missing = runner.invoke(main, ["export", str(tmp_path / "nope"), "--format", "csv"])
    assert missing.exit_code == 2 and "nope does not exist" in missing.stderr
    into_dir = runner.invoke(main, ["export", str(runs["interpret"]), "--format", "csv", "--out",
                                    str(tmp_path)])
    assert into_dir.exit_code == 2 and "is a directory" in into_dir.stderr
    bad = runner.invoke(main, ["export", str(runs["interpret"]), "--format", "xlsx"])
    assert bad.exit_code == 2


def test_parquet_without_pyarrow_is_a_usage_error(runs, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    out = tmp_path / "x.parquet"
    result = CliRunner().invoke(main, ["export", str(runs["interpret"]), "--out", str(out)])
    assert result.exit_code == 2 and "jaxbench[results]" in result.stderr
    assert not out.exists()


def test_tolerance_columns_come_from_the_evaluation(tmp_path):
    from report_runs import evaluation

    from jaxbench.runs import RunDir
    from jaxbench.tasks import get_task

    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": "x"})
    run.append(evaluation("8p_gemm", "incorrect", kind="file", tolerance={"atol": 0.05, "rtol": 0.02},
                          tol_fraction=3.5, max_abs_err=0.2))
    run.append(evaluation("8p_gemm", "incorrect", kind="file", message="output: NaN at [0:4, 0:8]",
                          max_abs_err=None, tol_fraction=None))  # an older event: no tolerance
    run.finish()
    judged, nan = export.rows(run.path)
    assert (judged["atol"], judged["rtol"], judged["tol_fraction"]) == (0.05, 0.02, 3.5)
    task = get_task("8p_gemm")
    assert (nan["atol"], nan["rtol"]) == (task.atol, task.rtol)
    assert nan["tol_fraction"] is None and nan["max_abs_err"] is None


def test_csv_cells_that_would_start_a_formula_are_text(tmp_path):
    """A kernel's message (text its author controls) that starts like a spreadsheet formula is
    written with a leading apostrophe, and reads back as that text."""
    from report_runs import evaluation

    from jaxbench.runs.directory import RunDir

    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": "seed", "target": "tpu",
                                         "mode": "interpret", "size": "small"})
    for i, message in enumerate(("=HYPERLINK(\"http://x\")", "+1+1", "-2", "@SUM(A1)", "plain")):
        run.append(evaluation(f"t{i}", "incorrect", mode="interpret", message=message))
    run.finish(wall_s=1.0)
    out = tmp_path / "out.csv"
    export.write(run.path, "csv", out)
    with open(out, newline="") as f:
        messages = [row["message"] for row in csv.DictReader(f)]
    assert messages == ["'=HYPERLINK(\"http://x\")", "'+1+1", "'-2", "'@SUM(A1)", "plain"]


def _replay_pair(root: Path) -> tuple[Path, Path]:
    """A finished run of its own secret, and a finished replay of it (`jaxbench run --replay`),
    one evaluation each."""
    from report_runs import evaluation

    from jaxbench.runs import Replay, RunDir

    config = {"command": "run", "kernels": "seed", "target": "gpu", "mode": "device", "size": "full"}
    source = RunDir.open(root / "source", config)
    source.append(evaluation("8p_gemm", "correct", times=(6.541, 7.557), kind="seed"))
    source.finish()
    replay = RunDir.open(root / "replay", config, replay=Replay.of(source.path))
    replay.append(evaluation("8p_gemm", "correct", times=(6.5, 7.4), kind="seed"))
    replay.finish()
    return source.path, replay.path


def test_a_replay_runs_rows_name_the_run_it_replays(tmp_path):
    """Every row of a replay run carries ``replay_of`` (the directory given to --replay); an
    ordinary run's is null; the two runs' rows share ``secret_sha256`` (the replayed secret)."""
    source, replay = _replay_pair(tmp_path)
    own, replayed = export.rows(source), export.rows(replay)
    assert [r["replay_of"] for r in own] == [None]
    assert [r["replay_of"] for r in replayed] == [str(source)]
    assert replayed[0]["secret_sha256"] == own[0]["secret_sha256"]
    assert replayed[0]["secret_verified"] is True  # the reveal matches: still not hardened
    for fmt, read in (("jsonl", lambda p: [json.loads(line) for line in p.read_text().splitlines()]),
                      ("csv", lambda p: list(csv.DictReader(p.open(newline=""))))):
        export.write(replay, fmt, tmp_path / f"replay.{fmt}")
        export.write(source, fmt, tmp_path / f"source.{fmt}")
        assert [r["replay_of"] for r in read(tmp_path / f"replay.{fmt}")] == [str(source)]
        assert [r["replay_of"] for r in read(tmp_path / f"source.{fmt}")] == [{"jsonl": None, "csv": ""}[fmt]]


def test_a_replay_is_marked_from_its_run_start_when_the_manifest_lacks_it(tmp_path):
    """A manifest without ``replay_of`` (edited, or from a tool that rewrote it) does not pass a
    replay off as a run of its own secret: the run_start events still say whose inputs it drew."""
    source, replay = _replay_pair(tmp_path)
    manifest = json.loads((replay / "manifest.json").read_text())
    del manifest["replay_of"]
    (replay / "manifest.json").write_text(json.dumps(manifest))
    assert [r["replay_of"] for r in export.rows(replay)] == [str(source)]


def test_parquet_types_replay_of_as_a_string_even_when_null(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    source, replay = _replay_pair(tmp_path)
    tables = {}
    for name, path in (("source", source), ("replay", replay)):
        export.write(path, "parquet", tmp_path / f"{name}.parquet")
        tables[name] = pq.read_table(tmp_path / f"{name}.parquet")
    assert str(tables["source"].schema.field("replay_of").type) == "string"
    assert tables["source"].schema.equals(tables["replay"].schema)
    assert tables["replay"].column("replay_of").to_pylist() == [str(source)]
    assert tables["source"].column("replay_of").to_pylist() == [None]


def test_the_docs_state_this_schema_version_and_column_count():
    """docs/results.md's heading and docs/reports.md's summary name the version and the number
    of columns the code writes, and results.md says what ``replay_of`` means."""
    results = " ".join(DOCS.read_text().split())
    assert f"## The results schema (schema version {export.SCHEMA_VERSION})" in results
    assert f"Version {export.SCHEMA_VERSION} added `replay_of`" in results
    assert "verdicts are not hardened against a kernel tuned to them" in results
    reports = " ".join((DOCS.parent / "reports.md").read_text().split())
    assert (f"{len(export.COLUMNS)} columns for every suite and method (schema version "
            f"{export.SCHEMA_VERSION}," in reports)
