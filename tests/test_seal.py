"""The seal (jaxbench.evaluator.sandbox.seal): in a child process that installs it, every group of
its rules refuses a representative syscall with EPERM, made from C through ctypes (no audit
hook sees them), on every thread; the same calls get other answers without the seal, so each
assertion can fail. Dropping a group from RULES (the mutation checks do) fails its case."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from jaxbench.evaluator.sandbox import seal

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="seccomp is Linux's")

# The child: optionally sealed, it makes each group's calls (x86_64 and aarch64 numbers from
# the seal's own table), on the main thread or on a thread started before the seal, and
# prints {group: [errno or 0 for each call]}.
_CHILD = textwrap.dedent("""
    import ctypes, json, os, sys, threading
    from jaxbench.evaluator.sandbox import seal

    sealed, on_thread = sys.argv[1] == "1", sys.argv[2] == "1"
    table = seal._TABLES[seal._machine()]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    AT_FDCWD = -100

    def call(name, *args):
        ctypes.set_errno(0)
        ret = libc.syscall(ctypes.c_long(table[name]), *args)
        return ctypes.get_errno() if ret < 0 else 0

    def s(text):
        return ctypes.c_char_p(text.encode())

    CALLS = {
        "open": lambda: call("openat", ctypes.c_int(AT_FDCWD), s("/"), ctypes.c_int(0)),
        "change_files": lambda: call("mkdirat", ctypes.c_int(AT_FDCWD),
                                     s("/nonexistent-jaxbench/x"), ctypes.c_int(0o700)),
        "execute": lambda: call("execve", s("/nonexistent-jaxbench"), None, None),
        "network": lambda: call("socket", ctypes.c_int(1), ctypes.c_int(1), ctypes.c_int(0)),
        "other_processes": lambda: call("pidfd_open", ctypes.c_int(os.getpid()),
                                        ctypes.c_uint(0)),
        "kernel_surfaces": lambda: call("perf_event_open", None, ctypes.c_int(0),
                                        ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_ulong(0)),
        "mounts": lambda: call("unshare", ctypes.c_int(0)),
        # a signal to another process (the parent; signal 0 only checks): refused; to itself
        # (kill and tgkill of its own pid): allowed, as glibc's raise and abort need
        "signals": lambda: call("kill", ctypes.c_int(os.getppid()), ctypes.c_int(0)),
        "own_signals": lambda: call("kill", ctypes.c_int(os.getpid()), ctypes.c_int(0)) or call(
            "tgkill", ctypes.c_int(os.getpid()), ctypes.c_int(threading.get_native_id()),
            ctypes.c_int(0)),
    }
    results = {}
    go, done = threading.Event(), threading.Event()

    def worker():
        go.wait()
        results.update({group: f() for group, f in CALLS.items()})
        done.set()

    thread = threading.Thread(target=worker)
    thread.start()  # started before the seal: TSYNC must reach it
    record = seal.install() if sealed else {}
    if on_thread:
        go.set()
        done.wait()
    else:
        go.set()
        done.wait()
        results = {group: f() for group, f in CALLS.items()}
    print(json.dumps({"record": record, "errnos": results}))
""")


def _child(sealed: bool, on_thread: bool) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, "1" if sealed else "0",
                          "1" if on_thread else "0"], capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def unsealed() -> dict:
    return _child(False, False)["errnos"]


@pytest.mark.parametrize("on_thread", [False, True], ids=["main_thread", "older_thread"])
@pytest.mark.parametrize("group", [*sorted(seal.RULES), "signals"])
def test_each_group_refuses_its_calls(group, on_thread, unsealed):
    import errno

    refused = errno.ENOENT if group == "open" else errno.EPERM  # an open finds no file
    assert unsealed[group] != refused, (
        f"{group}'s probe is refused on this host without the seal: it proves nothing here")
    sealed = _child(True, on_thread)
    assert sealed["record"].get("seccomp") is True, sealed["record"]
    assert sealed["errnos"][group] == refused, (group, sealed["errnos"][group])
    assert sealed["errnos"]["own_signals"] == 0, "the sealed process cannot signal itself"


def test_the_seal_refuses_pythons_and_numpys_opens_and_keeps_held_descriptors(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("hidden")
    script = textwrap.dedent(f"""
        import os, numpy as np
        from jaxbench.evaluator.sandbox import seal
        held = os.open({str(tmp_path / 'held')!r}, os.O_RDWR | os.O_CREAT, 0o600)
        assert seal.install()["seccomp"]
        for read in (lambda: open({str(secret)!r}).read(),
                     lambda: np.fromfile({str(secret)!r}, np.uint8),
                     lambda: os.listdir("/proc")):
            try:
                read()
                raise SystemExit("read after the seal")
            except FileNotFoundError:  # the seal's answer to every open
                pass
        os.write(held, b"still writable")
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]
    assert (tmp_path / "held").read_bytes() == b"still writable"


def test_probe_says_whether_the_host_seals(monkeypatch):
    assert seal.probe().get("seccomp") is True  # a Linux host with seccomp (CI's, the v5e)
    monkeypatch.setenv(seal.HOST_PROFILE, "bare")
    record = seal.probe()
    assert record.get("seccomp") is False and "bare" in record["error"]


