"""Cheating kernels (tests/adversarial/kernels/*.py): each gets its exact non-`correct` verdict,
with a message naming the rule it broke. Static rules are backed by runtime guards: every
`*_obfuscated.py` cheat passes the static policy and is caught when it acts."""

import contextlib
import json
import os
import shutil
import signal
import socket
import threading
from pathlib import Path

import pytest

KERNELS = Path(__file__).parent / "kernels"
GEMM, NORM = "8p_gemm", "12p_rmsnorm"
BIAS, SOFTMAX = "19k_matmul_subtract_multiply_relu", "50k_matmul_gelu_softmax"
OUTSIDE = "work outside pallas_call"
FRAME = "frame inspection"
OS_ISOLATION = "sandbox (OS isolation)"
PATCHED = "patched harness code: jax.block_until_ready"

CASES = [
    # file, task, status, stage, words the message must contain
    ("plain_jnp.py", GEMM, "no_pallas", "trace", "no pallas_call"),
    ("copy_matmul_in_xla.py", GEMM, "no_pallas", "lower", OUTSIDE),
    ("copy_rmsnorm_in_xla.py", NORM, "no_pallas", "lower", OUTSIDE),
    ("copy_matmul_in_xla_gpu.py", GEMM, "no_pallas", "lower", OUTSIDE),
    ("pure_callback_static.py", GEMM, "rejected", "static", ".pure_callback"),
    ("io_callback_static.py", GEMM, "rejected", "static", "io_callback"),
    # a leftover print is an honest mistake as often as a leak: refused before anything runs,
    # as a compile_error naming its line (not `rejected`, the status for gaming the check)
    ("debug_print_in_kernel.py", GEMM, "compile_error", "static", "jax.debug.print at line"),
    ("callback_obfuscated.py", GEMM, "rejected", "trace", "host callback (pure_callback)"),
    ("host_numpy.py", GEMM, "compile_error", "trace", "host NumPy/Python on input values"),
    ("task_reference_static.py", GEMM, "rejected", "static", "jaxbench.tasks"),
    ("task_reference_obfuscated.py", GEMM, "no_pallas", "lower", OUTSIDE),
    ("exec_eval_static.py", GEMM, "rejected", "static", "exec()"),
    ("import_trick_obfuscated.py", GEMM, "rejected", "trace", "sandbox: subprocess.Popen"),
    ("os_system_static.py", GEMM, "rejected", "static", "import of 'os'"),
    ("os_system_obfuscated.py", GEMM, "rejected", "trace", "sandbox: os.system"),
    ("subprocess_static.py", GEMM, "rejected", "static", "import of 'subprocess'"),
    ("posixsubprocess_obfuscated.py", GEMM, "rejected", "trace",
     "sandbox: _posixsubprocess.fork_exec"),
    ("socket_static.py", GEMM, "rejected", "static", "import of 'socket'"),
    ("ctypes_static.py", GEMM, "rejected", "static", "import of 'ctypes'"),
    ("ctypes_numpy_obfuscated.py", GEMM, "rejected", "trace", "sandbox: ctypes.dlopen"),
    ("gc_static.py", GEMM, "rejected", "static", "import of 'gc'"),
    ("gc_obfuscated.py", GEMM, "rejected", "trace", "sandbox: gc.get_objects"),
    ("frame_static.py", GEMM, "rejected", "static", "._getframe"),
    ("frame_obfuscated.py", GEMM, "rejected", "trace", f"sandbox: reading .tb_frame is not "
                                                      f"allowed in a kernel ({FRAME})"),
    ("write_outside_static.py", GEMM, "rejected", "static", "open()"),
    ("np_save_outside.py", GEMM, "rejected", "trace", "outside the private temp dir"),
    ("patch_static.py", GEMM, "rejected", "static", "assigning to an attribute of module 'jax'"),
    ("patch_timer_obfuscated.py", GEMM, "rejected", "trace",
     "patched harness code: time.perf_counter"),
    ("patch_config_obfuscated.py", GEMM, "rejected", "trace",
     "patched harness code: jax.config.jax_default_matmul_precision"),
    ("fork_bomb.py", GEMM, "rejected", "trace", "sandbox: os.fork"),
    ("memory_bomb.py", GEMM, "crashed", "trace", "out of memory"),
    ("endless_trace.py", GEMM, "timeout", "trace", "no verdict within"),
    ("ignores_bias.py", BIAS, "incorrect", "correct", "exceed atol"),
    ("constant_output.py", SOFTMAX, "incorrect", "correct", "exceed atol"),
    # (the unwritten half holds random bits: NaN/Inf or values off the truth)
    ("partial_write.py", GEMM, "incorrect", "correct", "elements"),
    ("float8_dot.py", GEMM, "incorrect", "correct", "exceed atol"),
    ("trace_count.py", GEMM, "incorrect", "correct", "exceed atol"),
    ("parallel_race.py", GEMM, "runtime_error", "correct", "Revisited block"),
    # accounting blind spots: the matmul outside the kernel in forms a dot counter may miss
    ("complex64_matmul.py", GEMM, "no_pallas", "lower", OUTSIDE),
    ("int32_matmul.py", GEMM, "no_pallas", "lower", OUTSIDE),
    ("einsum_bf16.py", GEMM, "no_pallas", "lower", OUTSIDE),
    ("ragged_dot.py", GEMM, "no_pallas", "lower", OUTSIDE),
    ("triangular_solve.py", GEMM, "no_pallas", "lower", OUTSIDE),
    ("linalg_solve.py", GEMM, "no_pallas", "lower", "custom_call:LuDecomposition"),
    ("sparse_bcoo.py", GEMM, "no_pallas", "lower", OUTSIDE),
    ("while_loop_matmul.py", GEMM, "no_pallas", "lower", "stablehlo.while"),
    ("fori_loop_matmul.py", GEMM, "no_pallas", "lower", OUTSIDE),
    # own primitives and lowering rules are refused by name (their obfuscated forms, reached
    # without these imports, are refused at run time: tests/adversarial/boundary/)
    ("fake_pallas_call_primitive.py", GEMM, "rejected", "static",
     "import from 'jax.extend.core' is not allowed"),
    ("relowered_concatenate.py", GEMM, "rejected", "static",
     "import from 'jax.interpreters' is not allowed"),
    ("custom_jvp_matmul.py", GEMM, "no_pallas", "lower", OUTSIDE),
    ("kernel_region_name.py", GEMM, "rejected", "lower", "named like a kernel region"),
    ("kernel_region_name_in_loop.py", GEMM, "rejected", "lower", "named like a kernel region"),
    # checked != run
    # (every size is traced before anything is exported: the later trace shows no kernel)
    ("first_trace_wrong.py", GEMM, "no_pallas", "lower", "at size 'full': no pallas_call"),
    ("disable_jit_at_import.py", GEMM, "no_pallas", "lower", OUTSIDE),
    # (its output at the other size has the wrong shape: the judge's budget check of that
    # size's module sees it before anything runs)
    ("live_arrays_precompute.py", GEMM, "compile_error", "lower",
     "at size 'full': kernel returns [((8192, 8192), 'bfloat16')]"),
    ("interpreter_detect_race.py", GEMM, "incorrect", "correct", "data race"),
    ("interpreter_probe_notimplemented.py", GEMM, "rejected", "static",
     "import from 'jax.extend.core' is not allowed"),
    ("interpret_true_itself.py", GEMM, "rejected", "trace", "passes interpret=True"),
    ("platform_dependent_switch.py", GEMM, "rejected", "trace", "platform-dependent code"),
    # candidate code that runs after the trace (a second call, a lowering rule, a thread, a
    # finalizer) tries to disarm the race check: the integrity check after every stage sees it
    ("second_trace_patch_obfuscated.py", GEMM, "rejected", "lower", PATCHED),
    ("lowering_rule_patch_obfuscated.py", GEMM, "rejected", "trace",
     "uses primitives JAX does not define (layout_hint)"),
    ("thread_at_import_obfuscated.py", GEMM, "rejected", "trace", "sandbox: starting a thread"),
    # (its finalizer waits for the trace stage and patches the harness: the integrity check
    # after the next stage names it; the judge's own JAX is never touched)
    # the seal keeps its finalizer from reading status.json: it never patches, and its race
    # is found
    ("finalizer_after_trace_obfuscated.py", GEMM, "incorrect", "correct", "data race"),
    # interpreter detectors: memory never written holds random bits, two fills must agree
    ("nan_scratch_detector.py", NORM, "incorrect", "correct", "exceed atol"),
    ("uninitialised_nudge.py", NORM, "incorrect", "correct",
     "the outputs depend on uninitialised memory"),
    # escapes
    ("dir_fd_write_obfuscated.py", GEMM, "rejected", "trace", "sandbox: opening directory '/'"),
    ("profiler_trace_obfuscated.py", GEMM, "rejected", "trace", "sandbox: jax.profiler.start_trace"),
    ("profiler_server_obfuscated.py", GEMM, "rejected", "trace", "sandbox: jax.profiler.start_server"),
    ("proc_parent_mem_obfuscated.py", GEMM, "rejected", "trace", "another process's /proc"),
    ("proc_self_mem_write_obfuscated.py", GEMM, "rejected", "trace",
     "sandbox: opening directory '/proc/self'"),
    ("read_expert_exec_obfuscated.py", GEMM, "rejected", "trace", OS_ISOLATION),
    ("kill_parent_obfuscated.py", GEMM, "rejected", "trace", "sandbox: os.kill"),
    ("pidfd_signal_parent_obfuscated.py", GEMM, "rejected", "trace", OS_ISOLATION),
    ("env_api_key_obfuscated.py", GEMM, "rejected", "trace", "another process's /proc"),
    ("proc_cmdlines_obfuscated.py", GEMM, "rejected", "trace", "listing '/proc' is not allowed"),
    # GPU races
    ("gpu_reduction_race.py", GEMM, "incorrect", "lower", "GPU race rule"),
    ("gpu_full_block_race.py", GEMM, "incorrect", "lower", "GPU race rule"),
    # resources
    ("endless_kernel_loop.py", GEMM, "timeout", "correct", "no verdict within"),
    ("huge_scratch.py", GEMM, "compile_error", "lower", "memory budget at size 'small'"),
]

