"""The PallasBench suite: 45 float32 tasks in catalogue order and three levels, two seeds each,
the catalogue's repairs recorded, and the GPU-rule table (every GPU port obeys Triton's rules
at full size). Correctness of the 90 seeds is in tests/test_seeds.py; tolerance calibration in
`jaxbench validate --suite pallasbench` (tests/test_validate.py tests the validator)."""

import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp

from jaxbench.evaluator.parent.static import declared_target
from jaxbench.tasks import list_tasks

TASKS = list_tasks("pallasbench")
REPAIRED = {22: "l1_cross_entropy", 25: "l1_embedding_lookup", 27: "l1_nucleotide_onehot",
            37: "l2_fused_softmax_cross_entropy", 38: "l2_sigmoid_bce",
            41: "l3_flash_attention", 45: "l3_triangle_update"}


def test_45_tasks_in_catalogue_order_and_levels():
    assert [t.meta["number"] for t in TASKS] == list(range(1, 46))
    levels = [t.meta["level"] for t in TASKS]
    assert (levels.count(1), levels.count(2), levels.count(3)) == (27, 13, 5)
    for t in TASKS:
        assert t.id.startswith(f"l{t.meta['level']}_"), t.id
        assert t.folder.name == t.id, t.folder
    assert TASKS[0].id == "l1_relu" and TASKS[27].id == "l2_matmul_relu"
    assert TASKS[-1].id == "l3_triangle_update"


def test_inputs_are_float32_or_integer():
    for t in TASKS:
        for size in ("small", "full"):
            for spec in t.input_specs(size):
                dtype = jnp.dtype(spec.dtype)
                assert dtype == jnp.float32 or jnp.issubdtype(dtype, jnp.integer), (t.id, spec)


def test_every_task_ships_both_seeds_with_their_targets():
    for t in TASKS:
        files = t.kernel_files()
        for target in ("tpu", "gpu"):
            path = files.get(("seed", target))
            assert path is not None, (t.id, target)
            assert declared_target(path.read_text()) == target, path


def test_repairs_are_recorded():
    repaired = {t.meta["number"]: t.id for t in TASKS if t.meta.get("repair")}
    assert repaired == REPAIRED
    with_original = {t.id for t in TASKS if t.unrepaired_reference is not None}
    assert with_original == {"l2_fused_softmax_cross_entropy"}  # the only one whose math changed


def test_tasks_listing_groups_levels():
    out = subprocess.run([sys.executable, "-m", "jaxbench.cli", "tasks", "--suite", "pallasbench"],
                         capture_output=True, text=True, timeout=120, env={
                             "JAX_PLATFORMS": "cpu", "COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert "45 tasks" in out.stdout
    lines = out.stdout.splitlines()
    first = {lvl: next(i for i, line in enumerate(lines) if f"(L{lvl})" in line) for lvl in (1, 2, 3)}
    assert first[1] < first[2] < first[3]
    assert any(set(line.strip()) <= set("├┼─┤") and line.strip() for line in lines[first[1]:first[2]])


def test_gpu_rule_table_every_port_obeys_tritons_rules():
    script = Path(__file__).parents[1] / "scripts" / "pallasbench_gpu_rules.py"
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "0 of 45 GPU ports do" in out.stdout
    rows = [line for line in out.stdout.splitlines() if line.startswith("| ") and "`l" in line]
    assert len(rows) == 45
