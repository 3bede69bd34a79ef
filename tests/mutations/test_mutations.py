"""Mutation checks: each entry breaks one promise in a copy of the package and names the tests
that must then fail. The harness copies ``src/jaxbench`` to a temporary directory, applies the
one edit there, and runs the named tests in a fresh pytest process whose ``PYTHONPATH`` puts
the mutated copy first (tracers and runners inherit it). The check passes only when those
tests fail; a mutant they survive is a promise no test holds. Run with ``-m mutation``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.mutation

REPO = Path(__file__).parents[2]


def _package() -> Path:
    """The package under test: the one this interpreter imports (the checkout's src/jaxbench)."""
    import jaxbench

    return Path(jaxbench.__file__).parent


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str  # relative to src/jaxbench
    original: str  # must occur exactly once
    mutated: str
    tests: tuple[str, ...]  # node ids, relative to the repository root, that must fail


MUTATIONS = [
    Mutation(
        "pool_does_not_kill_a_timed_out_tracer", "evaluator/pool.py",
        "        worker.kill()  # always: nothing the candidate started may outlive the evaluation\n",
        "        pass  # mutant: the tracer is left running\n",
        ("tests/test_statuses.py::test_worker_leaves_no_process_or_directory",)),
    Mutation(
        "tpu_interpreter_outputs_dropped", "evaluator/judge/lowering.py",
        "                runs.append((label, key, jax.block_until_ready(fn(*inputs))))",
        "                jax.block_until_ready(fn(*inputs))  # mutant: outputs not compared",
        ("tests/adversarial/test_adversarial.py::test_cheat_gets_its_verdict"
         "[interpreter_detect_race.py]",)),
    Mutation(
        "library_exemption_removed", "evaluator/sandbox/tracer.py",
        '_PRELOADED_ROOTS = ("tokamax"', '_PRELOADED_ROOTS = ("not-tokamax"',
        ("tests/test_preloaded_libraries.py::test_exempt_library_is_imported_before_lock_down",)),
    Mutation(
        "library_exemption_for_every_root", "evaluator/sandbox/tracer.py",
        'if name.split(".")[0] in _PRELOADED_ROOTS:', "if True:",
        ("tests/test_preloaded_libraries.py::test_same_library_under_another_root_is_refused",)),
    Mutation(
        "judge_imports_the_tracer_dynamically", "evaluator/judge/rules.py",
        "from __future__ import annotations\n",
        "from __future__ import annotations\n\nimport importlib\n\n"
        "_LOADER = (importlib, 'jaxbench.evaluator.sandbox' + '.tracer')\n",
        ("tests/test_boundary.py::test_trusted_modules_never_import_candidate_loaders_or_exec",)),
    Mutation(
        "judge_reaches_exec_through_builtins", "evaluator/judge/structure.py",
        "from __future__ import annotations\n",
        "from __future__ import annotations\n\nimport builtins as _b\n\n_RUN = _b.exec\n",
        ("tests/test_boundary.py::test_trusted_modules_never_import_candidate_loaders_or_exec",)),
    Mutation(
        "outside_work_budget_doubled", "evaluator/judge/rules.py",
        "if task_flops > 0 and outside > max_fraction * task_flops:",
        "if task_flops > 0 and outside > 2 * max_fraction * task_flops:",
        ("tests/test_rules_budget.py::test_outside_work_over_the_budget_is_rejected",)),
    Mutation(
        "fast_p_counts_ties", "report/metrics.py",
        "return bool(correct) and s is not None and s > p",
        "return bool(correct) and s is not None and s >= p",
        ("tests/test_metrics.py::test_fast_p",)),
    Mutation(
        "fast_p_at_n_looks_past_n", "report/metrics.py",
        "for s in seq[:n]",
        "for s in seq[:n + 1]",
        ("tests/test_metrics.py::test_fast_p_at_n",)),
    Mutation(
        "review_flag_threshold_raised", "evaluator/parent.py",
        'if (result["speedup"] or 0) > SPEEDUP_REVIEW_THRESHOLD:',
        'if (result["speedup"] or 0) > 2 * SPEEDUP_REVIEW_THRESHOLD:',
        ("tests/test_device_assembly.py::"
         "test_device_figures_come_from_the_samples_and_a_big_speedup_is_flagged",)),
    Mutation(
        "speedup_from_wall_clock_despite_a_device_trace", "evaluator/timing.py",
        'headline, method = figures(device["ref_s"], device["kernel_s"]), DEVICE',
        'headline, method = wall, DEVICE',
        ("tests/test_device_assembly.py::"
         "test_device_figures_come_from_the_samples_and_a_big_speedup_is_flagged",)),
    # the trust boundary (issue: every verdict decided on the trusted side)
    Mutation(
        "tracer_never_sealed", "evaluator/sandbox/tracer.py",
        "    _seal(bound)\n", "    pass  # mutant: hand-over made unsealed\n",
        ("tests/test_tracer_order.py::test_candidate_code_runs_only_before_the_seal_and_status"
         "_is_written_last",)),
    # the jaxpr hand-over: the judge's reader
    Mutation(
        "reader_resolves_any_class", "evaluator/judge/jaxpr_reader.py",
        '        value = self._allowed.get(f"{module}:{name}")',
        '        value = self._allowed.get(f"{module}:{name}") or super().find_class(module, name)',
        ("tests/adversarial/test_handover.py::test_a_pickle_naming_a_class_off_the_list_runs"
         "_nothing",)),
    Mutation(
        "reader_resolves_primitives_by_name_alone", "evaluator/judge/jaxpr_reader.py",
        "            primitive = self._registry.get(key)",
        "            primitive = next((p for p in self._registry.values() if p.name == name),"
        " None)",
        ("tests/adversarial/test_handover.py::test_a_primitive_of_the_candidates_own_is_refused"
         "_by_name",)),
    Mutation(
        "tracer_reads_all_of_proc", "evaluator/sandbox/isolation.py",
        '    return [os.path.realpath("/proc/self"), *_PROC_MACHINE_FILES]',
        '    return ["/proc"]',
        ("tests/adversarial/test_adversarial.py::test_cheat_gets_its_verdict"
         "[proc_cmdlines_obfuscated.py]",)),
    Mutation(
        "results_not_made_printable", "evaluator/parent.py",
        "        return printable_result(result)", "        return result",
        ("tests/test_messages.py::test_terminal_escapes_from_the_kernel_never_reach_the_result",)),
    Mutation(
        "csv_formulas_left_live", "export/tables.py",
        "{k: _inert(v) for k, v in row.items()}", "{k: v for k, v in row.items()}",
        ("tests/test_results_export.py::test_csv_cells_that_would_start_a_formula_are_text",)),
    Mutation(
        "handed_over_types_believed", "evaluator/judge/lowering.py",
        "        core.check_jaxpr(closed.jaxpr)", "        pass  # mutant: types not checked",
        ("tests/adversarial/test_handover.py::test_a_jaxpr_with_a_forged_type_is_refused",)),
    Mutation(
        "reader_depth_unbounded", "evaluator/judge/jaxpr_reader.py",
        "            if depth > MAX_DEPTH:", "            if False:",
        ("tests/adversarial/test_handover.py::test_a_deeply_nested_pickle_is_refused_before_it"
         "_is_built",)),
    Mutation(
        "interpreters_fill_with_nan_again", "compat.py",
        "    primitives.uninitialized_value = random_value\n    if tpu_original is not None:\n"
        "        tpu_utils.get_uninitialized_value = tpu_value\n",
        "    pass  # mutant: the interpreters' own NaN fill\n",
        ("tests/adversarial/test_adversarial.py::test_cheat_gets_its_verdict"
         "[nan_scratch_detector.py]",)),
    Mutation(
        "two_fills_not_compared", "evaluator/judge/runner.py",
        "            _same_outputs(trials[0][2], jax.block_until_ready(other(*first)))",
        "            pass  # mutant: one fill only",
        ("tests/adversarial/test_adversarial.py::test_cheat_gets_its_verdict"
         "[uninitialised_nudge.py]",)),
    Mutation(
        "lookups_are_free_again", "evaluator/judge/pricing.py",
        "LOOKUP_FLOPS_PER_ELEMENT = 2.0", "LOOKUP_FLOPS_PER_ELEMENT = 0.0",
        ("tests/test_structure.py::test_gather_from_a_computed_table_by_data_is_priced_per"
         "_element",)),
    Mutation(
        "integrity_ignores_swapped_code", "evaluator/sandbox/integrity.py",
        "if now is not value or (code is not None and now.__code__ is not code):",
        "if now is not value:",
        ("tests/test_integrity.py::test_swapped_code_object_is_reported",
         "tests/adversarial/boundary/test_boundary_cheats.py::test_boundary_cheat_gets_its"
         "_verdict[harness_code_swap_obfuscated.py]")),
    # trace as the chip
    Mutation(
        "tracer_answers_as_the_host_cpu", "evaluator/sandbox/chip.py",
        "        jax.devices, jax.local_devices, jax.default_backend = \\\n"
        "            devices, local_devices, default_backend\n",
        "        pass  # mutant: the kernel asks the host CPU\n",
        ("tests/legit/test_legit.py::test_legit_kernel_is_correct[tpu_self_tuning_gemm.py]",
         "tests/test_chip.py::test_jax_ragged_paged_attention_chooses_its_blocks_for_the_chip")),
    Mutation(
        "invariant_windows_double_buffered", "evaluator/judge/budgets.py",
        "buffers = 1 if transform is not None and _invariant(transform, bounds) else 2",
        "buffers = 2  # mutant",
        ("tests/test_vmem_calibration.py::test_the_rule_gives_the_chips_answer"
         "[v5e-mlp-h6912-100mib]",)),
    Mutation(
        "no_uncertain_vmem_margin", "backends/chips.py",
        "VMEM_UNCERTAIN_FRACTION = 1 / 32", "VMEM_UNCERTAIN_FRACTION = 0",
        ("tests/test_vmem_calibration.py::test_the_rule_gives_the_chips_answer"
         "[v6e-gemm-f32-32.5mib]",)),
    Mutation(
        "pallasbench_judged_for_hopper", "backends/chips.py",
        'SUITE_GPU = {"pallasbench": "NVIDIA A100"}', "SUITE_GPU: dict[str, str] = {}",
        ("tests/test_chip.py::test_a_pallasbench_kernel_is_judged_for_the_a100_the_suite_is"
         "_defined_for",)),
    Mutation(
        "audit_fast_path_skips_frame_reads", "evaluator/sandbox/guards.py",
        "len(args) < 2 or args[1] not in _FRAME_ATTRIBUTES)):",
        "True)):",
        ("tests/adversarial/test_adversarial.py::test_cheat_gets_its_verdict"
         "[frame_obfuscated.py]",)),
    # a Mosaic GPU kernel with no trusted interpret export: the interpreter's check it was
    # the device lease: a runner's request for the device alone, granted without taking it
    Mutation(
        "lease_never_exclusive", "evaluator/judge/client.py",
        "                if lease is not None and wanted != held:",
        "                if lease is not None and wanted != held and wanted != EXCLUSIVE:",
        ("tests/test_device_lease.py::test_timings_never_overlap_anything_while_compiles_overlap",)),
    # the driver back to one evaluation at a time on a device (no pipelining)
    Mutation(
        "device_mode_serial", "agents/driver.py",
        "    eval_slots = threading.Semaphore(cluster.slots(mode, target) if cluster else workers)",
        "    eval_slots = threading.Semaphore(cluster.slots(mode, target) if cluster else\n"
        "                                     1 if mode == \"device\" else workers)",
        ("tests/test_device_assembly.py::test_a_device_mode_optimize_run_never_times_two_kernels_at_once"
         "[gpu]",)),
    # issue 36: the kernel does the work
    Mutation(
        "splat_constants_are_raw_input_again", "evaluator/judge/structure.py",
        "            if data == ():\n",
        "            if op.name == \"stablehlo.constant\":\n                out = True\n"
        "            elif data == ():\n",
        ("tests/adversarial/outside_work/test_outside_work.py::test_work_left_in_xla_is_refused_by_its_rule[one_hot_splat_concat.py]",
         "tests/adversarial/outside_work/test_outside_work.py::test_work_left_in_xla_is_refused_by_its_rule[relu_sign_table.py]")),
    Mutation(
        "outside_share_of_the_module_unchecked", "evaluator/judge/rules.py",
        'if work == "flops" and not glue and figures["outside_share"] > max_fraction:',
        "if False:",
        ("tests/adversarial/outside_work/test_outside_work.py::test_work_left_in_xla_is_refused_by_its_rule[gemv_shortcut_in_xla.py]",)),
    Mutation(
        "data_movement_bytes_unchecked", "evaluator/judge/rules.py",
        '        if work == "bytes":', "        if False:",
        ("tests/adversarial/outside_work/test_outside_work.py::test_work_left_in_xla_is_refused_by_its_rule[embedding_gather_in_xla.py]",)),
    Mutation(
        "kernel_flops_ignore_the_grid", "evaluator/judge/kernel_work.py",
        "flops = times * programs * (", "flops = times * (",
        ("tests/test_kernel_work.py::test_a_tiled_matmul_counts_2mkn_and_its_operands",)),
    Mutation(
        "outputs_without_kernel_not_recorded", "evaluator/judge/kernel_work.py",
        "    work.unreached = outputs_without_kernel(closed, lines)",
        "    work.unreached = []",
        ("tests/test_kernel_work.py::test_every_output_must_come_out_of_a_kernel",)),
    Mutation(
        "taxonomy_ignores_rule_codes", "report/taxonomy.py",
        "    if isinstance(rule, str) and rule in _RULE_CATEGORIES:", "    if False:",
        ("tests/test_report_taxonomy.py::test_a_rule_code_decides_whatever_the_message_says",)),
    Mutation(
        "rule_code_lost_between_judge_and_parent", "evaluator/parent.py",
        "rule=rule if rule in RULES else None)", "rule=None)",
        ("tests/adversarial/outside_work/test_outside_work.py::test_work_left_in_xla_is_refused_by_its_rule[gemv_shortcut_in_xla.py]",)),
    Mutation(
        "validator_accepts_undeclared_data_movement", "validation/checks.py",
        '    if movement and task.work != "bytes":', "    if False:",
        ("tests/test_validate.py::test_a_data_movement_task_must_declare_bytes",)),
]


def mutate(mutation: Mutation, root: Path) -> Path:
    """A copy of the package under ``root/src`` with the mutation applied; returns ``root/src``."""
    src = root / "src"
    shutil.copytree(_package(), src / "jaxbench", ignore=shutil.ignore_patterns("__pycache__"))
    path = src / "jaxbench" / mutation.file
    text = path.read_text()
    count = text.count(mutation.original)
    assert count == 1, (f"{mutation.name}: the original snippet occurs {count} times in "
                        f"{mutation.file}; update the mutation to the current source")
    path.write_text(text.replace(mutation.original, mutation.mutated))
    return src


def run_against(src: Path, tests: tuple[str, ...], timeout_s: float = 600) -> tuple[int, str]:
    """Runs ``tests`` with the package at ``src`` first on the path; (exit code, output)."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join([str(src)] + (
               [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}
    where = subprocess.run([sys.executable, "-c", "import jaxbench; print(jaxbench.__file__)"],
                           capture_output=True, text=True, env=env, cwd=REPO, check=True)
    assert where.stdout.strip().startswith(str(src)), f"the mutant is not imported: {where.stdout}"
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                          "-o", "addopts=", *tests], capture_output=True, text=True, env=env,
                         cwd=REPO, timeout=timeout_s)
    return out.returncode, out.stdout + out.stderr


@pytest.fixture(scope="session")
def baseline(request, tmp_path_factory):
    """The selected mutations' tests pass on an unmutated copy (one pytest run for all): a
    failure under a mutant then means the mutant was caught, not that the test was broken."""
    wanted = {item.callspec.params["mutation"].name for item in request.session.items
              if getattr(item, "originalname", None) == "test_mutant_is_killed"}
    tests = tuple(dict.fromkeys(t for m in MUTATIONS if m.name in wanted for t in m.tests))
    if os.environ.get("JAXBENCH_MUTATION_BASELINE") == "0":  # the caller just ran them (CI)
        return tests
    src = tmp_path_factory.mktemp("unmutated") / "src"
    shutil.copytree(_package(), src / "jaxbench", ignore=shutil.ignore_patterns("__pycache__"))
    code, output = run_against(src, tests)
    assert code == 0, f"the mutations' tests fail without a mutant:\n{output[-3000:]}"
    return tests


# Mutants tried at once: two on a small host (each mostly waits on its tracers and runner; on 2
# cores two took 1 min 54 s where one took 3 min 0 s and three 1 min 59 s), up to four with more.
WORKERS = max(2, min(4, (os.cpu_count() or 2) // 2))


@pytest.fixture(scope="session")
def outcomes(request, tmp_path_factory, baseline):
    """Every selected mutant, started WORKERS at a time once the baseline passed; each test
    waits for its own."""
    from concurrent.futures import ThreadPoolExecutor

    def attempt(mutation: Mutation) -> tuple[int, str]:
        root = tmp_path_factory.mktemp(mutation.name)
        return run_against(mutate(mutation, root), mutation.tests)

    wanted = [item.callspec.params["mutation"] for item in request.session.items
              if getattr(item, "originalname", None) == "test_mutant_is_killed"]
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {m.name: pool.submit(attempt, m) for m in wanted}
        yield futures
        for future in futures.values():
            future.cancel()


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_mutant_is_killed(mutation, outcomes, baseline):
    assert set(mutation.tests) <= set(baseline)
    code, output = outcomes[mutation.name].result()
    tail = output[-3000:]
    # 1: tests ran and failed. Not 0 (the mutant survived), not 2-5 (interrupted, usage error,
    # nothing collected): those would hide a survivor.
    assert code == 1, f"{mutation.name} survived (pytest exit {code}):\n{tail}"
    assert " failed" in output and " error" not in output.splitlines()[-1], tail