# Files a cheat tries to create outside its private dir: they must never exist afterwards.
MARKERS = {
    "import_trick_obfuscated.py": "/tmp/jaxbench_adversarial_import_trick",
    "os_system_obfuscated.py": "/tmp/jaxbench_adversarial_os_system",
    "posixsubprocess_obfuscated.py": "/tmp/jaxbench_adversarial_fork_exec",
    "np_save_outside.py": "/tmp/jaxbench_adversarial_np_save.npy",
    "dir_fd_write_obfuscated.py": "/tmp/jaxbench_adversarial_dir_fd",
    "profiler_trace_obfuscated.py": "/tmp/jaxbench_adversarial_profile",
}
# TCP ports a cheat tries to listen on: nothing may accept a connection there while it runs.
PORTS = {"profiler_server_obfuscated.py": 39217}
# Cheats that signal their parent (this process) with SIGTERM: it must never arrive.
SIGNALLERS = {"kill_parent_obfuscated.py", "pidfd_signal_parent_obfuscated.py"}


def _timeout(name: str) -> float:
    return {"endless_trace.py": 6, "fork_bomb.py": 60, "endless_kernel_loop.py": 8}.get(name, 180)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def _watch_side_effects(name: str):
    """While a cheat runs: polls its port (if any) and records signals sent to this process."""
    port, seen, done = PORTS.get(name), [], threading.Event()
    if port is not None and _listening(port):
        pytest.skip(f"port {port} is already in use here")

    def poll():
        while not done.is_set():
            if _listening(port):
                seen.append(f"something listened on port {port}")
            done.wait(0.05)

    watcher = threading.Thread(target=poll, daemon=True) if port is not None else None
    previous = signal.signal(signal.SIGTERM, lambda *_: seen.append("SIGTERM reached the parent")
                             ) if name in SIGNALLERS else None
    if watcher:
        watcher.start()
    try:
        yield seen
    finally:
        done.set()
        if watcher:
            watcher.join()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize("name,task,status,stage,words", CASES, ids=[c[0] for c in CASES])
