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
    # of procfs, its own directory and the machine's description only (not other processes)
    assert f"/proc/{os.getpid()}" in roots and "/proc" not in roots
    assert [r for r in roots if r.startswith("/proc/") and r[6:].split("/")[0].isdigit()] == [
        f"/proc/{os.getpid()}"]


# ---------------------------------------------------------------------------------------------
# hiding the host's shared directories (mount namespace), and the parent's side (pool.py)

POOL_MODULE = MODULE.parents[1] / "parent" / "pool.py"


def _load_pool():
    """pool.py from its file (stdlib only), without importing jaxbench.evaluator (and JAX)."""
    spec = importlib.util.spec_from_file_location("_pool_under_test", POOL_MODULE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


pool = _load_pool()


def _mount_namespace_available() -> bool:
    proc = subprocess.run([sys.executable, "-c", PRELUDE + "print(json.dumps(iso.enter_namespaces()))",
                           "{}"], capture_output=True, text=True, timeout=30)
    return proc.returncode == 0 and "mntns" in json.loads(proc.stdout)


needs_mntns = pytest.mark.skipif(not _mount_namespace_available(),
                                 reason="unshare(CLONE_NEWNS) is not permitted here")


@pytest.fixture
def unix_socket(tmp_path: Path):
    """A pathname Unix socket the test listens on, beneath the temp dir (/tmp)."""
    path = tmp_path / "host.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen()
    srv.setblocking(False)
    yield srv, path
    srv.close()


def _accepted(srv: socket.socket) -> bool:
    try:
        conn, _ = srv.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


@needs_mntns
@needs_abi(1, "filesystem rules")
def test_hidden_host_unix_socket_unreachable(work: Path, unix_socket) -> None:
    """Landlock (ABI <= 7) does not govern connect() to a pathname socket; the hidden /tmp does.
    The private directory, beneath the hidden /tmp too, stays writable and shared."""
    srv, path = unix_socket
    if not str(path).startswith(("/tmp/", "/var/tmp/")):
        pytest.skip(f"the temp dir {path.parent} is not beneath a hidden directory")
    out = run_child("""
        import socket
        ns = iso.enter_namespaces()
        assert "mntns" in ns, ns
        hidden = iso.hide_host(iso.python_read_roots(), [P["work"]])
        assert not hidden.get("hide_error"), hidden
        assert "/tmp" in hidden["hidden"] and P["work"] in hidden["kept"], hidden
        # only the ways to work/ and to a Python installation beneath /tmp (a CI clone's venv)
        kept = {P["work"].split("/")[2]} | {r.split("/")[2] for r in iso.python_read_roots()
                                            if r.startswith("/tmp/")}
        assert set(os.listdir("/tmp")) <= kept, (os.listdir("/tmp"), kept)
    """ + LOCK + """
        assert not os.path.exists(P["sock"])
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(P["sock"])
            except OSError as e:
                print("refused:", e)
            else:
                raise AssertionError("connected to the host's socket")
        with open(os.path.join(P["work"], "out.txt"), "w") as f:
            f.write("from the child")
        assert sorted(os.listdir(P["work"])) == ["out.txt"]
        print(iso.describe(rec, ns, hidden=hidden))
        print("OK")
    """, work=str(work), sock=str(path))
    assert "+mntns+host_hidden+" in out, out
    assert not _accepted(srv)
    assert (work / "out.txt").read_text() == "from the child"


def test_hide_host_needs_its_own_mount_namespace(tmp_path: Path) -> None:
    """Never mounts in a namespace it did not make (there, it would hide /tmp from everyone).
    The child takes a private mount namespace behind the module's back, so that a broken guard
    hides things only there."""
    (tmp_path / "visible").touch()
    out = run_child("""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        private = libc.unshare(0x00020000) == 0  # CLONE_NEWNS, not through enter_namespaces
        hidden = iso.hide_host([], [])
        assert hidden["hidden"] == [], hidden
        assert hidden["hide_error"] == "no mount namespace of its own", hidden
        assert os.path.exists(P["visible"])
        print(iso.describe({"landlock": []}, [], hidden=hidden))
        print("OK")
    """, visible=str(tmp_path / "visible"))
    assert "host directories not hidden: no mount namespace of its own" in out


def test_describe_hidden() -> None:
    rec = {"landlock_abi": 7, "landlock": ["fs"], "no_new_privs": True}
    ok = {"hidden": ["/tmp", "/run"], "kept": []}
    assert iso.describe(rec, ["userns", "netns", "mntns"], hidden=ok) == (
        "landlock-abi7(fs)+userns+netns+mntns+host_hidden+no_new_privs+rlimits")
    failed = {"hidden": [], "kept": [], "hide_error": "make mounts private: EPERM"}
    assert iso.describe(rec, ["userns", "netns"], hidden=failed) == (
        "landlock-abi7(fs)+userns+netns+no_new_privs+rlimits "
        "(host directories not hidden: make mounts private: EPERM)")


# --- the parent's check of the handshake


def _handshake(**claim) -> bytes:
    return b"ready " + json.dumps(claim).encode() + b"\n"


def test_verify_isolation_holds_for_an_isolated_child(work: Path) -> None:
    if not _mount_namespace_available():
        pytest.skip("unshare(CLONE_NEWNS) is not permitted here")
    child = subprocess.Popen([sys.executable, "-c", PRELUDE + textwrap.dedent("""
        ns = iso.enter_namespaces()
        hidden = iso.hide_host(iso.python_read_roots(), [P["work"]])
        rec = iso.restrict(iso.python_read_roots(), [P["work"]])
        print("ready " + json.dumps({"isolation": iso.describe(rec, ns, hidden=hidden),
                                     "namespaces": ns, "hidden": hidden["hidden"],
                                     "no_new_privs": rec["no_new_privs"]}), flush=True)
        sys.stdin.read()
    """), json.dumps({"work": str(work)})], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        line = child.stdout.readline()
        text = pool.verify_isolation(child.pid, line)
        assert "+mntns+host_hidden+" in text and "parent check failed" not in text, text
    finally:
        child.kill()
        child.wait()


def test_verify_isolation_reports_false_claims() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        line = _handshake(isolation="landlock-abi7(fs)+userns+netns+mntns+host_hidden+no_new_privs",
                          namespaces=["userns", "netns", "mntns"], hidden=["/tmp", "/proc"],
                          no_new_privs=True)
        text = pool.verify_isolation(child.pid, line)
    finally:
        child.kill()
        child.wait()
    assert text.startswith("landlock-abi7(fs)+userns+netns+mntns+host_hidden+no_new_privs "
                           "[parent check failed: "), text
    for words in ("userns claimed", "netns claimed", "mntns claimed", "NoNewPrivs: 0",
                  "/tmp claimed hidden", "/proc claimed hidden"):
        assert words in text, (words, text)
    assert pool.verify_isolation(child.pid, None) == "unknown (the tracer sent no handshake)"
    assert pool.verify_isolation(child.pid, b"ready\n") == "unknown (malformed handshake)"
    assert pool.verify_isolation(child.pid, b"ready {\"isolation\": 3}\n") == \
        "unknown (malformed handshake)"


# --- the private directory: measured, and removed whatever it holds


def _chain(root: Path, depth: int) -> None:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)


def _fast_tmp(tmp_path: Path) -> Path:
    """A tmpfs where there is one (removing directories on some disks takes milliseconds each)."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        import tempfile

        return Path(tempfile.mkdtemp(prefix="jaxbench-test-", dir="/dev/shm"))
    return tmp_path


def test_remove_tree_deep_chain_links_and_modes(tmp_path: Path) -> None:
    base = _fast_tmp(tmp_path)
    try:
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "keep.txt").write_text("keep")
        top = base / "worker"
        top.mkdir()
        _chain(top, 100_000)
        (top / "link_dir").symlink_to(outside)
        (top / "link_file").symlink_to(outside / "keep.txt")
        locked = top / "locked"
        (locked / "inner").mkdir(parents=True)
        (locked / "inner" / "f").write_text("x")
        os.chmod(locked / "inner", 0)
        os.chmod(locked, 0o500)
        pool.remove_tree(top)
        assert not os.path.lexists(top)
        assert (outside / "keep.txt").read_text() == "keep" and outside.stat().st_mode & 0o700
        pool.remove_tree(top)  # gone already: no error
        link = base / "only_a_link"
        link.symlink_to(outside)
        pool.remove_tree(link)
        assert not os.path.lexists(link) and (outside / "keep.txt").exists()
    finally:
        pool.remove_tree(base)


def test_dir_usage_counts_bytes_entries_and_links_once(tmp_path: Path) -> None:
    top = tmp_path / "worker"
    (top / "a" / "b").mkdir(parents=True)
    big = top / "a" / "b" / "big"
    big.write_bytes(b"x" * (1 << 20))
    for i in range(5):
        os.link(big, top / f"hard{i}")
    (top / "sym").symlink_to("/usr")
    used, entries = pool.dir_usage(top)
    assert entries == 1 + 2 + 1 + 5 + 1  # itself, a, b, big, 5 links, the symlink
    assert (1 << 20) <= used < 2 * (1 << 20)
    _chain(top, 50)
    assert pool.dir_usage(top, max_entries=20)[1] == 21  # stops just past the limit
    assert pool.dir_usage(tmp_path / "missing") == (0, 0)
    assert pool._dir_over(top, 1 << 30, 20) == (
        "its private directory held more than the limit of 20 entries (files and directories)")
    assert pool._dir_over(top, 1 << 19, 1000).startswith("its private directory held 1")
    assert pool._dir_over(top, 1 << 30, 1000) == ""


def test_fast_cpu_compiles_only_where_nothing_runs_on_a_device(monkeypatch):
    """Processes that only check on the host CPU compile unoptimized (many small programs,
    each run once); the trusted runner keeps XLA's defaults wherever it may use a device,
    since what it times there must be compiled as users compile it."""
    from jaxbench.evaluator.parent.pool import (
        CPU_CHECK_XLA_FLAGS,
        runner_env,
        tracer_env,
        with_cpu_check_flags,
    )

    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert tracer_env()["XLA_FLAGS"] == CPU_CHECK_XLA_FLAGS
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    assert runner_env()["XLA_FLAGS"] == CPU_CHECK_XLA_FLAGS
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    assert "XLA_FLAGS" not in runner_env()
    monkeypatch.delenv("JAX_PLATFORMS")
    assert "XLA_FLAGS" not in runner_env()
    # a user's own flags are kept, and their own optimization level wins
    env = {"XLA_FLAGS": "--xla_dump_to=/tmp/d"}
    with_cpu_check_flags(env)
    assert env["XLA_FLAGS"] == f"--xla_dump_to=/tmp/d {CPU_CHECK_XLA_FLAGS}"
    env = {"XLA_FLAGS": "--xla_backend_optimization_level=2"}
    with_cpu_check_flags(env)
    assert env["XLA_FLAGS"] == "--xla_backend_optimization_level=2"
