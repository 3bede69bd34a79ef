"""Writes through a directory fd are refused by the audit hook itself, not only by Landlock.

The "open" audit event carries (path, mode, flags) but not dir_fd: a kernel that opens "/" and
then creates "tmp/<marker>" relative to that fd showed the hook a relative path, which it
resolved against the working directory (inside the private dir) and allowed. On a host without
Landlock the file was written. The hook now refuses to open any directory after lock-down, so no
directory fd exists for such a path to be relative to.

The first test runs the guards in a fresh process with no Landlock, no namespaces and nothing
else of the OS isolation (lock-down is irreversible, hence the subprocess): what it refuses, the
hook refused. The second goes through the evaluator: the hook's own message ("sandbox: ...",
not "sandbox (OS isolation): ...") shows it refused before the OS was asked."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ADVERSARIAL = Path(__file__).parent / "adversarial" / "kernels"
GEMM = "8p_gemm"

_SCRIPT = """
import json, os, sys, tempfile
from pathlib import Path
from jaxbench.evaluator.sandbox import guards
d = Path(tempfile.mkdtemp())
(d / "scratch").mkdir()
os.chdir(d / "scratch")  # as the tracer does: the working directory is below the private dir
tempfile.tempdir = str(d / "scratch")
(d / "scratch" / "sub").mkdir()
(d / "scratch" / "data.txt").write_text("x")
marker = sys.argv[1]
relative = marker.lstrip("/")
old_dir_fd = os.open("/", os.O_RDONLY)  # a directory fd left open before lock-down
guards.install_hook(); guards.disarm_unaudited(); guards.lock_down(d)
results = {}
def attempt(label, source):
    try:
        scope = {"os": os, "marker": marker, "relative": relative, "old_dir_fd": old_dir_fd}
        exec(compile(source, str(d / "candidate.py"), "exec"), scope)  # candidate code
        results[label] = "ok"
    except BaseException as exc:
        results[label] = f"{type(exc).__name__}: {exc}"
# the finding: O_PATH|O_DIRECTORY on "/", then a write relative to it
attempt("o_path", "root = os.open('/', os.O_PATH | os.O_DIRECTORY)\\n"
                  "os.close(os.open(relative, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=root))")
# on Linux a plain read-only open of a directory is a usable dir_fd too
attempt("o_rdonly", "root = os.open('/', os.O_RDONLY)\\n"
                    "os.close(os.open(relative, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=root))")
attempt("o_directory_tmp", "os.open('/tmp', os.O_RDONLY | os.O_DIRECTORY)")
attempt("symlinked_dir", "os.open('/proc/self/cwd', os.O_RDONLY)")
# inside the private dir too: a fd on the private dir (above the working directory) lets
# "../<sibling>/..." reach its parent while the hook resolves it inside
attempt("private_dir", f"os.open({str(d)!r}, os.O_RDONLY)")
attempt("working_dir", "os.open('.', os.O_RDONLY)")
attempt("subdir", "os.open('sub', os.O_RDONLY)")
# path events carry dir_fd: refused with any directory fd (one left open before lock-down)
attempt("mkdir_dir_fd", "os.mkdir(relative + '_dir', dir_fd=old_dir_fd)")
attempt("symlink_dir_fd", "os.symlink('x', relative + '_link', dir_fd=old_dir_fd)")
attempt("rename_dir_fd", "os.rename('a', 'b', src_dir_fd=old_dir_fd, dst_dir_fd=old_dir_fd)")
# no audit event at all: disarmed
attempt("mknod", "os.mknod(marker + '_mknod')")
attempt("mkfifo", "os.mkfifo(marker + '_fifo')")
# honest file work in the private dir is unaffected
attempt("honest_write", "open('out.txt', 'w').write('y'); open('out.txt').read()")
attempt("honest_os_open", "os.close(os.open('data.txt', os.O_RDONLY))")
attempt("honest_listdir", "assert 'data.txt' in os.listdir('.')\\n"
                          "assert any(e.name == 'sub' for e in os.scandir('.'))")
