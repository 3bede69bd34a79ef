"""The processes that hold the run's secret and the trial keys are not dumpable: the parent
(the process of an :class:`~jaxbench.evaluator.Evaluator`), the trusted runner, and the
tracers' fork server, an ancestor of every tracer. Another process of the same user can then
neither ptrace them nor read their ``/proc/<pid>/{mem,environ,maps,fd,...}``.

Root with ``CAP_SYS_PTRACE`` (on recent kernels also ``CAP_SYS_ADMIN`` or ``CAP_PERFMON``)
reads non-dumpable processes all the same, and the tests run as root on CI, so every process
here first gives those up (so do the programs they start, root's bounding set losing them too),
and what "another process" may read is asked of a reader without them: as root or as any other
user, it reads a dumpable process of its own user and is refused a non-dumpable one. Each
process also says ``PR_GET_DUMPABLE`` itself. A tracer forked from the (non-dumpable) fork
server is dumpable again: the parent checks its /proc (a non-dumpable tracer fails the
parent's check of its namespaces here), and it writes its own uid_map."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux prctl")

_ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    [str(Path(__file__).parents[1] / "src"), os.environ.get("PYTHONPATH", "")]))

# Every process of these tests starts with this: no capability, none for what it starts.
# The capabilities that read a non-dumpable process's /proc all the same (CAP_SYS_PTRACE; on
# recent kernels CAP_SYS_ADMIN or CAP_PERFMON for environ and maps), given up by every process
# here, from the bounding set too where allowed (root's: an execve as root would grant them
# again; another user's stays, and grants nothing to a program without file capabilities). The
# others stay: the kernel refuses a reader with fewer capabilities than its target anyway, and
# tracers use theirs to isolate themselves as root.
_READING_CAPABILITIES = (19, 21, 38)  # CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_PERFMON
_WITHOUT = f"""
import ctypes as _ctypes, os as _os
_drop = {_READING_CAPABILITIES!r}
_libc = _ctypes.CDLL(None, use_errno=True)
for _cap in _drop:
    _libc.prctl(24, _cap, 0, 0, 0)  # PR_CAPBSET_DROP (EPERM without CAP_SETPCAP)
class _Header(_ctypes.Structure):
    _fields_ = [("version", _ctypes.c_uint32), ("pid", _ctypes.c_int)]
