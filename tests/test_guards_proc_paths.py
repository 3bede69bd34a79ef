"""The audit hook refuses process memory and other processes' /proc files however the path is
spelled, not only by Landlock.

The hook used to match ``/proc/(self|thread-self|<pid>)[/task/<tid>]/(mem|environ|pagemap)``
against the raw path of an "open" event: ``/proc/self/./mem``, ``/proc//self/mem``,
``/proc/self/task/../mem``, a relative path from the working directory, a path through a
symlink (``/dev/fd/../mem``, ``/proc/self/cwd/../..``), or anything of another process (its
command line, its ``root`` and ``cwd`` links) got through. It now normalises the path one
component at a time (symlinks resolved, ``/proc/self`` read as ``/proc/<pid>``) and allows
procfs only for the process's own ``/proc/<pid>`` (less its memory) and the machine's
description, as Landlock does.

Like tests/test_guards_dir_fd.py, the guards run in a fresh process with no Landlock, no
namespaces and nothing else of the OS isolation (lock-down is irreversible, hence the
subprocess): what it refuses, the hook refused. Every spelling in REFUSED was allowed by the
raw-path check (checked against it when these tests were written: each one opened, or failed
with an OS error, never a SandboxViolation)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = """
import json, os, pathlib, sys, tempfile
from pathlib import Path
from jaxbench.evaluator.sandbox import guards
d = Path(tempfile.mkdtemp())
(d / "scratch").mkdir()
os.chdir(d / "scratch")  # as the tracer does: the working directory is below the private dir
up = "../" * (len(Path.cwd().resolve().parts) - 1)  # from the working directory to "/"
other = os.getppid()  # another process of the same user: the test's own
guards.install_hook(); guards.disarm_unaudited(); guards.lock_down(d)
results = {}
for label, source in json.loads(sys.argv[1]).items():
    try:
        scope = {"os": os, "pathlib": pathlib, "up": up, "other": other}
        exec(compile(source, str(d / "candidate.py"), "exec"), scope)  # candidate code
        results[label] = "ok"
    except BaseException as exc:
        results[label] = f"{type(exc).__name__}: {exc}"
print(json.dumps(results))
"""

# the spellings of process memory and of other processes' files: every one refused
REFUSED = {
    "dot": "open('/proc/self/./mem', 'rb').close()",
    "double_slash": "open('/proc//self/mem', 'rb').close()",
    "task_dotdot": "open('/proc/self/task/../mem', 'rb').close()",
    "other_pid_dotdot": "open(f'/proc/{other}/../self/mem', 'rb').close()",
    "thread_self_dotdot": "open('/proc/thread-self/../../mem', 'rb').close()",
    "relative": "open(up + 'proc/self/mem', 'rb').close()",
    "relative_environ": "open(up + 'proc/self/environ', 'rb').close()",
    "bytes": "open(b'/proc/self/./environ', 'rb').close()",
    "bytes_os_open": "os.close(os.open(b'/proc//self/mem', os.O_RDONLY))",
    "path_object": "pathlib.Path('/proc/self/task/..', 'environ').read_bytes()",
    "dev_fd_symlink": "open('/dev/fd/../mem', 'rb').close()",
    "cwd_symlink": "open('/proc/self/cwd/' + up + 'proc/self/mem', 'rb').close()",
    "pagemap_task": "open('/proc/thread-self/./pagemap', 'rb').close()",
    "other_cmdline": "open(f'/proc/{other}/cmdline', 'rb').close()",
    "other_status": "open(f'/proc/{other}//status').close()",
    "other_environ_relative": "open(up + f'proc/{other}/environ', 'rb').close()",
    "other_root_link": "open(f'/proc/{other}/root/etc/hostname').close()",
    "other_cwd_link": "os.listdir(f'/proc/{other}/cwd')",
    "other_fd_listing": "os.listdir(f'/proc/{other}/fd')",
    "pid1_maps": "open('/proc/1/maps').close()",
    "proc_listing": "os.listdir('/proc')",
    "proc_scandir": "list(os.scandir('/proc/self/..'))",
    "beyond_machine": "open('/proc/self/../uptime').close()",
}

# what a process legitimately reads of itself and of the machine: still allowed
ALLOWED = {
    "cpuinfo": "open('/proc/cpuinfo').read()",
    "meminfo": "open('/proc/meminfo').read()",
    "stat": "open('/proc/stat').read()",
    "sys": "open('/proc/sys/kernel/ostype').read()",
    "self_status": "open('/proc/self/status').read()",
    "self_maps": "open('/proc/self/maps').read()",
    "own_pid_status": "open(f'/proc/{os.getpid()}/status').read()",
    "thread_self_status": "open('/proc/thread-self/status').read()",
    "self_task": "os.listdir('/proc/self/task')",
    "mounts_symlink": "open('/proc/mounts').read()",
    "bytes_self_status": "open(b'/proc/self/status', 'rb').read()",
    "relative_self_status": "open(up + 'proc/self/status').read()",
    "path_object_cmdline": "pathlib.Path('/proc/self/cmdline').read_bytes()",
    "outside_proc": "open('/etc/hostname').read()",
}


# spellings that name nothing: /proc/<pid>/task holds thread ids, no "self"
NOTHING = {
    "thread_self_dotdot_self": "open('/proc/thread-self/../self/mem', 'rb').close()",
}


def _run_guarded(attempts: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(__file__).parents[1] / "src"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(attempts)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def results() -> dict[str, str]:
    return _run_guarded({**REFUSED, **ALLOWED, **NOTHING})


@pytest.mark.parametrize("label", sorted(REFUSED))
def test_hook_refuses_proc_spelling(results, label):
    assert results[label].startswith("SandboxViolation: "), (label, results[label])
    assert "not allowed in a kernel" in results[label], results[label]


@pytest.mark.parametrize("label", sorted(ALLOWED))
def test_hook_allows_own_and_machine_procfs(results, label):
    assert results[label] == "ok", (label, results[label])


@pytest.mark.parametrize("label", sorted(NOTHING))
def test_paths_that_name_nothing_fail_as_usual(results, label):
    assert results[label].startswith("FileNotFoundError"), (label, results[label])


def test_refusals_name_the_reason(results):
    assert "(process memory: /proc/" in results["dot"], results["dot"]
    assert results["dot"].endswith("/mem)"), results["dot"]
    assert "environ)" in results["bytes"], results["bytes"]
    assert "(another process's /proc/" in results["other_cmdline"], results["other_cmdline"]
    assert "(another process's /proc/1)" in results["pid1_maps"], results["pid1_maps"]
    # the root link leads to "/etc/hostname", which anyone may read: the lookup went through
    # the other process's directory, and that is what counts
    assert "(another process's /proc/" in results["other_root_link"], results["other_root_link"]
    assert "procfs beyond the process's own" in results["proc_listing"], results["proc_listing"]
    assert results["beyond_machine"].endswith("/proc/uptime)"), results["beyond_machine"]