attempt("honest_mkdir", "os.mkdir('made'); os.rmdir('made')")
attempt("builtin_open_dir", "open('sub')")  # no fd handed out: the usual IsADirectoryError
print(json.dumps(results))
"""


def _run_guarded(marker: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(__file__).parents[1] / "src"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", _SCRIPT, marker], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _clear(*paths: str) -> None:
    for path in paths:
        if os.path.lexists(path):
            (os.rmdir if os.path.isdir(path) and not os.path.islink(path) else os.remove)(path)


def test_hook_refuses_directory_fds_without_landlock():
    marker = f"/tmp/jaxbench_guards_dir_fd_{os.getpid()}"
    extras = [marker + s for s in ("_dir", "_link", "_mknod", "_fifo")]
    _clear(marker, *extras)
    try:
        results = _run_guarded(marker)
        for label in ("o_path", "o_rdonly"):
            assert results[label] == ("SandboxViolation: opening directory '/' is not allowed "
                                      "in a kernel (paths relative to a directory fd escape the "
                                      "private temp dir's checks)"), results[label]
        for label in ("o_directory_tmp", "symlinked_dir", "private_dir", "working_dir",
                      "subdir"):
            assert results[label].startswith("SandboxViolation: opening directory"), (
                label, results[label])
        for label, event in (("mkdir_dir_fd", "os.mkdir"), ("symlink_dir_fd", "os.symlink"),
                             ("rename_dir_fd", "os.rename")):
            assert results[label] == (f"SandboxViolation: {event} relative to a directory fd "
                                      "(dir_fd) is not allowed in a kernel"), results[label]
        assert results["mknod"] == "SandboxViolation: os.mknod is not allowed in a kernel"
        assert results["mkfifo"] == "SandboxViolation: os.mkfifo is not allowed in a kernel"
        for label in ("honest_write", "honest_os_open", "honest_listdir", "honest_mkdir"):
            assert results[label] == "ok", (label, results[label])
        assert results["builtin_open_dir"].startswith("IsADirectoryError"), results
        for path in (marker, *extras):
            assert not os.path.lexists(path), f"{path} was created outside the private dir"
    finally:
        _clear(marker, *extras)


_RDONLY_KERNEL = '''"""Cheat (8p_gemm): the dir-fd write with "/" opened read-only (a dir_fd too)."""
import operator
import typing

from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"

MARKER = "tmp/jaxbench_guards_dir_fd_rdonly"


def kernel(a, b):
    get = operator.attrgetter
    the_os = get("mod" + "ules")(get("sy" + "s")(typing))["o" + "s"]
    root = the_os.open("/", the_os.O_RDONLY)
    fd = the_os.open(MARKER, the_os.O_WRONLY | the_os.O_CREAT, 0o644, dir_fd=root)
    the_os.write(fd, b"escaped")
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
'''


@pytest.mark.parametrize("variant", ["o_path", "o_rdonly"])
def test_evaluator_refuses_dir_fd_write_in_the_hook(evaluator, tmp_path, variant):
    if variant == "o_path":
        kernel, marker = ADVERSARIAL / "dir_fd_write_obfuscated.py", "/tmp/jaxbench_adversarial_dir_fd"
    else:
        kernel, marker = tmp_path / "dir_fd_rdonly_obfuscated.py", "/tmp/jaxbench_guards_dir_fd_rdonly"
        kernel.write_text(_RDONLY_KERNEL)
    _clear(marker)
    result = evaluator.evaluate(kernel, GEMM, trials=1, timeout_s=180, memory_gb=3)
    assert (result.status, result.stage) == ("rejected", "trace"), result.message
    # the hook's message, not the OS's ("sandbox (OS isolation): ..."): Landlock was never asked
    assert result.message.startswith("sandbox: opening directory '/' is not allowed"), \
        result.message
    assert not os.path.exists(marker), f"{kernel.name} wrote {marker}"