def test_a_host_profile_must_be_known(monkeypatch):
    monkeypatch.setenv(seal.HOST_PROFILE, "gvisor")
    with pytest.raises(ValueError, match="not a host profile"):
        seal.host_profile()


def _run_bpf(prog, nr, arch, arg0=0, arg1=0, arg2=0):
    """A tiny interpreter for the instructions the seal uses: what the filter returns."""
    pc, acc = 0, 0
    data = {0: nr, 4: arch, 16: arg0, 24: arg1, 32: arg2}
    while True:
        code, jt, jf, k = prog[pc]
        if code == 0x20:
            acc = data[k]
        elif code == 0x15:
            pc += jt if acc == k else jf
        elif code == 0x35:
            pc += jt if acc >= k else jf
        elif code == 0x45:
            pc += jt if acc & k else jf
        elif code == 0x06:
            return k
        pc += 1


def test_the_program_refuses_exactly_the_listed_numbers():
    allow, deny, absent, kill = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 2, 0x80000000
    for machine in ("x86_64", "aarch64"):
        table = seal._TABLES[machine]
        numbers = seal.syscall_numbers(machine=machine)
        opens = seal.syscall_numbers({"open": seal.RULES["open"]}, machine)
        own = sorted(table[n] for n in seal.SELF_ONLY)
        prog = seal.program([n for n in numbers if n not in opens], machine, own, pid=4242,
                            absent=opens)
        arch = seal._AUDIT_ARCH[machine]
        for nr in range(460):  # (the self-only ones with another pid, 0, in their argument)
            expected = absent if nr in opens else deny if nr in numbers or nr in own else allow
            assert _run_bpf(prog, nr, arch) == expected, (machine, nr)
        for nr in own:
            assert _run_bpf(prog, nr, arch, arg0=4242) == allow
            assert _run_bpf(prog, nr, arch, arg0=4243) == deny
        assert _run_bpf(prog, table["openat"], arch ^ 1) == kill  # another architecture
        assert len(numbers) == len(set(numbers)) > 40


def test_run_refuses_an_unsealed_host_unless_told(tmp_path):
    """Fail closed: where nothing seals (host profile ``bare``), `jaxbench run` stops with one
    line naming what is missing and writes no run; with --unsealed it runs and says so."""
    import os

    env = {**os.environ, "JAX_PLATFORMS": "cpu", seal.HOST_PROFILE: "bare"}
    out_dir = tmp_path / "run"
    refused = subprocess.run([sys.executable, "-m", "jaxbench.cli", "run", "--tasks",
                              "12p_rmsnorm", "--kernels", "seed", "--target", "tpu", "--out",
                              str(out_dir)], capture_output=True, text=True, env=env,
                             timeout=300, check=False)
    assert refused.returncode == 2, refused.stderr
    assert "cannot seal" in refused.stderr and "--unsealed" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert not out_dir.exists()
    from jaxbench.evaluator import Unsealed, require_seal

    with pytest.raises(Unsealed):
        os.environ[seal.HOST_PROFILE] = "bare"
        try:
            require_seal(False)
        finally:
            os.environ.pop(seal.HOST_PROFILE)


def test_a_debug_tracers_seal_lets_files_be_read_and_nothing_else(tmp_path):
    """``read_only_opens`` (the seal of a debug run's tracer, whose verdict never counts): open
    and openat for reading pass; for writing, creating or truncating they do not, and every
    other rule holds."""
    import os

    secret = tmp_path / "secret"
    secret.write_text("readable")
    script = textwrap.dedent(f"""
        import os, socket
        from jaxbench.evaluator.sandbox import seal
        record = seal.install(read_only_opens=True)
        assert record["seccomp"] and record["reads"], record
        print(open({str(secret)!r}).read())
        for act in (lambda: open({str(secret)!r}, "a"), lambda: open({str(tmp_path / 'new')!r}, "w"),
                    lambda: os.open({str(secret)!r}, os.O_RDONLY | os.O_TRUNC),
                    lambda: socket.socket(), lambda: os.mkdir({str(tmp_path / 'd')!r})):
            try:
                act()
                raise SystemExit("allowed")
            except PermissionError:
                pass
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.stdout.split() == ["readable", "ok"], out.stderr[-2000:]
    assert not (tmp_path / "new").exists() and secret.read_text() == "readable"
    for machine in ("x86_64", "aarch64"):
        table = seal._TABLES[machine]
        reading = {table[n]: off for n, off in seal._FLAGS_OFFSET.items() if n in table}
        opens = seal.syscall_numbers({"open": seal.RULES["open"]}, machine)
        rest = [n for n in seal.syscall_numbers(machine=machine) if n not in opens]
        prog = seal.program(rest, machine, reading=reading, absent=opens)
        arch = seal._AUDIT_ARCH[machine]
        openat = table["openat"]
        assert _run_bpf(prog, openat, arch, arg2=os.O_RDONLY | os.O_CLOEXEC) == 0x7FFF0000
        for flags in (os.O_WRONLY, os.O_RDWR, os.O_CREAT, os.O_TRUNC, os.O_APPEND):
            assert _run_bpf(prog, openat, arch, arg2=flags) == 0x00050001
        assert _run_bpf(prog, table["openat2"], arch) == 0x00050002
