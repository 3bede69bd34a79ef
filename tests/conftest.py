"""Shared fixtures: CPU-only JAX, one warm evaluator per test session."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Triton's compiler (the optional `triton` extra) adds seconds to every GPU evaluation: off for
# the suite, on in tests/test_triton_compile.py.
os.environ.setdefault("JAXBENCH_TRITON_COMPILE", "0")
# This process checks on the host CPU only, like the tracers and the CPU-only runner, which
# the evaluator starts with this flag itself (evaluator/common/schema.py): the many small programs a
# test compiles and runs once compile faster unoptimized; numerics stay IEEE.
if "--xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_backend_optimization_level=0").strip()

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def evaluator():
    from jaxbench.evaluator import Evaluator

    with Evaluator(spares=1) as ev:
        yield ev


@pytest.fixture
def seven_stage_matmul(tmp_path):
    """l1_matmul's GPU seed with num_stages=7 instead of 3: its dot operands, staged 7 deep,
    fit an H200's 227 KiB of shared memory per block and not an A100's 163 KiB (Triton itself
    allocates 196,608 bytes for sm_80)."""
    from pathlib import Path

    seed = Path(__file__).parents[1] / "src/jaxbench/tasks/pallasbench/n08_matmul/seed_gpu.py"
    text = seed.read_text()
    assert text.count("num_stages=3") == 1, "update the fixture to the seed's compiler params"
    path = tmp_path / "gpu_matmul_seven_stages.py"
    path.write_text(text.replace("num_stages=3", "num_stages=7"))
    return path


# The quick tier (`pytest -m quick`, about a minute on 2 cores): the static policy, the
# judge's rules and budgets, the integrity check, the metrics and the comparison, the CLI's
# output contracts and exit codes, one seed per target through the whole evaluator, and the
# messages a newcomer reads. Node-id prefixes; the full suite is what CI runs.
QUICK = (
    "tests/test_static.py::", "tests/test_structure.py::", "tests/test_rules_budget.py::",
    "tests/test_budgets.py::", "tests/test_integrity.py::", "tests/test_metrics.py::",
    "tests/test_compare.py::", "tests/test_messages.py::", "tests/test_architecture.py::",
    "tests/test_documented_commands.py::",
    "tests/test_cli.py::test_tasks_json_lists_known_tasks",
    "tests/test_cli.py::test_tasks_table_shows_the_size_asked_for",
    "tests/test_cli.py::test_eval_json_is_one_object_and_exit_0_when_correct",
    "tests/test_cli.py::test_eval_exit_1_for_a_wrong_kernel",
    "tests/test_seeds.py::test_shipped_kernel_is_correct_in_interpret_mode[12p_rmsnorm-seed_",
)


def pytest_collection_modifyitems(config, items):
    """Marks the quick tier (``QUICK``). The mutation checks (tests/mutations/, marker
    `mutation`) each start a pytest process on a mutated copy of the package: minutes in all.
    They run when asked for with ``-m`` (CI runs ``-m mutation`` as a second step, .ci/run)
    and are left out of a plain run."""
    for item in items:
        if item.nodeid.startswith(QUICK):
            item.add_marker(pytest.mark.quick)
    if "mutation" in (config.getoption("markexpr") or ""):
        return
    kept = [item for item in items if item.get_closest_marker("mutation") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept
