"""The failure taxonomy (``jaxbench.report.taxonomy``): every category from the evaluator's own
messages, copied from the code that writes them (figures made up), and unknown ones in "other"."""

from __future__ import annotations

import pytest

from jaxbench.report import taxonomy
from jaxbench.report.taxonomy import CATEGORIES, classify

# (category, status, stage, message): each message as the evaluator writes it; where it comes
# from is named beside it.
CASES = [
    # evaluator/parent/static.py check_source
    ("static_policy", "rejected", "static", "policy violation: line 3: import of 'os' is not allowed"),
    ("static_policy", "rejected", "static", "policy violation: line 7: use of .pure_callback is not allowed "
     "(host callbacks, introspection and global config are outside the kernel contract)"),
    ("source_error", "compile_error", "static", "SyntaxError at line 14: invalid syntax"),
    ("source_error", "compile_error", "static", "the file defines no top-level `kernel(*inputs)` function"),
    ("source_error", "compile_error", "static", "line 2: import of 'scipy': not available to kernels, which "
     "may import only functools, jax, math, numpy"),
    # sandbox/tracer.py: an exception while tracing
    ("trace_error", "compile_error", "trace", "TypeError: dot_general requires contracting dimensions to "
     "have the same shape, got (256,) and (128,). (at kernel.py:37)"),
    ("trace_error", "compile_error", "trace", "kernels are traced under jax.jit: host NumPy/Python on input "
     "values is not allowed (TracerArrayConversionError: The numpy.ndarray conversion method "
     "__array__() was called on traced array with shape float32[8,128])"),
    ("trace_error", "compile_error", "lower", "tracing at size 'full': ValueError: too many values to "
     "unpack (expected 2)"),
    # sandbox/tracer.py scanned(), patched(), _verdict(); untrusted.py; judge/rules.py
    ("sandbox_rule", "rejected", "trace", "host callback (pure_callback) in the kernel: all work must run "
     "on the device"),
    ("sandbox_rule", "rejected", "trace", "the kernel passes interpret=True to pallas_call itself: kernels "
     "never choose interpret mode, the harness does (on a device it would time interpreter code)"),
    ("sandbox_rule", "rejected", "trace", "sandbox: open('/etc/passwd') is not allowed"),
    ("sandbox_rule", "rejected", "trace", "the kernel patched harness code: jax.numpy.allclose"),
    ("sandbox_rule", "rejected", "lower", "candidate code ran after the tracer was sealed for its exports "
     "(a finalizer, handler or lowering hook acting on files or imports): the exports must be the "
     "harness's alone"),
    ("sandbox_rule", "rejected", "lower", "target export has side effects (host callbacks, I/O): not "
     "allowed"),
    ("sandbox_rule", "rejected", "lower", "the interpret-mode export has 2 kernel regions, the target "
     "export 1 (or their signatures differ): the two exports must come from one trace"),
    # tracer.py scanned(); judge/rules.py check_target
    ("no_pallas", "no_pallas", "trace", "no pallas_call in the traced kernel: the hot path must be Pallas"),
    ("no_pallas", "no_pallas", "lower", "the exported module has no Pallas kernel custom call (a kernel "
     "that passes interpret=True itself, or plain XLA): the hot path must be a compiled Pallas kernel"),
    # judge/memory_rules.py tpu_vmem (reported by parent.py), judge/budgets.py tpu_kernel,
    # triton_rules.py shared_memory, judge/triton_compile.py, XLA's own
    ("memory_budget", "compile_error", "lower", "memory budget at size 'small', pallas_call #0: needs 48.0 "
     "MiB of VMEM on TPU v6 lite, over the scoped default 32 MiB (limit 32 MiB, physical 128 MiB): "
     "input 0 block (2048, 2048) x2 = 16.0 MiB. Use smaller blocks (or raise vmem_limit_bytes in "
     "pltpu.CompilerParams, up to the physical size)"),
    ("memory_budget", "compile_error", "lower", "memory budget at size 'full', pallas_call #1: kernel "
     "main needs 140.0 MiB of VMEM on TPU v6 lite, over the chip's physical VMEM (limit 32 MiB, "
     "physical 128 MiB) (dynamic grid: counted as many steps): input 0 block (4096, 4096) x2 = 128.0 "
     "MiB"),
    ("memory_budget", "compile_error", "lower", "Triton's rules at size 'small', pallas_call #0: Triton "
     "rule shared_memory: the operands of a dot need an estimated 288 KiB of shared memory (96 KiB x "
     "3 pipeline stages), over NVIDIA H200's 227 KiB at kernel.py:30. Use smaller tiles (along K in "
     "particular) or fewer stages"),
    ("memory_budget", "compile_error", "lower", "Triton 3.3.1 compiled kernel matmul_kernel for sm_90 "
     "needing 262,144 bytes of shared memory, over the block limit of 232,448: the launch would fail "
     "on the GPU. Use smaller tiles or fewer stages"),
    ("memory_budget", "runtime_error", "correct", "XlaRuntimeError: RESOURCE_EXHAUSTED: out of shared "
     "memory"),
    # Pallas' BlockSpec checks, quoted by the tracer's lowering failure
    ("block_shape", "compile_error", "lower", "lowering for tpu: ValueError: The Pallas TPU lowering "
     "currently requires that the last two dimensions of your block shape are divisible by 8 and 128 "
     "respectively, or be equal to the respective dimensions of the overall array. Block spec for "
     "args[0] in pallas_call kernel.py:41 has block shape (96, 100), array shape (512, 512)"),
    ("block_shape", "compile_error", "trace", "ValueError: Block shape for args[0] (= (8,)) must have the "
     "same number of dimensions as the array shape (64, 128). (at kernel.py:12)"),
    # judge/triton_rules.py, judge/budgets.py triton_kernel, judge/runner.py, Pallas' Triton lowering
    ("triton_rule", "compile_error", "lower", "Triton's rules at size 'small', pallas_call #0: Triton rule "
     "power_of_two: tensor get -> f32[48,128] has 6,144 elements, not a power of two at kernel.py:22. "
     "Use power-of-two tiles; mask or pad the edges"),
    ("triton_rule", "compile_error", "lower", "Triton's rules at size 'full', pallas_call #0: Triton rule "
     "max_elements: kernel k: tensor tensor<2048x1024xf32> (tt.load) has 2,097,152 elements, over "
     "Triton's limit of 2^20 = 1,048,576. Load smaller pieces and loop inside the kernel"),
    ("triton_rule", "compile_error", "lower", "Triton's rules at size 'small', pallas_call #0: Triton rule "
     "edge_mask: input 0's block (64, 64) does not divide its array (100, 64) (axis 0: 100 % 64 = "
     "36), and the kernel accesses it without a mask: the last program reads or writes past the "
     "array's end on the chip"),
    ("triton_rule", "compile_error", "lower", "lowering for gpu: ValueError: The Pallas Triton lowering "
     "currently requires that all operations have array arguments and results whose size is a power "
     "of 2. Encountered an array of shape (48, 128)"),
    ("triton_rule", "compile_error", "lower", "the kernel's Triton IR fails verification (XLA would reject "
     "it on the GPU host): 'tt.load' op operand #0 must be ptr"),
    # judge/gpu_rules.py, reported by the tracer as "GPU race rule: ..."
    ("gpu_race", "incorrect", "lower", "GPU race rule: pallas_call #0: output 0's block does not depend "
     "on grid axis 1 (grid (8, 4)): its 4 programs along that axis write the same block; on a GPU "
     "grid programs run in parallel, so they race"),
    ("gpu_race", "incorrect", "lower", "GPU race rule: pallas_call #0: grid programs (0, 1) and (1, 1) "
     "both write block (0, 1) of output 0 (elements [0:64, 64:128]; grid (2, 2)); on a GPU grid "
     "programs run in parallel, so they race"),
    ("gpu_race", "incorrect", "lower", "GPU race rule: pallas_call #0: cannot prove the GPU writes "
     "race-free: output 0 has a BoundedSlice block dimension"),
    # judge/rules.py check_target
    ("outside_work", "rejected", "lower", "work outside pallas_call: 62% of the task's FLOPs run in XLA "
     "(dot_general 3.4e+09 FLOPs); at most 10% may (glue like reshapes, casts and padding is free)"),
    ("outside_work", "rejected", "lower", "outside kernels the module uses sort x1: not on the allow-list "
     "of free glue or countable ops (counted as heavy); compute in Pallas instead"),
    # sandbox/tracer.py export failure, judge/runner.py, parent.py _triton_compile
    ("compile_error", "compile_error", "lower", "lowering for tpu: NotImplementedError: Unimplemented "
     "primitive in Pallas TPU lowering for tc: cumsum. (at kernel.py:19)"),
    ("compile_error", "compile_error", "lower", "the target export does not deserialize: ValueError: "
     "bad magic"),
    ("compile_error", "compile_error", "lower", "Triton 3.3.1 could not compile kernel matmul_kernel for "
     "sm_90: RuntimeError: PassManager::run failed"),
    # judge/runner.py, tracer.py (untrusted interpreter)
    ("runtime_error", "runtime_error", "correct", "untrusted interpreter: XlaRuntimeError: INTERNAL: "
     "Generated function failed: CpuCallback error: IndexError: index 64 is out of bounds for axis 0 "
     "with size 64"),
    ("runtime_error", "runtime_error", "time", "XlaRuntimeError: INTERNAL: Failed to launch CUDA kernel"),
    # evaluator/judge/compare.py check_outputs, judge/rules.py check_export
    ("incorrect", "incorrect", "correct", "output: 3072 of 65536 elements (4.7%) exceed atol 0.01 + rtol "
     "0.01·|truth|, within [0:8, 0:512], first at (0, 3); worst at (5, 17): got 0.91823, truth 0.40211"),
    ("incorrect", "incorrect", "lower", "kernel returns (f32[8,128],), the reference returns "
     "(f32[8,256],) (shapes and dtypes must match exactly)"),
    ("incorrect", "incorrect", "recheck", "output dtype bfloat16 != expected float32"),
    ("nan_inf", "incorrect", "correct", "output has 4096 NaN/Inf of 65536 elements (6.2%), at [56:64, "
     "0:512] (every element there): e.g. never written, or read out of bounds"),
    # untrusted.py, parent.py
    ("timeout", "timeout", "trace", "no verdict within 120 s (wall clock), while starting the tracer, "
     "loading the kernel and tracing it; tracer killed"),
    ("timeout", "timeout", "correct", "no verdict within 120 s (wall clock) running the exported module; "
     "runner killed"),
    ("crashed", "crashed", "lower", "tracer exceeded the 8 GiB memory limit while tracing the kernel at "
     "the task's other sizes (memory budgets) (finished: trace 2.1 s); killed"),
    ("crashed", "crashed", "correct", "worker died from signal SIGSEGV: Fatal Python error: Segmentation "
     "fault"),
    ("crashed", "crashed", "lower", "the evaluator failed on this kernel: KeyError: 'stages'"),
    ("unverified", "unverified", "correct", "the kernel has no exportable interpret-mode lowering, so the "
     "trusted side cannot run it on this CPU and nothing vouches for its outputs (it passed every "
     "check up to lowering; evaluate it on the chip with --mode device): NotImplementedError: wgmma"),
]


@pytest.mark.parametrize("category, status, stage, message", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_evaluator_message_lands_in_its_category(category, status, stage, message):
    assert classify({"status": status, "stage": stage, "message": message}) == category


def test_every_category_is_covered_and_explained():
    covered = {case[0] for case in CASES} | {"other"}
    assert covered == set(CATEGORIES)
    for key, (label, meaning) in CATEGORIES.items():
        assert label and len(meaning) > 20 and "\n" not in meaning, key
        assert taxonomy.label(key) == label and taxonomy.meaning(key) == meaning


@pytest.mark.parametrize("event", [
    {"status": "rejected", "stage": "lower", "message": "a rule written after this report: no kernel "
     "may be named frobnicate"},
    {"status": "rejected", "stage": "correct", "message": ""},
    {"status": "exploded", "stage": "correct", "message": "a status the evaluator never had"},
    {"stage": "lower", "message": "an event without a status"},
])
def test_unknown_messages_and_statuses_land_in_other(event):
    assert classify(event) == "other"


def test_correct_is_no_failure_and_only_status_stage_message_are_read():
    assert classify({"status": "correct", "stage": "correct", "message": ""}) is None
    event = {"status": "incorrect", "stage": "correct", "message": "output: 1 of 4 elements (25.0%) "
             "exceed atol 0.01 + rtol 0.01·|truth|, at [0:1] (every element there)"}
    noisy = {**event, "task": "8p_gemm", "target": "gpu", "warnings": ["GPU race rule"],
             "known_limitation": "block shape", "stages": {"lower": {"interpret_export_error": "NaN/Inf"}}}
    assert classify(event) == classify(noisy) == "incorrect"


def test_the_status_decides_where_the_message_may_not():
    """A static-stage failure is decided by its stage, even when its message quotes a rule's
    words; a timeout stays a timeout whatever it was doing."""
    assert classify({"status": "rejected", "stage": "static",
                     "message": "policy violation: line 4: the string 'GPU race rule:' names something "
                                "kernels may not reach"}) == "static_policy"
    assert classify({"status": "timeout", "stage": "lower",
                     "message": "no verdict within 60 s (wall clock), while tracing the kernel at the "
                                "task's other sizes (memory budgets); tracer killed"}) == "timeout"


def test_count_keeps_the_taxonomy_order_and_skips_correct():
    events = [{"status": s, "stage": st, "message": m} for _, s, st, m in CASES[::-1]]
    events.append({"status": "correct", "stage": "correct", "message": ""})
    counts = taxonomy.count(events)
    assert list(counts) == [c for c in CATEGORIES if c in counts]
    assert sum(counts.values()) == len(CASES)
    assert counts["memory_budget"] == sum(c[0] == "memory_budget" for c in CASES)


def test_a_rule_code_decides_whatever_the_message_says():
    """The judge's outside-work codes are policy: filed under outside work even when the
    message (which may quote a kernel's own text) reads like another category's."""
    for rule in ("outside_flops", "outside_bytes", "outside_unpriced", "output_without_kernel"):
        event = {"status": "rejected", "stage": "lower", "rule": rule,
                 "message": "GPU race rule: grid programs (0,) and (1,) both write"}
        assert classify(event) == "outside_work"
    assert classify({"status": "no_pallas", "stage": "lower", "rule": "no_kernel",
                     "message": "work outside pallas_call"}) == "no_pallas"
    # an output no kernel writes has no message pattern: only its code files it
    assert classify({"status": "rejected", "stage": "lower", "rule": "output_without_kernel",
                     "message": "output 0 is not written by any kernel"}) == "outside_work"
    # runs written before codes existed are still read by their messages
    assert classify({"status": "rejected", "stage": "lower",
                     "message": "work outside pallas_call: 62% of the task's FLOPs"}) == "outside_work"
    # an unknown code is not believed
    assert classify({"status": "rejected", "stage": "lower", "rule": "made_up",
                     "message": "sandbox: open('/etc/passwd') is not allowed"}) == "sandbox_rule"