def test_cheat_gets_its_verdict(evaluator, name, task, status, stage, words):
    marker = MARKERS.get(name)
    if marker and os.path.lexists(marker):
        (shutil.rmtree if os.path.isdir(marker) else os.remove)(marker)
    with _watch_side_effects(name) as side_effects:
        result = evaluator.evaluate(KERNELS / name, task, trials=2, timeout_s=_timeout(name),
                                    memory_gb=3)
    assert (result.status, result.stage) == (status, stage), result.message
    assert words in result.message, result.message
    if marker:
        assert not os.path.exists(marker), f"{name} wrote {marker} outside its temp dir"
    assert side_effects == [], f"{name}: {side_effects}"


def test_api_key_does_not_leak(monkeypatch):
    """A key in the evaluator's environment never reaches the candidate (the tracer gets a
    minimal environment and cannot read /proc/<ppid>/environ): not in any result field."""
    from jaxbench.evaluator import Evaluator

    key = "sk-test-leak"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with Evaluator(spares=0) as ev:  # a fresh pool: its tracers start with this environment
        result = ev.evaluate(KERNELS / "env_api_key_obfuscated.py", GEMM, trials=1,
                             timeout_s=60, memory_gb=3)
    assert result.status == "rejected", result.message
    assert key not in result.message
    assert key not in json.dumps(result.to_event(), default=str)


def test_every_cheat_file_is_covered_and_documented():
    files = {p.name for p in KERNELS.glob("*.py")}
    assert files == {c[0] for c in CASES}
    for path in KERNELS.glob("*.py"):
        doc = path.read_text().split('"""')
        assert len(doc) >= 3 and doc[1].startswith("Cheat ("), path.name


def test_obfuscated_cheats_pass_the_static_policy():
    """The runtime guards, not the static policy, catch these: proves the guards are live."""
    from jaxbench.evaluator.parent.static import check_source

    for path in KERNELS.glob("*_obfuscated.py"):
        check_source(path.read_text(), path.name)


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if text.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def test_cheats_leave_no_file_or_process_behind(tmp_path):
    """Process-spawning and file-writing cheats in a pool rooted at tmp_path: afterwards the
    pool's root is empty, no marker file exists and no process of theirs is alive."""
    from jaxbench.evaluator import Evaluator

    names = ["posixsubprocess_obfuscated.py", "fork_bomb.py", "np_save_outside.py"]
    with Evaluator(spares=0, work_dir=tmp_path) as ev:
        for name in names:
            result = ev.evaluate(KERNELS / name, GEMM, trials=1, timeout_s=_timeout(name))
            assert result.status == "rejected", result.message
    assert list(tmp_path.iterdir()) == []
    for name in names:
        marker = MARKERS.get(name)
        assert marker is None or not os.path.exists(marker)
    assert _processes_mentioning("jaxbench_adversarial") == []
    assert _processes_mentioning(str(tmp_path)) == []
