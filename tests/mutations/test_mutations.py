"""Mutation checks: each entry breaks one promise in a copy of the package and names the tests
that must then fail. The harness copies the package (``src/jaxbench``, or the folder
``JAXBENCH_MUTATION_PACKAGE`` names) to a temporary directory, applies the one edit there, and
runs the named tests in a fresh pytest process whose ``PYTHONPATH`` puts the mutated copy first
(tracers and runners inherit it). The check passes only when those tests fail; a mutant they
survive is a promise no test holds. Run with ``-m mutation``.

An entry finds its place by what formatting leaves alone (tests/mutations/anchor.py): the unit
it lives in (a function, method or class by qualified name, a module-level name, or "" for the
whole file) and, in it, the one match of its ``original`` with whitespace and comments set
aside. ``test_every_mutant_applies_once`` (no marker: in every plain run) checks each still
applies, in the source as written and after ``ruff format``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from anchor import apply, squeeze

REPO = Path(__file__).parents[2]


def _package() -> Path:
    """The package to mutate: the folder JAXBENCH_MUTATION_PACKAGE names (a reformatted copy,
    say), else the one this interpreter imports (the checkout's src/jaxbench)."""
    if os.environ.get("JAXBENCH_MUTATION_PACKAGE"):
        return Path(os.environ["JAXBENCH_MUTATION_PACKAGE"]).resolve()
    import jaxbench

    return Path(jaxbench.__file__).parent


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str  # relative to src/jaxbench
    where: str  # the unit: "function", "Class.method", "outer.inner", a module-level name, "" (file)
    original: str  # matches exactly once in the unit, whitespace and comments aside
    mutated: str  # replaces that match; its later lines are indented as the match's line
    tests: tuple[str, ...]  # node ids, relative to the repository root, that must fail

    def applied(self, text: str) -> str:
        """``text``, this entry's file, with the mutation applied; an error where the entry
        does not apply once or leaves a file Python cannot compile."""
        python = self.file.endswith(".py")
        try:
            assert squeeze(self.original, python)[0] != squeeze(self.mutated, python)[0], \
                "the mutated text changes no code"
            mutated = apply(text, self.where, self.original, self.mutated, python)
            if python:
                compile(mutated, self.file, "exec")
        except (AssertionError, SyntaxError) as exc:
            raise AssertionError(f"{self.name} ({self.file}): {exc}; update the entry to the "
                                 f"current source") from exc
        return mutated


# node-id prefixes of the test files several entries name
_S = "tests/test_report_samples.py::"
_H = "tests/test_report_html.py::"
_T = "tests/test_optimize_interrupt.py::"
_F = "tests/test_task_file.py::"
_M = "tests/test_messages_first_steps.py::"
_L = "tests/legit/test_legit.py::test_legit_kernel_is_correct["
_TK = "tests/legit/test_legit.py::test_legit_tokamax_kernel_is_correct["
_C = "tests/test_handover_census.py::"
_B = "tests/adversarial/broken_patterns/test_broken_patterns.py::test_broken_pattern_is_not_correct["
_SL = "tests/test_static_libraries.py::"

MUTATIONS = [
    # issue 48: what the hand-over reads, the race rule's hints and trials, the kernel trees
    Mutation(
        "reader_allow_list_renarrowed", "evaluator/judge/jaxpr_reader.py", "_Reader.find_class",
        'value = self._allowed.get(f"{module}:{name}") or self._derived.get(f"{module}:{name}")',
        'value = self._allowed.get(f"{module}:{name}")  # mutant: nothing derived',
        (_L + "gpu_atomic_row_sum.py]", _L + "gpu_split_k_gemm.py]",
         _C + "test_the_triton_atomic_enum_is_derived[AtomicOpType]")),
    Mutation(
        "derived_classes_without_enums", "evaluator/judge/jaxpr_reader.py", "unread_reason",
        "    if issubclass(value, enum.Enum):\n        for klass in value.__mro__:",
        "    if False:  # mutant: enums are not derived\n        for klass in value.__mro__:",
        (_C + "test_every_primitive_parameter_class_of_this_jax_is_read_or_refused_for_a_reason",
         _L + "gpu_atomic_row_sum.py]")),
    Mutation(
        "derived_classes_admit_callables", "evaluator/judge/jaxpr_reader.py", "_BEHAVIOUR",
        '_BEHAVIOUR = ("__call__", "__setstate__", "__getattr__", "__del__")',
        '_BEHAVIOUR = ("__setstate__", "__getattr__", "__del__")  # mutant',
        (_C + "test_the_derived_list_holds_classes_only_and_no_callable_instances",)),
    Mutation(
        "own_jax_class_rejected_as_cheating", "evaluator/judge/jaxpr_reader.py", "_Reader.find_class",
        "        if value is None and _own_class(module, name):",
        "        if value is None and False:  # mutant: every unread class is `rejected`",
        (_C + "test_a_jax_class_the_reader_does_not_read_is_unverified_and_named",)),
    Mutation(
        "prng_implementation_not_named", "evaluator/sandbox/handover.py", "_Pickler.persistent_id",
        "                return (PRNG_IMPL_TAG, name)",
        "                return None  # mutant: pickled as its tuple of functions",
        (_L + "tpu_model_prng_weights.py]", _L + "gpu_model_prng_weights.py]",
         _C + "test_prng_keys_traced_in_a_kernel_module_are_read")),
    Mutation(
        "prng_key_array_not_described", "evaluator/sandbox/handover.py", "_Pickler.persistent_id",
        "                return (PRNG_KEY_TAG, parts[0], parts[1])",
        "                return None  # mutant",
        (_C + "test_a_concrete_prng_key_crosses_as_its_implementation_and_data",)),
    Mutation(
        "tensorcore_mesh_not_described", "evaluator/sandbox/handover.py", "_Pickler.persistent_id",
        "                return (TENSORCORE_MESH_TAG, *description)",
        "                return None  # mutant: its object-dtype devices are pickled",
        (_L + "tpu_core_map_pipeline.py]", _C + "test_a_tensorcore_mesh_crosses_as_its_description")),
    Mutation(
        "race_rule_blind_to_hints", "evaluator/judge/gpu/race.py", "_HINTS",
        '_HINTS = frozenset({"multiple_of", "max_contiguous", "optimization_barrier"})',
        "_HINTS: frozenset[str] = frozenset()  # mutant",
        (_L + "gpu_split_k_gemm.py]",)),
    Mutation(
        "race_rule_ignores_trial_inputs", "evaluator/judge/gpu/race.py", "_operand_values",
        "    if inputs is not None and len(inputs) == len(args):",
        "    if False:  # mutant: the trials' inputs are never read",
        (_L + "gpu_grouped_rows_from_sizes.py]", _TK + "gpu_tokamax_ragged_dot_11p.py]")),
    Mutation(
        "race_not_rechecked_on_trials", "evaluator/judge/runner.py", "_Judging.trials",
        "                    _race_on_trial(self, i, inputs)\n",
        "                    pass  # mutant: an undecided race rule is skipped\n",
        (_B + "gpu_grouped_rows_overlap.py]",)),
    Mutation(
        "library_kernel_tree_renarrowed", "evaluator/parent/static.py", "_library_kernel_module",
        '    return name in library_kernel_modules(name.split(".")[0])',
        '    return re.match(r"tokamax\\._src\\.ops\\.\\w+\\.pallas_(mosaic_tpu|triton)$", name) '
        'is not None  # mutant: the old hand-written pattern',
        (_TK + "tpu_tokamax_splash_attention.py]",
         _SL + "test_tokamax_kernel_modules_may_be_imported[from tokamax._src.ops.experimental.tpu."
         "splash_attention import splash_attention_kernel]")),
    Mutation(
        "kernel_module_reexports_unchecked", "evaluator/parent/static.py", "_PolicyVisitor.visit_ImportFrom",
        "            elif _library_kernel_module(module) and reexported_module(module, alias.name):",
        "            elif False:  # mutant: a kernel module hands over whatever it imported",
        (_SL + "test_names_a_kernel_module_imported_are_judged_as_direct_imports["
         "from tokamax._src.ops.ragged_dot.pallas_mosaic_tpu import types-verdict0]",)),
    Mutation(
        "private_library_import_rejected", "evaluator/parent/static.py", "_PolicyVisitor._import",
        "        if _refused_library_module(name):",
        "        if False:  # mutant: a private library module is `rejected`",
        (_SL + "test_other_private_tokamax_modules_are_a_policy_refusal[from tokamax._src import utils]",)),
    Mutation(
        "pool_does_not_kill_a_timed_out_tracer", "evaluator/parent/pool.py", "TracerPool.run",
        "        tracer.kill()\n",
        "        pass  # mutant: the tracer is left running\n",
        ("tests/test_statuses.py::test_worker_leaves_no_process_or_directory",)),
    Mutation(
        "tpu_interpreter_outputs_dropped", "evaluator/judge/lowering.py", "interpreter_runs",
        "                runs.append((label, key, jax.block_until_ready(fn(*inputs))))",
        "                jax.block_until_ready(fn(*inputs))  # mutant: outputs not compared",
        ("tests/adversarial/test_adversarial.py::test_cheat_gets_its_verdict"
         "[interpreter_detect_race.py]",)),
    Mutation(
        "library_left_out_of_the_preload", "evaluator/sandbox/tracer.py", "_PRELOADED_TREES",
        '("jax", ("_src",', '("not-jax", ("_src",',
        ("tests/adversarial/host_profiles/test_host_profiles.py::"
         "test_the_honest_control_stays_correct[full]",)),
    Mutation(
        "blocked_import_not_named", "evaluator/sandbox/tracer.py", "_verdict",
        "blocked = _blocked_import(exc)", 'blocked = ""',
        ("tests/test_preloaded_libraries.py::"
         "test_a_module_left_out_of_the_preload_is_a_named_compile_error",)),
    Mutation(
        "judge_imports_the_tracer_dynamically", "evaluator/judge/rules.py", "",
        "from __future__ import annotations\n",
        "from __future__ import annotations\n\nimport importlib\n\n"
        "_LOADER = (importlib, 'jaxbench.evaluator.sandbox' + '.tracer')\n",
        ("tests/test_boundary.py::test_trusted_modules_never_import_candidate_loaders_or_exec",)),
    Mutation(
        "judge_reaches_exec_through_builtins", "evaluator/judge/structure.py", "",
        "from __future__ import annotations\n",
        "from __future__ import annotations\n\nimport builtins as _b\n\n_RUN = _b.exec\n",
        ("tests/test_boundary.py::test_trusted_modules_never_import_candidate_loaders_or_exec",)),
    Mutation(
        "outside_work_budget_doubled", "evaluator/judge/rules.py", "check_target",
        "if task_flops > 0 and outside > max_fraction * task_flops:",
        "if task_flops > 0 and outside > 2 * max_fraction * task_flops:",
        ("tests/test_rules_budget.py::test_outside_work_over_the_budget_is_no_pallas_with_its_code",)),
    Mutation(
        "fast_p_counts_ties", "report/metrics.py", "_beats",
        "return bool(correct) and s is not None and s > p",
        "return bool(correct) and s is not None and s >= p",
        ("tests/test_metrics.py::test_fast_p",)),
    Mutation(
        "fast_p_at_n_looks_past_n", "report/metrics.py", "fast_p_at_n",
        "for s in seq[:n]",
        "for s in seq[:n + 1]",
        ("tests/test_metrics.py::test_fast_p_at_n",)),
    Mutation(
        "review_flag_threshold_raised", "evaluator/parent/assemble.py", "assemble",
        "and (speedup or 0) > SPEEDUP_REVIEW_THRESHOLD else None,",
        "and (speedup or 0) > 2 * SPEEDUP_REVIEW_THRESHOLD else None,",
        ("tests/test_device_assembly.py::"
         "test_device_figures_come_from_the_samples_and_a_big_speedup_is_flagged",)),
    Mutation(
        "speedup_from_wall_clock_despite_a_device_trace", "evaluator/parent/figures.py", "summarize",
        "headline, method = figures(ref_dev, ker_dev, paired), DEVICE",
        'headline, method = wall, DEVICE',
        ("tests/test_device_assembly.py::"
         "test_device_figures_come_from_the_samples_and_a_big_speedup_is_flagged",)),
    # the trust boundary (issue: every verdict decided on the trusted side)
    Mutation(
        "tracer_never_sealed", "evaluator/sandbox/tracer.py", "_step_handover",
        "    _seal(run.bound)\n", "    pass  # mutant: hand-over made unsealed\n",
        ("tests/test_tracer_order.py::test_candidate_code_runs_only_before_the_seal_and_status"
         "_is_written_last",)),
    # the jaxpr hand-over: the judge's reader
    Mutation(
        "reader_resolves_any_class", "evaluator/judge/jaxpr_reader.py", "_Reader.find_class",
        '        value = self._allowed.get(f"{module}:{name}")',
        '        value = self._allowed.get(f"{module}:{name}") or super().find_class(module, name)',
        ("tests/adversarial/test_handover.py::test_a_pickle_naming_a_class_off_the_list_runs"
         "_nothing",)),
    Mutation(
        "reader_resolves_primitives_by_name_alone", "evaluator/judge/jaxpr_reader.py",
        "_Reader.persistent_load",
        "            primitive = self._registry.get(key)",
        "            primitive = next((p for p in self._registry.values() if p.name == name),"
        " None)",
        ("tests/adversarial/test_handover.py::test_a_primitive_of_the_candidates_own_is_refused"
         "_by_name",)),
    Mutation(
        "tracer_reads_all_of_proc", "evaluator/sandbox/isolation.py", "own_procfs",
        '    return [os.path.realpath("/proc/self"), *_PROC_MACHINE_FILES]',
        '    return ["/proc"]',
        ("tests/adversarial/test_adversarial.py::test_cheat_gets_its_verdict"
         "[proc_cmdlines_obfuscated.py]",)),
    Mutation(
        "results_not_made_printable", "evaluator/parent/assemble.py", "assemble",
        "    return EvaluationResult(**printable_result(fields))",
        "    return EvaluationResult(**fields)",
        ("tests/test_messages.py::test_terminal_escapes_from_the_kernel_never_reach_the_result",)),
    Mutation(
        "csv_formulas_left_live", "export/tables.py", "write",
        "{k: _inert(v) for k, v in row.items()}", "{k: v for k, v in row.items()}",
        ("tests/test_results_export.py::test_csv_cells_that_would_start_a_formula_are_text",)),
    Mutation(
        "handed_over_types_believed", "evaluator/judge/lowering.py", "well_formed",
        "        core.check_jaxpr(closed.jaxpr)", "        pass  # mutant: types not checked",
        ("tests/adversarial/test_handover.py::test_a_jaxpr_with_a_forged_type_is_refused",)),
    Mutation(
        "reader_depth_unbounded", "evaluator/judge/jaxpr_reader.py", "_prescan",
        "            if depth > MAX_DEPTH:", "            if False:",
        ("tests/adversarial/test_handover.py::test_a_deeply_nested_pickle_is_refused_before_it"
         "_is_built",)),
    Mutation(
        "interpreters_fill_with_nan_again", "compat.py", "uninitialized_fill",
        "    primitives.uninitialized_value = random_value\n    if tpu_original is not None:\n"
        "        tpu_utils.get_uninitialized_value = tpu_value\n",
        "    pass  # mutant: the interpreters' own NaN fill\n",
        ("tests/adversarial/test_adversarial.py::test_cheat_gets_its_verdict"
         "[nan_scratch_detector.py]",)),
    Mutation(
        "two_fills_not_compared", "evaluator/judge/runner.py", "_Judging.trials",
        "            _same_outputs(trials[0][2], jax.block_until_ready(other(*first)),\n"
        "                                  lowered.traces.get(self.size))",
        "            pass  # mutant: one fill only",
        ("tests/adversarial/test_adversarial.py::test_cheat_gets_its_verdict"
         "[uninitialised_nudge.py]",)),
    Mutation(
        "lookups_are_free_again", "evaluator/judge/pricing.py", "LOOKUP_FLOPS_PER_ELEMENT",
        "LOOKUP_FLOPS_PER_ELEMENT = 2.0", "LOOKUP_FLOPS_PER_ELEMENT = 0.0",
        ("tests/test_structure.py::test_gather_from_a_computed_table_by_data_is_priced_per"
         "_element",)),
    Mutation(
        "integrity_ignores_swapped_code", "evaluator/sandbox/integrity.py", "Snapshot.changed",
        "if now is not value or (code is not None and now.__code__ is not code):",
        "if now is not value:",
        ("tests/test_integrity.py::test_swapped_code_object_is_reported",
         "tests/adversarial/boundary/test_boundary_cheats.py::test_boundary_cheat_gets_its"
         "_verdict[harness_code_swap_obfuscated.py]")),
    Mutation(
        "integrity_refresh_skips_modules_imported_since", "evaluator/sandbox/integrity.py",
        "Snapshot.refresh",
        "if known is None or known[0] is not mod or self._moved(name):",
        "if known is not None and (known[0] is not mod or self._moved(name)):",
        ("tests/test_integrity.py::test_a_refreshed_snapshot_watches_modules_imported_and"
         "_callables_added_since",)),
    Mutation(
        "integrity_refresh_misses_added_callables", "evaluator/sandbox/integrity.py",
        "Snapshot._moved",
        "if len(namespace) != size or any(", "if any(",
        ("tests/test_integrity.py::test_a_refreshed_snapshot_watches_modules_imported_and"
         "_callables_added_since",)),
    # trace as the chip
    Mutation(
        "tracer_answers_as_the_host_cpu", "evaluator/sandbox/chip.py", "as_chip",
        "                setattr(namespace, question.name, answer)\n",
        "                pass  # mutant: the kernel asks the host CPU\n",
        ("tests/legit/test_legit.py::test_legit_kernel_is_correct[tpu_self_tuning_gemm.py]",
         "tests/test_chip.py::test_jax_ragged_paged_attention_chooses_its_blocks_for_the_chip")),
    Mutation(
        "invariant_windows_double_buffered", "evaluator/judge/tpu/mosaic_vmem.py", "_entry_rows",
        "1 if transform is not None and _invariant(transform, bounds) else 2",
        "2",  # mutant
        ("tests/test_vmem_calibration.py::test_the_rule_gives_the_chips_answer"
         "[v5e-mlp-h6912-100mib]",)),
    Mutation(
        "no_uncertain_vmem_margin", "backends/chips.py", "VMEM_UNCERTAIN_FRACTION",
        "VMEM_UNCERTAIN_FRACTION = 1 / 32", "VMEM_UNCERTAIN_FRACTION = 0",
        ("tests/test_vmem_calibration.py::test_the_rule_gives_the_chips_answer"
         "[v6e-gemm-f32-32.5mib]",)),
    Mutation(
        "pallasbench_judged_for_hopper", "backends/chips.py", "SUITE_GPU",
        'SUITE_GPU = {"pallasbench": "NVIDIA A100"}', "SUITE_GPU: dict[str, str] = {}",
        ("tests/test_chip.py::test_a_pallasbench_kernel_is_judged_for_the_a100_the_suite_is"
         "_defined_for",)),
    Mutation(
        "audit_fast_path_skips_frame_reads", "evaluator/sandbox/guards.py", "_hook",
        "len(args) < 2 or args[1] not in _FRAME_ATTRIBUTES)):",
        "True)):",
        ("tests/adversarial/test_adversarial.py::test_cheat_gets_its_verdict"
         "[frame_obfuscated.py]",)),
    # a Mosaic GPU kernel with no trusted interpret export: the interpreter's check it was
    # the device lease: a runner's request for the device alone, granted without taking it
    Mutation(
        "lease_never_exclusive", "evaluator/parent/judge_client.py", "Runner.request",
        "                if lease is not None and wanted != held:",
        "                if lease is not None and wanted != held and wanted != EXCLUSIVE:",
        ("tests/test_device_lease.py::test_timings_never_overlap_anything_while_compiles_overlap",)),
    # the driver back to one evaluation at a time on a device (no pipelining)
    Mutation(
        "device_mode_serial", "agents/driver.py", "optimize",
        "        slots = cluster.slots(settings.mode, settings.target) if cluster else workers\n",
        "        slots = cluster.slots(settings.mode, settings.target) if cluster else \\\n"
        "            1 if settings.mode == \"device\" else workers\n",
        ("tests/test_device_assembly.py::test_a_device_mode_optimize_run_never_times_two_kernels_at_once"
         "[gpu]",)),
    # issue 36: the kernel does the work
    Mutation(
        "splat_constants_are_raw_input_again", "evaluator/judge/structure.py", "_Analyzer.raw",
        "            if data == ():\n",
        "            if op.name == \"stablehlo.constant\":\n                out = True\n"
        "            elif data == ():\n",
        ("tests/adversarial/outside_work/test_outside_work.py::test_work_left_in_xla_is_refused_by_its_rule[one_hot_splat_concat.py]",
         "tests/adversarial/outside_work/test_outside_work.py::test_work_left_in_xla_is_refused_by_its_rule[relu_sign_table.py]")),
    Mutation(
        "outside_share_of_the_module_unchecked", "evaluator/judge/rules.py", "check_target",
        'if work == "flops" and not glue and figures["outside_share"] > max_fraction:',
        "if False:",
        ("tests/adversarial/outside_work/test_outside_work.py::test_work_left_in_xla_is_refused_by_its_rule[gemv_shortcut_in_xla.py]",)),
    Mutation(
        "data_movement_bytes_unchecked", "evaluator/judge/rules.py", "check_target",
        '        if work == "bytes":', "        if False:",
        ("tests/adversarial/outside_work/test_outside_work.py::test_work_left_in_xla_is_refused_by_its_rule[embedding_gather_in_xla.py]",)),
    Mutation(
        "kernel_flops_ignore_the_grid", "evaluator/judge/kernel_work.py", "_kernel",
        "flops, used = _Body(values, programs).work(body, inputs, [], mask, dead)",
        "flops, used = _Body(values, programs).work(body, inputs, [], mask, dead)\n"
        "flops = np.max(flops)  # mutant: the largest program's, not the grid's sum",
        ("tests/test_kernel_work.py::test_a_tiled_matmul_counts_2mkn_and_its_operands",)),
    Mutation(
        "outputs_without_kernel_not_recorded", "evaluator/judge/kernel_work.py", "count",
        "    work.unreached = outputs_without_kernel(closed, lines)",
        "    work.unreached = []",
        ("tests/test_kernel_work.py::test_every_output_must_come_out_of_a_kernel",)),
    Mutation(
        "taxonomy_ignores_rule_codes", "contract/codes.py", "category_of",
        "    if rule in RULES:\n        return RULE_CATEGORY[Rule(rule)]", "    if False:\n        pass",
        ("tests/test_report_taxonomy.py::test_every_rule_code_files_its_failure_whatever_the_message"
         "[gpu_race]",)),
    Mutation(
        "rule_code_lost_between_judge_and_parent", "evaluator/parent/judge_client.py", "ran",
        "rule=rule if rule in RULES else Rule.HARNESS)", "rule=Rule.HARNESS)",
        ("tests/adversarial/outside_work/test_outside_work.py::test_work_left_in_xla_is_refused_by_its_rule[gemv_shortcut_in_xla.py]",)),
    Mutation(
        "validator_accepts_undeclared_data_movement", "validation/checks.py", "check_work",
        '    if movement and task.work != "bytes":', "    if False:",
        ("tests/test_validate.py::test_a_data_movement_task_must_declare_bytes",)),
    # issue 37: exact or unsure
    Mutation(
        "default_device_answers_the_host", "evaluator/sandbox/chip.py",
        "_default_device.get_default_device",
        "        return asked.device",
        "        return asked.original()",
        ("tests/test_chip.py::test_each_question_answers_as_the_chip_and_as_the_host_after"
         "[get_default_device-NVIDIA A100]",
         "tests/legit/test_legit.py::test_legit_tokamax_kernel_is_correct[gpu_tokamax_layer_norm.py]")),
    Mutation(
        "tpu_info_questions_unanswered", "compat.py", "tpu_info_modules",
        '    names = [function.__module__, "jax._src.tpu_info", "jax._src.pallas.mosaic.tpu_info"]',
        "    names = []",
        ("tests/test_chip.py::test_each_question_answers_as_the_chip_and_as_the_host_after"
         "[get_device_kind-TPU v5p]",
         "tests/legit/test_legit.py::test_legit_tokamax_kernel_is_correct[tpu_tokamax_ragged_dot.py]")),
    Mutation(
        "tpu_info_cache_kept", "compat.py", "forget_tpu_info",
        '        clear = getattr(getattr(module, "get_tpu_info", None), "cache_clear", None)',
        "        clear = None",
        ("tests/test_chip.py::test_a_tpu_kernel_sees_its_tpu",)),
    Mutation(
        "make_mesh_over_the_host", "evaluator/sandbox/chip.py", "_make_mesh.make_mesh",
        "            devices = [asked.device]", "            pass",
        ("tests/test_chip.py::test_each_question_answers_as_the_chip_and_as_the_host_after"
         "[make_mesh-TPU v5p]",
         "tests/legit/test_legit.py::test_legit_kernel_is_correct[tpu_one_device_shard_map.py]")),
    Mutation(
        "config_platform_answers_the_host", "evaluator/sandbox/chip.py", "_config",
        '        "jax_platforms": "tpu" if asked.chip.platform == "tpu" else "cuda",',
        '        "jax_platforms": asked.original.jax_platforms,',
        ("tests/test_chip.py::test_each_question_answers_as_the_chip_and_as_the_host_after"
         "[config-TPU v5p]",)),
    Mutation(
        "chip_context_mesh_entered", "evaluator/sandbox/chip.py", "as_chip",
        "        yield chip\n",
        "        yield jax.sharding.use_abstract_mesh(jax.sharding.AbstractMesh((1,), ('c',), "
        "(jax.sharding.AxisType.Auto,))).__enter__() or chip\n",
        ("tests/test_chip.py::test_no_context_the_program_can_see",
         "tests/legit/test_legit.py::test_legit_kernel_is_correct[tpu_one_device_shard_map.py]")),
    Mutation(
        "concrete_mesh_handed_over", "evaluator/sandbox/handover.py", "_Pickler.reducer_override",
        "        if isinstance(obj, self._mesh):", "        if False:",
        ("tests/test_chip.py::test_the_judge_names_the_chip_to_lowering_and_the_interpret_run_agrees"
         "[tpu-one_device_shard_map]",
         "tests/legit/test_legit.py::test_legit_kernel_is_correct[tpu_one_device_shard_map.py]")),
    Mutation(
        "judge_names_no_chip", "evaluator/judge/exporting.py", "export",
        "    closed = compat.on_chip(closed, chip_platform, kind, cores)", "    pass",
        ("tests/test_chip.py::test_the_judge_names_the_chip_to_lowering_and_the_interpret_run_agrees"
         "[tpu-plain]",)),
    Mutation(
        "any_chip_in_a_context_accepted", "evaluator/judge/lowering.py", "well_formed",
        "        if kind is not None and kind not in (device_kind, judged):", "        if False:",
        ("tests/adversarial/test_handover.py::test_an_equation_lowered_for_another_chip_is_refused",)),
    Mutation(
        "custom_derivatives_handed_over_as_closed_call", "evaluator/sandbox/handover.py", "_primal",
        "    called = compat.as_jit_call(eqn, inner, eqn.primitive.name)",
        "    called = None",
        ("tests/test_tokamax.py::test_tokamax_expert_is_correct[13p_cross_entropy-tpu]",)),
    Mutation("tool_faults_counts_a_raise_as_a_crash", "evaluator/judge/tool_faults.py", "classify",
        '        if not statement or statement.startswith("raise"):',
        '        if not statement:',
        ("tests/test_tool_faults.py::test_an_out_of_bounds_access_the_tpu_interpreter_finds_stays_the_kernels",)),
    Mutation("tool_faults_ignores_callback_exceptions", "evaluator/judge/tool_faults.py", "classify_run",
        '    if captured and type(_diagnosis(exc)).__name__ in WRAPPERS:',
        '    if False:',
        ("tests/test_tool_faults.py::test_a_tpu_interpreter_crash_leaves_the_kernel_to_the_interpret_mode_trials",)),
    Mutation("tpu_interpreter_crash_charged_to_the_kernel", "evaluator/judge/lowering.py", "interpreter_runs",
        '                    fault = tool_faults.classify_run(exc, captured, INTERPRETERS[label])',
        '                    fault = None',
        ("tests/test_tool_faults.py::test_a_tpu_interpreter_crash_leaves_the_kernel_to_the_interpret_mode_trials",)),
    Mutation("lowering_crash_charged_to_the_kernel", "evaluator/judge/lowering.py", "_target_modules",
        '''            fault = tool_faults.classify(exc, f"JAX's lowering for {target}")''',
        '''            fault = None''',
        ("tests/test_tool_faults.py::test_a_crash_of_jaxs_lowering_is_unverified_not_a_compile_error",)),
    Mutation("interpret_run_crash_charged_to_the_kernel", "evaluator/judge/runner.py", "_Judging.trials",
        "                raise StageFailure(Status.UNVERIFIED, Stage.CORRECT, fault.describe()[:2000],",
        "                raise StageFailure(Status.RUNTIME_ERROR, Stage.CORRECT, fault.describe()[:2000],",
        ("tests/test_tool_faults.py::test_a_crash_of_the_interpret_mode_run_is_unverified",)),
    Mutation("tool_faults_not_warned", "evaluator/parent/chip_checks.py", "response_taken",
        '    fault_warnings, faults = tool_faults(response.tool_faults)',
        '    fault_warnings, faults = tool_faults(None)',
        ("tests/test_tool_faults.py::test_a_kernel_both_jax_interpreters_crash_on_is_unverified_with_the_jax_frames",)),
    Mutation("smem_estimate_refuses_alone", "evaluator/judge/gpu/triton_rules.py", "check",
        '    if shared > limit and least > limit:',
        '    if shared > limit:  # over under every layout Triton can choose',
        ("tests/test_shared_memory.py::test_jax_gpu_attention_with_its_default_blocks_is_correct_on_the_a100",)),
    Mutation("smem_bound_counts_both_operands", "evaluator/judge/gpu/triton_rules.py",
        "shared_lower_bound.visit",
        '                best = max(best, staged, min(sizes))',
        '                best = max(best, staged, sum(sizes))',
        ("tests/test_shared_memory.py::test_the_lower_bound_is_never_above_what_triton_allocates",)),
    Mutation("smem_bound_without_pipeline_buffers", "evaluator/judge/gpu/triton_rules.py",
        "shared_lower_bound.visit",
        '                staged = sum(sizes) * (stages - 1) if looped and stages >= 2 else 0',
        '                staged = 0',
        ("tests/test_shared_memory.py::test_shared_memory_surely_over_the_limit_is_still_refused",)),
    Mutation("smem_uncertain_not_warned", "evaluator/parent/chip_checks.py", "chip_checked",
        '        if not triton.decided:',
        '        if triton.decided:  # shared memory the estimate cannot decide: a warning',
        ("tests/test_shared_memory.py::test_jax_gpu_attention_with_its_default_blocks_is_correct_on_the_a100",)),
    Mutation(
        "gpu_race_store_masks_ignored", "evaluator/judge/gpu/race.py", "_store",
        "            selected = ins[chosen.position]\n",
        "            selected = None  # mutant: a store's mask is ignored\n",
        ("tests/adversarial/gpu_race/test_gpu_race_by_value.py::test_store_masks_decide_a_shared_block",
         "tests/legit/test_legit.py::test_legit_kernel_is_correct[gpu_ragged_rows_masked.py]")),
    Mutation(
        "gpu_race_doubtful_store_counts_as_sure", "evaluator/judge/gpu/race.py", "_Owners._batch",
        "out, ncells, sure = w.output, self.cells[w.output], not w.doubt",
        "out, ncells, sure = w.output, self.cells[w.output], True",
        ("tests/adversarial/gpu_race/test_gpu_race_by_value.py::test_a_mask_or_guard_read_from_data_is_unknown_never_a_race",)),
    Mutation(
        "gpu_race_unknown_charged_as_incorrect", "evaluator/judge/lowering.py", "race_unknown_failure",
        '    return StageFailure(Status.UNVERIFIED, Stage.LOWER, f"GPU race rule: {reason}",',
        '    return StageFailure(Status.INCORRECT, Stage.LOWER, f"GPU race rule: {reason}",',
        ("tests/adversarial/gpu_race/test_gpu_race_by_value.py::test_offsets_from_data_are_unverified_not_incorrect",)),
    Mutation(
        "gpu_race_operands_outside_kernel_not_computed", "evaluator/judge/gpu/race.py",
        "_operand_values.step",
        "            found[id(eqn)] = ins\n",
        "            found[id(eqn)] = [UNKNOWN] * len(ins)  # mutant\n",
        ("tests/adversarial/gpu_race/test_gpu_race_by_value.py::test_offsets_computed_outside_the_kernel_are_evaluated",
         "tests/legit/test_legit.py::test_legit_kernel_is_correct[gpu_ragged_rows_masked.py]")),
    Mutation(
        "gpu_race_mask_edges_not_in_cells", "evaluator/judge/gpu/race.py", "_grains",
        'if kind == "range" and stride == 1 and mask.shape[1 + d] > 1:',
        "if False:  # mutant: cells ignore where a mask changes",
        ("tests/adversarial/gpu_race/test_gpu_race_by_value.py::test_store_masks_decide_a_shared_block",)),
    Mutation(
        "gpu_race_sample_passes_a_large_grid", "evaluator/judge/gpu/race.py", "_evaluate",
        "    if not found and sampled:\n",
        "    if False:  # mutant: the sample of a large grid passes it\n",
        ("tests/adversarial/gpu_race/test_gpu_race_by_value.py::test_above_the_limit_the_first_and_last_programs_decide_a_race_only",
         "tests/adversarial/gpu_race/test_gpu_race_by_value.py::test_a_grid_too_large_to_check_is_a_failure_not_a_pass")),
    Mutation(
        "gpu_race_overwritten_operand_believed", "evaluator/judge/gpu/race.py", "_conflict.body_stores",
        "_known(value) and i not in changed",
        "_known(value)",  # mutant: an input the kernel writes is believed
        ("tests/adversarial/gpu_race/test_gpu_race_by_value.py::test_an_operand_the_kernel_overwrites_is_not_believed",)),
    # issue 40: agent runs a person can stop and read, a task of one's own
    Mutation("samples_lose_their_model_call", "report/samples.py", "_tree",
        "taxonomy.classify(e), calls.get(step),", "taxonomy.classify(e), None,  # mutant: no call",
        (_S + "test_every_sample_has_its_call_kernel_verdict_and_lineage",)),
    Mutation("samples_lose_their_lineage_depth", "report/samples.py", "_tree",
        "        s.depth = depth\n", "        s.depth = 0  # mutant: a flat list\n",
        (_S + "test_a_7200_sample_run_keeps_the_page_small",)),
    Mutation("sample_files_not_loaded_from_their_folder", "report/sample_view.js", "",
        "    s.src = INDEX.dir + '/' + INDEX.tasks[i].file;", "    s.src = INDEX.tasks[i].file;  // mutant",
        (_S + "test_sample_view_in_headless_chromium",)),
    Mutation("diff_shows_removed_lines_as_context", "report/sample_view.js", "",
        "      else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) { ops.push(['-', A[i]]); i++; }",
        "      else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) { ops.push([' ', A[i]]); i++; }",
        (_S + "test_sample_view_in_headless_chromium",)),
    Mutation("status_filter_ignored_in_the_page", "report/sample_view.js", "",
        "    return (!filters.status || status === filters.status) &&", "    return true &&",
        (_S + "test_sample_view_in_headless_chromium",)),
    Mutation("status_filter_ignored_on_the_terminal", "report/samples.py", "matches",
        "    if status and sample.status != status:", "    if False:  # mutant",
        (_S + "test_samples_on_the_terminal",)),
    Mutation("category_filter_ignored_on_the_terminal", "report/samples.py", "matches",
        "        if got is None or category not in (got, taxonomy.label(got)):",
        "        if got is None:  # mutant",
        (_S + "test_samples_on_the_terminal",)),
    Mutation("best_kernel_not_linked_to_its_sample", "report/html.py", "task_table",
        '        if sample_page and step and best.extra.get("method"):', "        if False:  # mutant",
        (_S + "test_sample_page_carries_an_index_and_each_task_is_a_file_beside_it",)),
    Mutation("compile_error_purple_again", "report/html.py", "STATUS_COLORS",
        '    Status.COMPILE_ERROR: "#b2182b", Status.REJECTED: "#67000d",',
        '    Status.COMPILE_ERROR: "#9467bd", Status.REJECTED: "#67000d",',
        (_H + "test_failing_statuses_are_red_or_orange_everywhere",)),
    Mutation("duration_unit_per_cell_in_html", "report/html.py", "usage_table",
        "    units = usage.column_units(table)", "    units = {}  # mutant",
        (_H + "test_duration_columns_have_one_unit",)),
    Mutation("duration_unit_per_cell_on_the_terminal", "report/usage.py", "print_usage.table",
        "        units = column_units(shown)", "        units = {}  # mutant",
        (_H + "test_duration_columns_have_one_unit",)),
    Mutation("interpret_chart_back_to_compile_time", "report/html.py", "build",
        "        tolerance = tolerance_figure(run, rows)",
        "        tolerance = compile_time_figure(run, rows)",
        (_H + "test_interpret_mode_per_task_chart_is_error_over_tolerance",)),
    Mutation("empty_run_draws_empty_axes", "report/html.py", "build",
        "    if not run.evaluations:",
        "    if False:  # mutant",
        (_H + "test_empty_run_draws_no_empty_axes",)),
    Mutation("skipped_kernel_files_not_recorded", "runs/jobs.py", "run_jobs",
        "    record_skipped(run, jobs)\n", "    pass  # mutant: skipped files not recorded\n",
        (_H + "test_skipped_kernel_files_are_recorded_and_reported",)),
    Mutation("skipped_kernel_files_not_shown", "report/html.py", "build",
        '    title = [f"<h1>jaxbench report: {esc(run.name)}</h1>", header(run, summary), skipped_note(run)]',
        '    title = [f"<h1>jaxbench report: {esc(run.name)}</h1>", header(run, summary)]',
        (_H + "test_skipped_kernel_files_are_recorded_and_reported",)),
    Mutation("plotly_inlined_in_every_page", "report/html.py", "page",
        '    script = f"<script src=\\"{esc(plotly_src)}\\"></script>" if plotly_src else ""',
        '    script = f"<script>{__import__(\'plotly.offline\').offline.get_plotlyjs()}</script>"'
        ' if plotly_src else ""',
        (_H + "test_pages_of_a_folder_share_one_plotly_file",)),
    Mutation("judge_warnings_not_shown", "report/html.py", "build",
        "        judge_warnings_table(summary),\n", "",
        (_H + "test_judge_warnings_are_shown",)),
    Mutation("interrupted_run_reported_finished", "report/summary.py", "progress",
        '    end = next((e for e in events if e.get("type") == "run_end" and not e.get("interrupted")),',
        '    end = next((e for e in events if e.get("type") == "run_end"),',
        ("tests/test_report.py::test_a_run_stopped_by_ctrl_c_is_not_finished",)),
    Mutation("optimize_call_after_waiting_for_a_slot_goes_out", "llm/client.py",
        "ModelClient._call_with_retries",
        "            self._check_cancelled()\n",
        "            pass  # mutant: a call that waited for its slot still goes out\n",
        (_T + "test_no_request_starts_after_the_client_is_cancelled",)),
    Mutation("optimize_stop_leaves_the_run_open", "agents/driver.py", "_halt",
        '    journal.close(run, _why(interrupt), getattr(model, "in_flight", None))\n',
        "    pass  # mutant: calls in flight unrecorded, later events kept\n",
        (_T + "test_ctrl_c_stops_optimize_at_once_and_the_resume_reuses_every_finished_sample",
         _T + "test_the_driver_stops_at_the_interrupt_and_records_the_calls_it_cut_short")),
    Mutation("optimize_resume_replays_a_cancelled_call", "agents/base.py", "Journal.__init__",
        '            if kind == "llm_call" and event.get("cancelled"):',
        '            if False:  # mutant: a cancelled call is replayed as an empty answer',
        (_T + "test_ctrl_c_stops_optimize_at_once_and_the_resume_reuses_every_finished_sample",)),
    Mutation("optimize_stop_writes_no_run_end", "runs/directory.py", "RunDir.interrupt",
        '        self.append({"type": "run_end", "interrupted": True, "secret": self.secret.hex(), '
        '**summary})',
        '        pass  # mutant: no run_end says the run was interrupted',
        (_T + "test_ctrl_c_stops_optimize_at_once_and_the_resume_reuses_every_finished_sample",)),
    Mutation("task_file_not_handed_to_the_runner", "evaluator/parent/requests.py", "judge_request",
        "task=task.id, task_file=task_file_of(task.id),", "task=task.id, task_file=None,",
        (_F + "test_a_task_file_is_evaluated_and_loads_in_the_trusted_runner_never_in_the_tracer",)),
    Mutation("task_file_text_not_checked", "tasks/__init__.py", "load_task_file",
        "    if sha256 is not None and digest != sha256:",
        "    if False:  # mutant: the runner judges whatever the file holds now",
        (_F + "test_the_registry_loads_a_task_file_once_and_checks_its_text",)),
    Mutation("signature_not_described", "evaluator/parent/untrusted.py", "untrusted_verdict",
        '        if claimed == Status.COMPILE_ERROR and (',
        '        if False and (',
        (_M + "test_a_wrong_signature_says_how_the_task_calls_the_kernel",)),
    Mutation("target_of_an_unparsable_file_ignored", "evaluator/parent/static.py", "target_declaration",
        "        return (found.group(2), None) if found else (None, None)", "        return (None, None)",
        (_M + "test_a_file_that_does_not_parse_is_judged_for_its_own_target",)),
    Mutation("target_hint_followed_by_the_lowering_error", "evaluator/parent/verdict.py", "decide",
        '            message = hint if alone else f"{hint}; {message}"',
        '            message = f"{hint}; {message}"',
        (_M + "test_the_target_mismatch_hint_is_not_followed_by_the_lowering_error",)),
    Mutation("install_hint_loses_its_closing_quote", "cli/optimize.py", "_prepare",
        "        raise click.UsageError(error_text(exc)) from None",
        "        raise click.UsageError(str(exc).strip(\"'\\\"\")) from None",
        (_M + "test_the_provider_install_hint_keeps_its_closing_quote",)),
    Mutation("debug_print_rejected_as_gaming", "evaluator/parent/static.py", "check_source",
        "    visitor.allow_debug_print(tree)\n",
        "    visitor.allow_debug_print(tree) if debug else None  # mutant: rejected again\n",
        (_M + "test_a_leftover_debug_print_is_a_compile_error_not_gaming",)),
    # issue 39: the judge as a service
    Mutation("serve_any_bearer_token_accepted", "serve/auth.py", "Authenticator.principal",
        "            if hmac.compare_digest(offered, token):",
        "            if True:  # mutant: any token is accepted",
        ("tests/test_serve.py::test_no_token_or_a_wrong_token_is_401",
         "tests/test_serve_units.py::test_tokens_file_format_and_constant_time_lookup")),
    Mutation("serve_retried_id_evaluated_again", "serve/ledger.py", "Ledger.known",
        "        existing = self.subs.get(sub.id)",
        "        existing = None  # mutant: a retried id is a new submission",
        ("tests/test_serve.py::test_a_retried_submission_is_not_evaluated_twice",)),
    Mutation("serve_declared_body_size_unchecked", "serve/app.py", "Guard.__call__",
        "        if declared.isdigit() and int(declared) > self.max_body_bytes:",
        "        if False:  # mutant: a declared body size is not checked",
        ("tests/test_serve.py::test_a_50_mb_source_is_refused_before_it_is_read",)),
    Mutation("serve_streamed_body_size_unchecked", "serve/app.py", "Guard.__call__",
        "            if size > self.max_body_bytes:",
        "            if False:  # mutant: a body without Content-Length is read whole",
        ("tests/test_serve.py::test_a_50_mb_source_is_refused_before_it_is_read",)),
    Mutation("serve_source_size_unchecked", "serve/admission.py", "Admission.prepare",
        "        if size_bytes > self.config.max_source_bytes:",
        "        if False:  # mutant: any source size is accepted",
        ("tests/test_serve.py::test_a_50_mb_source_is_refused_before_it_is_read",)),
    Mutation("reward_unverified_earns_correctness", "serve/rewards.py", "reward",
        "is_correct = status == Status.CORRECT and",
        "is_correct = status in (Status.CORRECT, Status.UNVERIFIED) and",
        ("tests/test_serve_units.py::test_only_a_correct_verdict_earns_the_correctness_reward",)),
    Mutation("reward_speedup_in_interpret_mode", "serve/rewards.py", "reward",
        '    if is_correct and mode == "device" and speedup is not None:',
        '    if is_correct and speedup is not None:',
        ("tests/test_serve_units.py::test_speedup_counts_in_device_mode_only_and_interpret_says_so",)),
    Mutation("serve_quota_not_enforced", "serve/limits.py", "QuotaWindows.take",
        "            if len(times) + count > quota:",
        "            if False:  # mutant: no quota",
        ("tests/test_serve.py::test_quota_and_concurrency_limits_answer_429_with_retry_after",)),
    Mutation("serve_cache_ignores_the_source", "serve/store.py", "Submission.cache_key",
        "                self.trials, self.source_sha256)",
        "                self.trials)  # mutant: any kernel of the task shares a verdict",
        ("tests/test_serve.py::test_batch_is_streamed_as_it_finishes",)),
    # issue 38: one schema, the evaluation as a pipeline
    Mutation("verdict_budget_after_the_trials", "evaluator/parent/verdict.py", "first_failure",
        "    if reports.budget is not None:\n        return reports.budget\n",
        "    if False:\n        return reports.budget\n",
        ("tests/test_verdict.py::test_every_combination_of_failures_is_decided_by_the_precedence",)),
    Mutation("verdict_tool_crash_on_the_other_platform_stays_unverified", "evaluator/parent/verdict.py",
        "decide",
        "        crashed_on_other = (status == Status.UNVERIFIED and reports.other_platform",
        "        crashed_on_other = (False and reports.other_platform",
        ("tests/test_verdict.py::test_a_lowering_tool_crash_on_a_kernel_for_the_other_platform_is_its_compile_error",
         "tests/test_messages.py::test_missing_target_is_stated_and_a_wrong_target_failure_explained")),
    # the trials compared on the chip (judge/chip_verdict.py) and the enums the settings resolve to
    Mutation("chip_passes_near_or_over_the_bound", "contract/records.py", "CLEAR_PASS_MARGIN",
        "CLEAR_PASS_MARGIN = 0.99", "CLEAR_PASS_MARGIN = 100.0",
        ("tests/test_chip_verdict.py::test_near_or_over_the_bound_the_parent_decides",
         "tests/test_device_assembly.py::test_a_malformed_chip_verdict_is_the_harness_fault_never_a_pass")),
    Mutation("chip_verdicts_taken_outside_device_mode", "evaluator/parent/requests.py",
        "chip_decided", 'if case.mode != "device" or not isinstance(said, dict):',
        "if not isinstance(said, dict):",
        ("tests/test_device_assembly.py::test_chip_verdicts_count_only_in_device_mode",)),
    Mutation("settings_keep_an_unknown_mode", "contract/records.py", "Settings.replace",
        "changes[name] = kind(changes[name])", "changes[name] = changes[name]",
        ("tests/test_schema.py::test_mode_and_target_are_resolved_to_enums_once_at_the_settings",)),
    Mutation("record_accepts_unknown_fields", "contract/records.py", "Record.field_problem",
        'return "unknown field"',
        "return None",
        ("tests/test_schema.py::test_a_record_refuses_unknown_and_missing_fields_and_wrong_types",)),
    Mutation("tracer_claims_any_rule_code", "evaluator/parent/untrusted.py", "untrusted_verdict",
        "rule=rule if rule in TRACER_RULES else None)", "rule=rule if rule in set(Rule) else None)",
        ("tests/adversarial/test_forged_untrusted.py::test_a_tracers_rule_code_is_believed_only_among_its_own",)),
    Mutation("agents_docs_by_the_evaluators_words", "agents/docs_pack.py", "for_errors",
        "if m and (rule is None or rule in DIAGNOSED))", "if m)",
        ("tests/test_agents_docs.py::test_the_evaluators_own_failures_choose_docs_by_rule_code_not_by_their_words",)),
    Mutation("tracer_integrity_check_reachable_by_the_candidate", "evaluator/sandbox/tracer.py", "run_job",
        "    run.patched = _integrity_check(run)\n", "    run.patched = lambda stage: False\n",
        ("tests/adversarial/test_adversarial.py::test_cheat_gets_its_verdict[patch_timer_obfuscated.py]",)),
    # issue 46, item 1: count only what surely runs and reaches the result
    Mutation("kernel_cond_counts_its_largest_branch", "evaluator/judge/kernel_work.py", "_Body.cond",
        "flops = np.min(np.stack(", "flops = np.max(np.stack(",
        ("tests/test_kernel_work.py::test_a_branch_on_data_counts_its_cheapest_side",)),
    Mutation("kernel_branch_on_program_ids_not_evaluated", "evaluator/judge/kernel_work.py", "Values._value",
        '        if name == "program_id" and self.ids is not None:',
        "        if False:",
        ("tests/test_kernel_work.py::test_a_branch_on_program_ids_counts_the_programs_that_take_it",)),
    Mutation("kernel_while_unproven_counts_once", "evaluator/judge/kernel_work.py", "_Body.loop",
        "        if trips is None:\n            return 0.0, used",
        "        if trips is None:\n            trips = np.ones(1)",
        ("tests/test_kernel_work.py::test_a_loop_counts_its_proven_trips_and_otherwise_none",)),
    Mutation("kernel_call_whose_result_nothing_uses_counted", "evaluator/judge/kernel_work.py",
        "_Module.walk",
        "                if not live or not any(outs):",
        "                if False:",
        ("tests/test_kernel_work.py::test_a_kernel_whose_result_nothing_uses_counts_nothing",)),
    Mutation("kernel_work_for_a_dropped_output_counted", "evaluator/judge/kernel_work.py", "_kernel",
        "    dead = frozenset(ref for ref, r in zip(out_refs, out_rel, strict=False)\n"
        "                     if not r and ref not in read)",
        "    dead = frozenset()",
        ("tests/test_kernel_work.py::test_an_output_never_written_or_never_used_moves_no_bytes",)),
    Mutation("kernel_bytes_of_operands_never_read", "evaluator/judge/kernel_work.py", "_kernel",
        "for k, v in enumerate(eqn.invars[n_dyn:]) if k in used)",
        "for k, v in enumerate(eqn.invars[n_dyn:]))",
        ("tests/test_kernel_work.py::test_an_operand_the_body_never_reads_moves_no_bytes",)),
    Mutation("kernel_bytes_of_outputs_never_written", "evaluator/judge/kernel_work.py", "_kernel",
        "                 if r and n_index + n_in + j in used)",
        "                 if r)",
        ("tests/test_kernel_work.py::test_an_output_never_written_or_never_used_moves_no_bytes",)),
    Mutation("times_zero_still_reaches", "evaluator/judge/kernel_work.py", "Values._value",
        "        if name in _ANNIHILATE and any(np.all(x == 0) for x in known):",
        "        if False:",
        ("tests/test_kernel_work.py::test_a_kernel_reaching_the_result_only_times_zero_counts_nothing",
         "tests/test_kernel_work.py::test_a_value_only_nominally_from_a_kernel_is_not_from_one")),
    Mutation("constant_select_follows_every_case", "evaluator/judge/kernel_work.py", "_eqn_reached",
        "            return [ins[1 + int(np.clip(int(which), 0, len(ins) - 2))]]",
        "            return [any(ins)]",
        ("tests/test_kernel_work.py::test_a_value_only_nominally_from_a_kernel_is_not_from_one",)),
    Mutation("loop_carry_replaced_still_reaches", "evaluator/judge/kernel_work.py", "_eqn_reached",
        "        return got",
        "        return [a or b for a, b in zip(start + [False] * n_out, got)]",
        ("tests/test_kernel_work.py::test_a_value_through_a_loop_is_followed_to_a_fixed_point",)),
    Mutation("dropped_output_read_back_is_a_dead_end", "evaluator/judge/kernel_work.py", "_kernel",
        "                     if not r and ref not in read)",
        "                     if not r)",
        ("tests/test_kernel_work.py::test_a_dropped_output_the_body_reads_back_still_counts",)),
    Mutation("constant_tables_unknown", "evaluator/judge/kernel_work.py", "count",
        "    consts = [_known_const(c) for c in raw_consts]",
        "    consts = []",
        ("tests/test_kernel_work.py::test_a_branch_on_a_constant_table_counts_the_programs_it_picks",)),
    # issue 46, item 2: fail closed
    Mutation("kernel_work_fault_skips_the_rules", "evaluator/judge/runner.py", "_kernel_work",
        '            raise StageFailure(Status.UNVERIFIED, Stage.LOWER, "the judge could not count the "',
        '            return None, None  # mutant: the rules skipped, as before\n'
        '            raise StageFailure(Status.UNVERIFIED, Stage.LOWER, "the judge could not count the "',
        ("tests/test_judge_fails_closed.py::test_a_counter_that_raises_makes_the_verdict_unverified",
         "tests/adversarial/surely_runs/test_surely_runs.py::test_padding_that_never_runs_is_not_counted"
         "[counter_made_to_raise.py]")),
    Mutation("structure_rule_fault_not_caught", "evaluator/judge/runner.py", "_structure_rules",
        "except Exception as exc:  # noqa: BLE001 - a rule failing, not deciding: it cannot know",
        "except ZeroDivisionError as exc:  # mutant: a failing rule crashes the evaluation",
        ("tests/test_judge_fails_closed.py::test_a_rule_that_raises_makes_the_verdict_unverified",)),
    Mutation("counter_reads_any_depth", "evaluator/judge/kernel_work.py", "MAX_DEPTH",
        "MAX_DEPTH = 24", "MAX_DEPTH = 10 ** 6",
        ("tests/adversarial/surely_runs/test_surely_runs.py::test_padding_that_never_runs_is_not_counted"
         "[counter_made_to_raise.py]",)),
    # issue 46, item 7: work left in XLA is no_pallas, never rejected
    Mutation("policy_refusal_rejected_again", "contract/codes.py", "POLICY_STATUS",
        "POLICY_STATUS = Status.NO_PALLAS", "POLICY_STATUS = Status.REJECTED",
        ("tests/test_rules_budget.py::test_outside_work_over_the_budget_is_no_pallas_with_its_code",)),
    Mutation("old_policy_refusals_rewarded_as_cheats", "serve/rewards.py", "reward",
        "if status == Status.REJECTED and", "if False and",
        ("tests/test_judge_fails_closed.py::test_a_policy_refusal_earns_what_no_pallas_earns_never_less",)),
    Mutation("runner_reused_after_a_tpu_interpreter_reset", "evaluator/parent/judge_client.py",
        "RunnerPool.run",
        'outcome.response is not None and not outcome.response.get("retire")',
        "outcome.response is not None",
        ("tests/test_device_lease.py::test_a_runner_that_reset_the_tpu_interpreter_is_replaced_not_reused",)),
    Mutation(
        "the_command_keeps_the_chip", "backends/host.py", "keep_off_accelerators",
        '    if os.environ.get("JAX_PLATFORMS", "") != "cpu":\n',
        '    return  # mutant: this process may open the accelerator\n'
        '    if os.environ.get("JAX_PLATFORMS", "") != "cpu":\n',
        ("tests/test_chip_owner.py::test_the_command_never_opens_an_accelerator_backend"
         "[command0]",)),
    Mutation(
        "a_new_owner_per_request", "evaluator/parent/judge_client.py", "ChipOwners.run",
        "                if owner.runner is None or not owner.runner.alive:\n",
        "                if True:  # mutant: another process opens the chip for each request\n",
        ("tests/test_chip_owner.py::test_one_owner_per_chip_serves_every_request",)),
    # a held chip (jaxbench hold, evaluator/parent/held.py)
    Mutation(
        "a_held_chip_of_other_settings_used", "evaluator/parent/held.py", "ask",
        "    if differs:\n",
        "    if False:  # mutant: a held owner of other settings judges this command\n",
        ("tests/test_held_chip.py::test_a_held_chip_started_otherwise_is_refused_with_what_to_do",)),
    Mutation(
        "a_held_chips_directory_others_may_enter", "evaluator/parent/held.py", "_private_dir",
        "info.st_uid != os.getuid() or info.st_mode & 0o077",
        "info.st_uid != os.getuid()",
        ("tests/test_held_chip.py::test_a_socket_in_a_directory_others_may_enter_is_neither_"
         "served_nor_used",)),
    Mutation(
        "a_held_chip_never_idle", "evaluator/parent/held.py", "HeldChip._idle",
        "return not busy and time.monotonic() - self._last > self.idle_s",
        "return False  # mutant: the chip is never released",
        ("tests/test_held_chip.py::test_idle_releases_the_chip",)),
    Mutation(
        "a_command_ignores_the_held_chip", "evaluator/parent/evaluator.py", "_ask_an_owner",
        "    said = held.ask(owner_depth())\n",
        "    said = None  # mutant: each command opens the chip itself\n",
        ("tests/test_held_chip.py::test_the_evaluator_takes_the_held_chips_owners",)),
    Mutation(
        "the_owners_close_leaves_a_busy_owner", "evaluator/parent/judge_client.py",
        "ChipOwners.close",
        "        for owner in self._owners:\n            if owner.runner is not None:\n",
        "        for owner in []:  # mutant: a busy owner keeps the chip\n"
        "            if owner.runner is not None:\n",
        ("tests/test_held_chip.py::test_a_request_in_flight_when_the_hold_stops_ends_without_a_"
         "verdict",)),
    Mutation(
        "a_reference_that_does_not_fit_is_timed", "evaluator/judge/fitting.py", "_compile",
        "    if needed is not None and available is not None and needed > HEADROOM * available:\n",
        "    if False:  # mutant: XLA's memory analysis is not read\n",
        ("tests/test_fitting.py::test_a_reference_that_does_not_fit_is_not_timed_and_says_why",)),
    Mutation(
        "the_judges_spans_dropped", "evaluator/parent/evaluation.py", "judged",
        '        walk.parts["judge"] = judge_parts(outcome, case.mode)\n',
        "        pass  # mutant: the runner's spans are lost in the judge's rest\n",
        ("tests/test_chip_owner.py::test_spans_of_an_interpret_evaluation_add_up_to_its_wall",)),
    # issue 46, item 3: nothing learnt from one verdict applies to the next
    Mutation("mismatch_message_shows_the_truths_value", "evaluator/parent/compare.py", "check_outputs",
        'f"{tuple(int(j) for j in idx)}, {float(fraction[idx]):.3g}x its tolerance",',
        'f"{tuple(int(j) for j in idx)}: got {float(got[idx]):.5g}, truth {float(ref[idx]):.5g}",',
        ("tests/test_compare.py::test_a_mismatch_message_says_where_and_by_how_much_never_a_value",)),
    Mutation("fresh_keys_ignored", "evaluator/parent/compare.py", "evaluation_inputs",
        "    if not fresh:\n        return None, secret, truth\n",
        "    if True:  # mutant: the run's secret for every evaluation\n"
        "        return None, secret, truth\n",
        ("tests/test_serve_oracle.py::test_an_adaptive_oracle_over_serve_never_becomes_correct",
         "tests/test_compare.py::test_fresh_keys_are_new_for_every_evaluation_and_re_derivable")),
    Mutation("fresh_keys_prefetched_into_the_shared_cache", "evaluator/parent/evaluation.py",
        "Evaluation.phase_untrusted",
        "[] if walk.nonce else",
        'self.keys["trial"] + self.keys["probe"] if True else',  # mutant: fresh keys cached
        ("tests/test_serve_oracle.py::test_fresh_keys_draw_new_inputs_and_keep_no_truth_behind",)),
    Mutation("serve_keeps_one_secret_for_its_life", "serve/admission.py", "Admission.prepare",
        "chip=chip, fresh_keys=True)",
        "chip=chip, fresh_keys=False)",
        ("tests/test_serve_oracle.py::test_an_adaptive_oracle_over_serve_never_becomes_correct",)),
    Mutation("optimize_keeps_one_secret_for_the_run", "agents/driver.py", "_resolved",
        "fresh_keys=True), kind", "fresh_keys=False), kind",
        ("tests/test_verdict_secrecy.py::test_optimize_evaluates_every_candidate_with_fresh_keys",)),
    # issue 46, item 4: the tracer reads nothing of the host's runs
    Mutation("tracer_reads_its_sys_path", "evaluator/sandbox/isolation.py", "python_read_roots",
        "candidates += library_roots()",
        "candidates += library_roots()\n"
        "candidates += [os.path.realpath(e) for e in sys.path if e and os.path.isdir(e)\n"
        "               and not any(_beneath(os.path.realpath(e), x) for x in excluded)]",
        ("tests/adversarial/host_runs/test_host_runs.py::test_a_kernel_cannot_read_the_hosts_run_directory"
         "[pythonpath_dot-no-seal]",
         "tests/adversarial/host_runs/test_host_runs.py::"
         "test_the_attack_of_issue_46_from_a_directory_holding_the_run_is_not_correct[pythonpath_dot]",
         "tests/test_verdict_secrecy.py::test_read_roots_hold_no_path_entry_outside_the_installation")),
    Mutation("tracer_started_with_the_working_directory_on_its_path", "evaluator/parent/pool.py", "",
        'TRACER_PYTHON = (sys.executable, "-P", "-m")\nNEUTRAL_CWD = "/"\n',
        'TRACER_PYTHON = (sys.executable, "-m")\nNEUTRAL_CWD = None\n',
        ("tests/adversarial/host_runs/test_host_runs.py::test_a_kernel_cannot_read_the_hosts_run_directory"
         "[plain-no-seal]",)),
    Mutation("tracer_library_path_keeps_the_working_directory", "evaluator/parent/pool.py", "tracer_env",
        'libraries = [e for e in libraries if not (here == e or here.startswith(e.rstrip("/") + "/"))]',
        "libraries = list(libraries)  # mutant: a directory holding the working one passes",
        ("tests/adversarial/host_runs/test_host_runs.py::test_a_kernel_cannot_read_the_hosts_run_directory"
         "[library_path_above-no-seal]",)),
    Mutation("run_directory_inside_the_read_roots_allowed", "runs/directory.py", "RunDir._open",
        "        _refuse_tracer_readable(path)\n", "",
        ("tests/test_verdict_secrecy.py::test_a_run_directory_inside_the_tracers_read_roots_is_refused",)),
    Mutation(
        "trial_inputs_not_read_by_the_counter", "evaluator/judge/kernel_work.py", "count",
        "    given = [None if x is None else _known_const(x) for x in raw]\n",
        "    given = [None for x in raw]  # mutant: a trial's integer inputs are never known\n",
        ("tests/test_kernel_work.py::test_a_branch_on_an_integer_input_counts_as_it_runs_once"
         "_the_input_is_known",)),
    # issue 54: the counts that rounded up, restored one at a time
    Mutation(
        "zero_grid_counted_as_one_program", "evaluator/judge/kernel_work.py", "_programs",
        "programs = math.prod(grid)", "programs = max(math.prod(grid), 1)",
        ("tests/test_kernel_work.py::test_a_grid_with_a_dimension_of_zero_runs_no_program[<lambda>0]",)),
    Mutation(
        "out_of_range_branch_guessed", "evaluator/judge/kernel_work.py", "_Body.cond",
        "_check_index(index, len(branches), mask)", "which = None",
        ("tests/test_kernel_work.py::"
         "test_an_out_of_range_branch_index_in_a_kernel_is_named_not_guessed[-1]",)),
    Mutation(
        "unwritten_alias_counted_as_written", "evaluator/judge/kernel_work.py", "_unwritten_aliases",
        "return {j: position for j, position in aliases.items() if j not in full}", "return {}",
        ("tests/test_kernel_work.py::test_an_aliased_output_the_kernel_does_not_surely_write_is_"
         "its_input_passed_through[_reads_only-grid2-True]",)),
    # issue 54: the counter's old roundings restored: a wrapper's kernels counted as nothing,
    # a loop bound from a blocked operand left unknown, operands counted in full
    Mutation(
        "shard_map_body_counts_nothing", "evaluator/judge/kernel_work.py", "_CALLS",
        '"shard_map": "jaxpr", ', "",
        ("tests/test_kernel_work_wrappers.py::test_a_kernel_inside_each_wrapper_counts_its_work"
         "[shard_map]",)),
    Mutation(
        "unread_wrapper_counts_nothing", "evaluator/judge/kernel_work.py", "_Module.nested",
        "if any(compat.is_kernel(e) for s in _subs(eqn) for e in compat.walk_eqns(s, 100_000)):",
        "if False:",
        ("tests/test_kernel_work_wrappers.py::"
         "test_a_kernel_inside_a_wrapper_the_counter_does_not_read_is_unreadable",)),
    Mutation(
        "blocked_operand_never_read", "evaluator/judge/kernel_work.py", "_body_inputs",
        "if known is not None:", "if known is None:",
        ("tests/test_kernel_work_wrappers.py::"
         "test_a_loop_bound_loaded_from_a_blocked_operand_counts_as_it_runs_on_the_data",)),
    Mutation(
        "operand_bytes_in_full", "evaluator/judge/kernel_work.py", "_moved",
        "return min(full, block * distinct)", "return full",
        ("tests/test_kernel_work_wrappers.py::"
         "test_a_kernel_moves_the_blocks_it_places_not_its_operands_in_full",)),
    Mutation(
        "host_runs_loops_on_the_trial_data", "evaluator/judge/kernel_work.py", "_UNBOUNDED",
        '_UNBOUNDED = frozenset({"while"})', "_UNBOUNDED = frozenset()",
        ("tests/test_kernel_work_wrappers.py::"
         "test_a_loop_on_the_trial_data_is_never_run_on_the_host",)),
    Mutation(
        "host_routing_never_computed", "evaluator/judge/kernel_work.py", "count",
        "walker.values.preset = {v: _known_const(x)\n"
        "                        for v, x in _host_values(jaxpr, raw, floats, fused).items()}",
        "walker.values.preset = {}",
        ("tests/test_kernel_work_wrappers.py::"
         "test_a_table_computed_from_integer_data_is_computed_on_the_trial",)),
    Mutation(
        "floats_decide_on_the_host", "evaluator/judge/kernel_work.py", "_integral",
        'return _dtype(v) is not None and _dtype(v).kind in "biu"',
        'return _dtype(v) is not None and _dtype(v).kind in "biuf"',
        ("tests/test_kernel_work_wrappers.py::test_floats_decide_only_where_the_host_runs_the_trial",)),
    Mutation(
        "host_never_runs_a_scan", "evaluator/judge/kernel_work.py", "_host_cost",
        'if eqn.primitive.name in _UNBOUNDED or depth > MAX_DEPTH:',
        'if eqn.primitive.name in {*_UNBOUNDED, "scan"} or depth > MAX_DEPTH:',
        ("tests/test_kernel_work_floats.py::test_a_scan_of_static_length_runs_on_the_host",)),
    Mutation(
        "splat_in_smem_never_read", "evaluator/judge/kernel_work.py", "_blocks",
        "data = np.broadcast_to(data, shape)  # a splat: every element is that number",
        "return None",
        ("tests/test_kernel_work_floats.py::test_a_known_splat_in_smem_bounds_the_kernels_loop",)),
    Mutation(
        "floats_never_decide_in_interpret_mode", "evaluator/judge/runner.py", "_kernel_work",
        'floats=judging.mode == "interpret")', "floats=False)",
        ("tests/test_kernel_work_floats.py::"
         "test_interpret_mode_credits_work_routed_by_floats",)),
    Mutation(
        "floats_decide_on_the_host_in_device_mode", "evaluator/judge/runner.py", "_kernel_work",
        'floats=judging.mode == "interpret")', "floats=True)",
        ("tests/test_kernel_work_floats.py::"
         "test_device_mode_refuses_where_the_chips_floats_route_the_work_away",)),
    Mutation(
        "device_refusal_routed_by_floats_stands", "evaluator/judge/runner.py", "_on_host_floats",
        "        return check(report, kernel_work.count(trace, lines, known, floats=True))\n",
        "        return None\n",
        ("tests/test_kernel_work_floats.py::"
         "test_device_mode_counts_work_routed_by_floats_on_the_chips_inputs",)),
    Mutation(
        "chip_never_counts_the_floats", "evaluator/judge/runner.py", "_count_on_chip",
        "    if judging.on_chip_floats is None:\n        return\n",
        "    if True:\n        return\n",
        ("tests/test_kernel_work_floats.py::"
         "test_device_mode_refuses_where_the_chips_floats_route_the_work_away",)),
    Mutation(
        "chip_count_on_the_hosts_equations", "evaluator/judge/runner.py", "_count_on_chip",
        "floats=True,\n                                    fused=True)",
        "floats=True,\n                                    fused=False)",
        ("tests/test_kernel_work_floats.py::"
         "test_device_mode_where_the_chip_cannot_compute_the_floats_is_unverified",)),
    Mutation(
        "pending_chip_count_passes_unchecked", "evaluator/judge/runner.py", "_walk",
        "if judging.on_chip_floats is not None:", "if False:",
        ("tests/test_kernel_work_floats.py::"
         "test_a_count_left_to_the_chip_that_never_ran_is_unverified",)),
    Mutation(
        "dma_operand_bytes_in_full", "evaluator/judge/kernel_work.py", "_moved",
        "return 0.0  # moved by the kernel's own DMAs: counted by them (_dma_bytes)",
        "return full",
        ("tests/test_kernel_work_wrappers.py::"
         "test_an_operand_the_kernel_moves_by_dma_counts_the_bytes_its_dmas_move",)),
    # issue 53: the seal, each group of its rules dropped in turn; it not installed; an
    # unsealed host run without being told
    Mutation(
        "seal_drops_open", "evaluator/sandbox/seal.py", "RULES",
        '"open": (', '"open": () and (',
        ("tests/test_seal.py::test_each_group_refuses_its_calls[open-main_thread]",
         "tests/adversarial/host_profiles/test_host_profiles.py::"
         "test_host_reads_are_refused[no-landlock-run_secret_obfuscated.py]")),
    Mutation(
        "seal_drops_change_files", "evaluator/sandbox/seal.py", "RULES",
        '"change_files": (', '"change_files": () and (',
        ("tests/test_seal.py::test_each_group_refuses_its_calls[change_files-main_thread]",)),
    Mutation(
        "seal_drops_execute", "evaluator/sandbox/seal.py", "RULES",
        '"execute": (', '"execute": () and (',
        ("tests/test_seal.py::test_each_group_refuses_its_calls[execute-main_thread]",)),
    Mutation(
        "seal_drops_network", "evaluator/sandbox/seal.py", "RULES",
        '"network": (', '"network": () and (',
        ("tests/test_seal.py::test_each_group_refuses_its_calls[network-main_thread]",)),
    Mutation(
        "seal_drops_other_processes", "evaluator/sandbox/seal.py", "RULES",
        '"other_processes": (', '"other_processes": () and (',
        ("tests/test_seal.py::test_each_group_refuses_its_calls[other_processes-main_thread]",)),
    Mutation(
        "seal_drops_kernel_surfaces", "evaluator/sandbox/seal.py", "RULES",
        '"kernel_surfaces": (', '"kernel_surfaces": () and (',
        ("tests/test_seal.py::test_each_group_refuses_its_calls[kernel_surfaces-main_thread]",)),
    Mutation(
        "seal_drops_mounts", "evaluator/sandbox/seal.py", "RULES",
        '"mounts": (', '"mounts": () and (',
        ("tests/test_seal.py::test_each_group_refuses_its_calls[mounts-main_thread]",)),
    Mutation(
        "seal_lets_signals_reach_other_processes", "evaluator/sandbox/seal.py", "install",
        "self_only = sorted(_TABLES[machine][name] for name in SELF_ONLY)", "self_only = []",
        ("tests/test_seal.py::test_each_group_refuses_its_calls[signals-main_thread]",)),
    Mutation(
        "debug_tracer_may_write", "evaluator/sandbox/seal.py", "_WRITING_FLAGS",
        "_WRITING_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000 | 0o20000000",
        "_WRITING_FLAGS = 0o20000000",
        ("tests/test_seal.py::test_a_debug_tracers_seal_lets_files_be_read_and_nothing_else",)),
    Mutation(
        "seal_not_installed", "evaluator/sandbox/tracer.py", "_seal_process",
        "record = dict(seal.install(read_only_opens=debug))", "record = {'seccomp': False}",
        ("tests/adversarial/host_profiles/test_host_profiles.py::"
         "test_host_reads_are_refused[no-landlock-run_secret_obfuscated.py]",
         "tests/adversarial/host_profiles/test_host_profiles.py::"
         "test_the_honest_control_stays_correct[no-landlock]")),
    Mutation(
        "unsealed_host_runs_without_being_told", "evaluator/doctor.py", "require_seal",
        "if not layers and not allow_unsealed:", "if False:",
        ("tests/test_seal.py::test_run_refuses_an_unsealed_host_unless_told",)),
]


def mutate(mutation: Mutation, root: Path) -> Path:
    """A copy of the package under ``root/src`` with the mutation applied; returns ``root/src``."""
    src = root / "src"
    shutil.copytree(_package(), src / "jaxbench", ignore=shutil.ignore_patterns("__pycache__"))
    path = src / "jaxbench" / mutation.file
    path.write_text(mutation.applied(path.read_text()))
    return src


def run_against(src: Path, tests: tuple[str, ...], timeout_s: float = 600) -> tuple[int, str]:
    """Runs ``tests`` with the package at ``src`` first on the path; (exit code, output)."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAXBENCH_TEST_SRC": str(src),  # tests/conftest.py
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
    # the session's temporary root, made once here: made by the first mktemp of two threads
    # at once, each could make its own and refuse the other's folder (CI skips the baseline,
    # whose mktemp made it before)
    tmp_path_factory.getbasetemp()
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {m.name: pool.submit(attempt, m) for m in wanted}
        yield futures
        for future in futures.values():
            future.cancel()


@pytest.mark.mutation
@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_mutant_is_killed(mutation, outcomes, baseline):
    assert set(mutation.tests) <= set(baseline)
    code, output = outcomes[mutation.name].result()
    tail = output[-3000:]
    # 1: tests ran and failed. Not 0 (the mutant survived), not 2-5 (interrupted, usage error,
    # nothing collected): those would hide a survivor.
    assert code == 1, f"{mutation.name} survived (pytest exit {code}):\n{tail}"
    assert " failed" in output and " error" not in output.splitlines()[-1], tail


@pytest.mark.parametrize("ruff_format", [None, [], ["--isolated"]],
                         ids=["as_written", "ruff_format", "ruff_format_isolated"])
def test_every_mutant_applies_once(ruff_format, tmp_path):
    """Every entry changes code, applies once and leaves code that compiles, in the package as
    written and in a copy `ruff format` rewrote (as this project configures it, line length
    110, and with ruff's defaults, 88): reformatting moves no mutant. Seconds, in the plain
    run; the mutation run itself (minutes) takes a reformatted copy through
    JAXBENCH_MUTATION_PACKAGE."""
    package = _package()
    if ruff_format is not None:
        shutil.copytree(package, tmp_path / "src" / "jaxbench",
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(REPO / "pyproject.toml", tmp_path)  # the project's ruff settings
        subprocess.run([sys.executable, "-m", "ruff", "format", "--quiet", *ruff_format, "src"],
                       cwd=tmp_path, check=True)
        package = tmp_path / "src" / "jaxbench"
    failures = []
    for mutation in MUTATIONS:
        try:
            mutation.applied((package / mutation.file).read_text())
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)


def test_an_entry_applies_once_whatever_the_formatting_or_fails():
    """Found by unit and by its text with whitespace, comments, quote style and a trailing
    comma set aside; a unit or match missing or found twice, a mutated text that changes no
    code, or one that leaves code Python cannot compile, is an error, never a skip."""
    written = "def f(x):\n    return g(x, 'a')  # one\n\n\ndef h(x):\n    return g(x, 'a')\n"
    formatted = ('def f(x):\n    # reworded\n    return g(\n        x,\n        "a",\n    )\n\n\n'
                 'def h(x):\n    return g(x, "a")\n')

    def entry(where, original="return g(x, 'a')", mutated="return g(x, 'b')"):
        return Mutation("m", "m.py", where, original, mutated, ())

    assert entry("f").applied(written) == written.replace("g(x, 'a')  # one", "g(x, 'b')  # one")
    assert entry("f").applied(formatted).startswith("def f(x):\n    # reworded\n    return g(x, 'b')\n")
    for wrong in [entry("g"), entry(""), entry("f", original="return g(x, 'c')"),
                  entry("f", mutated='return g(x, "a")  # the same code'),
                  entry("f", mutated="return g(x,")]:
        with pytest.raises(AssertionError):
            wrong.applied(written)
