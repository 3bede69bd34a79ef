"""OS isolation of a worker process (jaxbench.evaluator.sandbox.isolation).

Every restriction is applied in a fresh ``python -c`` child, never in the test process.
The children load the module from its file, so that the check does not import JAX (and
its threads) through ``jaxbench.evaluator``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

MODULE = Path(__file__).resolve().parents[1] / "src" / "jaxbench" / "evaluator" / "sandbox" / "isolation.py"
_spec = importlib.util.spec_from_file_location("_isolation_under_test", MODULE)
iso = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(iso)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux-only isolation")

ABI, ABI_WHY = iso.landlock_abi() if sys.platform == "linux" else (0, "not Linux")


def needs_abi(n: int, what: str):
    return pytest.mark.skipif(
        ABI < n, reason=f"{what} needs Landlock ABI >= {n}; here ABI {ABI} {ABI_WHY}".rstrip())


PRELUDE = f"""
import importlib.util, json, os, sys
_spec = importlib.util.spec_from_file_location("isolation", {str(MODULE)!r})
iso = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(iso)
P = json.loads(sys.argv[1])
"""

# restrict() with what a Python process needs, plus one writable directory
LOCK = """
        rec = iso.restrict(iso.python_read_roots(), [P["work"]])
        assert rec["landlock"], rec
"""
# the same with the capabilities kept, so that only Landlock can be what refuses
LOCK_KEEP_CAPS = LOCK.replace('[P["work"]])', '[P["work"]], drop_capabilities=False)')


def run_child(code: str, timeout: float = 30, **params) -> str:
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code), json.dumps(params)],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.strip().endswith("OK"), proc.stdout
    return proc.stdout


@pytest.fixture
def work(tmp_path: Path) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    return d


@pytest.fixture
def listener():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    yield srv.getsockname()[1]
    srv.close()


@needs_abi(1, "filesystem rules")
def test_writes_only_beneath_writable(work: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    run_child(LOCK + """
        with open(os.path.join(P["work"], "ok.txt"), "w") as f:
            f.write("fine")
        os.mkdir(os.path.join(P["work"], "sub"))
        os.rename(os.path.join(P["work"], "ok.txt"), os.path.join(P["work"], "sub", "ok.txt"))
        for target in (os.path.join(P["outside"], "x.txt"), os.path.join(P["home"], "x.txt")):
            try:
                open(target, "w")
            except PermissionError:
                pass
            else:
                raise AssertionError(f"wrote {target}")
        with open("/dev/null", "w") as f:
            f.write("discarded")
        assert len(open("/dev/urandom", "rb").read(8)) == 8
        print("OK")
    """, work=str(work), outside=str(outside), home=str(tmp_path))
    assert (work / "sub" / "ok.txt").read_text() == "fine"
    assert not (outside / "x.txt").exists() and not (tmp_path / "x.txt").exists()


@needs_abi(1, "filesystem rules")
def test_reads_only_beneath_readable(work: Path, tmp_path: Path) -> None:
    secret_dir = tmp_path / "secret"
    secret_dir.mkdir()
    (secret_dir / "answer.txt").write_text("42")
    run_child(LOCK + """
        for attempt in (lambda: open(os.path.join(P["secret"], "answer.txt")).read(),
                        lambda: os.listdir(P["secret"])):
            try:
                attempt()
            except PermissionError:
                pass
            else:
                raise AssertionError("read outside the readable roots")
        print("OK")
    """, work=str(work), secret=str(secret_dir))


@needs_abi(1, "filesystem rules")
def test_excluded_source_tree_is_unreadable(work: Path) -> None:
    src = MODULE.parents[3]  # .../src
    roots = iso.python_read_roots(exclude=[str(src)])
    if any(str(src.resolve()).startswith(r.rstrip("/") + "/") for r in roots):
        pytest.skip("the source tree lies beneath an installed prefix here")
    assert str(src.resolve()) not in roots
    run_child("""
        rec = iso.restrict(iso.python_read_roots(exclude=[P["src"]]), [P["work"]])
        assert rec["landlock"], rec
        try:
            open(os.path.join(P["src"], "jaxbench", "__init__.py")).read()
        except PermissionError:
            print("OK")
    """, work=str(work), src=str(src))


@needs_abi(1, "filesystem rules")
def test_imports_keep_working(work: Path) -> None:
    run_child("""
        assert "decimal" not in sys.modules and "numpy" not in sys.modules
    """ + LOCK + """
        import decimal, json, fractions, numpy
        assert decimal.Decimal("1.5") * 2 == 3
        assert int(numpy.arange(4).sum()) == 6
        print("OK")
    """, work=str(work))


@needs_abi(4, "TCP rules")
def test_tcp_bind_and_connect_refused(work: Path, listener: int) -> None:
    run_child(LOCK + """
        import socket
        assert "net_tcp" in rec["landlock"], rec
        for attempt in (lambda s: s.bind(("127.0.0.1", 0)), lambda s: s.connect(("127.0.0.1", P["port"]))):
            with socket.socket() as s:
                try:
                    attempt(s)
                except PermissionError:
                    pass
                else:
                    raise AssertionError("TCP allowed")
        print("OK")
    """, work=str(work), port=listener)


@needs_abi(6, "scoped signals")
def test_no_signals_to_processes_outside(work: Path) -> None:
    run_child(LOCK_KEEP_CAPS + """
        assert "scope_signal" in rec["landlock"], rec
        os.kill(os.getpid(), 0)  # itself: allowed
        try:
            os.kill(os.getppid(), 0)
        except PermissionError:
            print("OK")
    """, work=str(work))


PROC_PROBE = """
        def refused(name):
            try:
                open(f"/proc/{os.getppid()}/{name}", "rb").read(1)
            except PermissionError:
                return True
            return False