class _Data(_ctypes.Structure):
    _fields_ = [(n, _ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]
_header, _data = _Header(0x20080522, 0), (_Data * 2)()
assert _libc.capget(_ctypes.byref(_header), _data) == 0
for _cap in _drop:
    for _n in ("effective", "permitted", "inheritable"):
        setattr(_data[_cap // 32], _n, getattr(_data[_cap // 32], _n) & ~(1 << _cap % 32))
assert _libc.capset(_ctypes.byref(_header), _data) == 0
_mask = sum(1 << _cap for _cap in _drop)
with open("/proc/self/status") as _f:
    _caps = {{_l.split()[0]: int(_l.split()[1], 16) for _l in _f if _l.startswith("Cap")}}
assert not (_caps["CapEff:"] | _caps["CapPrm:"]) & _mask, _caps
assert _os.getuid() != 0 or not _caps["CapBnd:"] & _mask, _caps
"""

_READER = _WITHOUT + """
import json, os, sys
from jaxbench.evaluator.common import procs
out = {}
for label, kind, arg in json.loads(sys.argv[1]):
    try:
        if kind == "read":
            with open(arg, "rb") as f:
                f.read(1)
        elif kind == "readlink":
            os.readlink(arg)
        elif kind == "rss":
            assert procs.group_rss_bytes(int(arg)) > 0, "no resident memory found"
        out[label] = "ok"
    except Exception as exc:
        out[label] = type(exc).__name__
print(json.dumps(out))
"""


def _read_as_another_process(*attempts: tuple[str, str, str]) -> dict[str, str]:
    """What a process of the same user without any capability gets for each attempt."""
    done = subprocess.run([sys.executable, "-c", _READER, json.dumps(attempts)],
                          capture_output=True, text=True, timeout=60, env=_ENV)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


class _Target:
    """A Python process run from ``script``, stepped one stdin line at a time."""

    def __init__(self, script: str, *args: str, **popen: object) -> None:
        popen.setdefault("env", _ENV)
        self.proc = subprocess.Popen([sys.executable, "-c", _WITHOUT + script, *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     **popen)

    def line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the process ended (status {self.proc.wait()})"
        return line.strip()

    def step(self) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return self.line()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


_TOGGLE = """
import os, sys
from jaxbench.evaluator.common import procs
from jaxbench.evaluator.sandbox import isolation
make = {"isolation": isolation.make_non_dumpable, "common": procs.make_non_dumpable}[sys.argv[1]]
print(os.getpid(), isolation._prctl(3)[0], flush=True)
sys.stdin.readline()
with open("/proc/self/status") as f:  # the process still reads its own /proc
    own = f.read().startswith("Name:")
print(make(), isolation._prctl(3)[0], own, flush=True)
sys.stdin.readline()
print(isolation.make_non_dumpable(undo=True), isolation._prctl(3)[0], flush=True)
sys.stdin.readline()
"""


@pytest.mark.parametrize("where", ["isolation", "common"])
def test_make_non_dumpable_hides_proc_from_other_processes(where):
    """The one function (evaluator/common/procs.py), as the fork server reaches it through
    sandbox.isolation and the parent and the runner import it (neither may import the
    sandbox)."""
    target = _Target(_TOGGLE, where)
    try:
        pid, dumpable = target.line().split()
        assert dumpable == "1"
        attempts = (("environ", "read", f"/proc/{pid}/environ"),
                    ("mem_maps", "read", f"/proc/{pid}/maps"),
                    ("ns", "readlink", f"/proc/{pid}/ns/mnt"),
                    ("status", "read", f"/proc/{pid}/status"))
        assert _read_as_another_process(*attempts) == dict.fromkeys(
            ("environ", "mem_maps", "ns", "status"), "ok")
        assert target.step() == "True 0 True"
        after = _read_as_another_process(*attempts)
        assert after == {"environ": "PermissionError", "mem_maps": "PermissionError",
                         "ns": "PermissionError", "status": "ok"}, after
        assert target.step() == "True 1"  # undo: what a forked tracer does
        assert _read_as_another_process(*attempts)["environ"] == "ok"
    finally:
        target.close()


_PARENT = """
import os, sys
from jaxbench.evaluator import Evaluator
from jaxbench.evaluator.sandbox import isolation
print(os.getpid(), isolation._prctl(3)[0], flush=True)
sys.stdin.readline()
with Evaluator(spares=0) as ev:
    print(isolation._prctl(3)[0], flush=True)
    sys.stdin.readline()
"""


def test_an_evaluators_process_is_not_dumpable():
    target = _Target(_PARENT, env=dict(_ENV, JAXBENCH_FORK_SERVER="0"))  # no fork server: quick
    try:
        pid, dumpable = target.line().split()
        assert dumpable == "1"
        environ = ("environ", "read", f"/proc/{pid}/environ")
        assert _read_as_another_process(environ) == {"environ": "ok"}
        assert target.step() == "0"
        assert _read_as_another_process(environ) == {"environ": "PermissionError"}
    finally:
        target.close()


_RUNNER = """
from jaxbench.evaluator.judge import runner
runner._warm_up = lambda: None  # JAX's warm-up is not what is tested here
runner._own_device = lambda: {}
runner.main()
"""


def test_the_trusted_runner_is_not_dumpable_and_its_memory_still_counted():
    target = _Target(_RUNNER, start_new_session=True)  # a group of its own, as its pool starts it
    try:
        assert target.line() == "ready {}"
        pid = target.proc.pid
        assert _read_as_another_process(
            ("environ", "read", f"/proc/{pid}/environ"),
            ("fd", "readlink", f"/proc/{pid}/fd/0"),
            ("rss", "rss", str(pid)),  # the parent's memory watchdog (procs.group_rss_bytes)
        ) == {"environ": "PermissionError", "fd": "PermissionError", "rss": "ok"}
    finally:
        target.close()


_POOL = """
import os, sys
from jaxbench.evaluator.parent.pool import TracerPool, _Forked, verify_isolation
pool = TracerPool(spares=1)
try:
    if pool._zygote is None:
        print("no fork server", flush=True)
        sys.exit(0)
    pool.settle()
    spare = pool._spares.queue[0]
    assert isinstance(spare.proc, _Forked)
    while not spare.read_handshake():
        assert spare.proc.poll() is None, "the forked tracer died before its handshake"
    print(pool._zygote.proc.pid, spare.proc.pid, flush=True)
    print(verify_isolation(spare.proc.pid, spare.handshake), flush=True)
    sys.stdin.readline()
finally:
    pool.close()
"""


def test_the_fork_server_is_not_dumpable_and_its_tracers_are():
    target = _Target(_POOL)
    try:
        first = target.line()
        if first == "no fork server":
            pytest.skip("no fork server on this host")
        server, tracer = first.split()
        isolation = target.line()
        assert "userns" in isolation and "parent check failed" not in isolation, isolation
        assert _read_as_another_process(
            ("server_environ", "read", f"/proc/{server}/environ"),
            ("server_ns", "readlink", f"/proc/{server}/ns/mnt"),
            ("tracer_ns", "readlink", f"/proc/{tracer}/ns/mnt"),
            ("tracer_mountinfo", "read", f"/proc/{tracer}/mountinfo"),
        ) == {"server_environ": "PermissionError", "server_ns": "PermissionError",
              "tracer_ns": "ok", "tracer_mountinfo": "ok"}
    finally:
        target.close()