"""


@needs_abi(1, "Landlock's ptrace restriction")
def test_parent_memory_unreadable(work: Path) -> None:
    # Landlock alone (capabilities kept, so root's CAP_SYS_PTRACE does not matter): no ptrace
    # attach, hence no /proc/<ppid>/mem
    run_child(LOCK_KEEP_CAPS + PROC_PROBE + """
        assert refused("mem")
        assert open("/proc/self/status").read()  # its own /proc stays readable
        print("OK")
    """, work=str(work))
    # the default (capabilities dropped too): the ptrace-read files are refused as well
    run_child(LOCK + PROC_PROBE + """
        assert rec["capabilities_dropped"], rec
        for name in ("mem", "environ", "maps"):
            assert refused(name), name
        print("OK")
    """, work=str(work))


def _namespaces_available() -> bool:
    proc = subprocess.run([sys.executable, "-c", PRELUDE + "print(json.dumps(iso.enter_namespaces()))", "{}"],
                          capture_output=True, text=True, timeout=30)
    return proc.returncode == 0 and "netns" in json.loads(proc.stdout)


def test_no_network_in_fresh_namespace(work: Path, listener: int) -> None:
    if not _namespaces_available():
        pytest.skip("unshare(CLONE_NEWUSER|CLONE_NEWNET) is not permitted here")
    run_child("""
        import socket
        ns = iso.enter_namespaces()
        assert "netns" in ns, ns
        assert [name for _, name in socket.if_nameindex()] == ["lo"]
        assert os.getuid() == P["uid"]  # own id mapped, not the overflow id
        with socket.socket() as s:
            try:
                s.connect(("127.0.0.1", P["port"]))
            except OSError:
                pass
            else:
                raise AssertionError("reached the test's listener")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.sendto(b"x", ("127.0.0.1", 9))
            except OSError:
                pass
            else:
                raise AssertionError("UDP sent")
        rec = iso.restrict(iso.python_read_roots(), [P["work"]])
        print(iso.describe(rec, ns))
        print("OK")
    """, work=str(work), port=listener, uid=os.geteuid())


def test_namespaces_skipped_when_threaded() -> None:
    run_child("""
        import threading, time
        t = threading.Thread(target=time.sleep, args=(1,), daemon=True)
        t.start()
        assert iso.enter_namespaces() == []
        print("OK")
    """)


@needs_abi(1, "filesystem rules")
def test_older_threads_are_reported(work: Path) -> None:
    run_child("""
        import threading
        stop = threading.Event()
        threading.Thread(target=stop.wait, daemon=True).start()
    """ + LOCK + """
        stop.set()
        if "tsync" not in rec["landlock"]:  # below ABI 8 Landlock binds the calling thread only
            assert rec["unrestricted_threads"] == 1, rec
            assert "1 older thread(s) unrestricted" in iso.describe(rec, [])
        print("OK")
    """, work=str(work))


@needs_abi(1, "filesystem rules")
def test_jax_runs_after_restriction(work: Path) -> None:
    run_child("""
        ns = iso.enter_namespaces()
        iso.set_rlimits(None, 1 << 30)
    """ + LOCK + """
        os.environ["TMPDIR"] = P["work"]
        import jax, jax.numpy as jnp
        assert float(jax.jit(lambda a: (a * 2).sum())(jnp.ones(8))) == 16.0
        print(iso.describe(rec, ns))
        print("OK")
    """, work=str(work))


def test_no_landlock_degrades_without_raising(work: Path) -> None:
    run_child("""
        iso._SYS_LANDLOCK_CREATE_RULESET = 1_000_000  # no such syscall: ENOSYS, as on an old kernel
        rec = iso.restrict(iso.python_read_roots(), [P["work"]])
        assert rec["landlock_abi"] == 0 and rec["landlock"] == [] and "ENOSYS" in rec["landlock_error"], rec
        assert rec["no_new_privs"] and rec["pdeathsig"], rec
        text = iso.describe(rec, [])
        assert text.startswith("no_new_privs") and "(no Landlock: " in text, text
        open(os.path.join(P["outside"], "still-writable.txt"), "w").close()
        print("OK")
    """, work=str(work), outside=str(work.parent))


def test_rlimits() -> None:
    run_child("""
        import resource, tempfile
        applied = iso.set_rlimits(None, 4096, nproc=None)
        assert applied == {"core": 0, "fsize": 4096}, applied
        assert resource.getrlimit(resource.RLIMIT_CORE) == (0, 0)
        with tempfile.TemporaryFile(buffering=0) as f:
            assert f.write(b"x" * 8192) == 4096  # a short write up to the limit, then EFBIG
            try:
                f.write(b"x")
            except OSError as e:
                assert e.errno == 27, e  # EFBIG (Python ignores SIGXFSZ)
                print("OK")
    """)


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def test_child_dies_with_its_parent(work: Path) -> None:
    # PR_SET_PDEATHSIG does not need Landlock: no assertion on the record here
    child = PRELUDE + ("rec = iso.restrict(iso.python_read_roots(), [P['work']])\n"
                       "assert rec['pdeathsig'], rec\n"
                       "print(os.getpid(), flush=True)\nimport time\ntime.sleep(60)\n")
    intermediate = ("import subprocess, sys, time\n"
                    "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]])\n"
                    "time.sleep(60)\n")
    mid = subprocess.Popen([sys.executable, "-c", intermediate, child, json.dumps({"work": str(work)})],
                           stdout=subprocess.PIPE, text=True)
    child_pid = None
    try:
        line = mid.stdout.readline()
        assert line.strip().isdigit(), f"no pid from the restricted child: {line!r}"
        child_pid = int(line)
        assert _state(child_pid) not in (None, "Z")
        os.kill(mid.pid, signal.SIGKILL)
        mid.wait()
        deadline = time.monotonic() + 5
        while _state(child_pid) not in (None, "Z") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _state(child_pid) in (None, "Z"), "the child outlived its parent"
    finally:
        if mid.poll() is None:
            mid.kill()
            mid.wait()
        if child_pid is not None and _state(child_pid) not in (None, "Z"):
            os.kill(child_pid, signal.SIGKILL)
        mid.stdout.close()


def test_describe() -> None:
    rec = {"landlock_abi": 7, "landlock": ["fs", "net_tcp", "scope_signal", "scope_abstract_unix"],
           "no_new_privs": True, "pdeathsig": True}
    assert iso.describe(rec, ["userns", "netns"]) == (
        "landlock-abi7(fs,net_tcp,scope_signal,scope_abstract_unix)+userns+netns+no_new_privs+rlimits")
    assert iso.describe({"landlock_abi": 0, "landlock": [], "landlock_error": "ENOSYS", "no_new_privs": True},
                        []) == "no_new_privs+rlimits (no Landlock: ENOSYS)"
    threaded = dict(rec, unrestricted_threads=3)
    assert "3 older thread(s) unrestricted" in iso.describe(threaded, [])


def test_python_read_roots_are_disjoint_and_existing() -> None:
    roots = iso.python_read_roots()
    assert roots == sorted(set(roots))
    for r in roots:
        assert os.path.exists(r)
        assert not any(r != o and r.startswith(o.rstrip("/") + "/") for o in roots), r
    assert any(os.path.realpath(sys.prefix).startswith(r) for r in roots)
    assert "/proc" in roots
