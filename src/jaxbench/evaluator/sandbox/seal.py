"""The seal: a seccomp-bpf filter that every process running candidate code installs before
that code runs (Linux; standard library and ctypes only).

Landlock and namespaces are further layers where the host has them; a TPU VM under gVisor
has neither, but any unprivileged Linux process may set ``no_new_privs`` and install a
seccomp filter, and the kernel (or gVisor's Sentry) enforces it on every thread of the
process and on everything it starts. After :func:`install` the process can still read and
write the descriptors it already holds (its stdin pipe, its log, the files its outbox opened
beforehand) and compute, but it opens, creates, renames, links, removes and executes no
file, makes or connects no socket, and reaches no other process. Python's ``open`` fails
(``FileNotFoundError``, ``ENOENT``), and so do NumPy's and XLA's C and C++ opens, which no
audit hook sees.

The filter returns ``ENOENT`` for the opens (Python raises ``FileNotFoundError``, which
libraries treat as a file that is not there: Tokamax's autotuning cache, for one) and
``EPERM`` for every other syscall below; a syscall of another architecture's
table (the 32-bit ``int 0x80`` entry, the x32 ABI) kills the process, since no honest code in
a 64-bit Python makes one. The rules are :data:`RULES`, one group per line of reasoning; a
syscall missing from the running architecture's table (``open`` on aarch64) is skipped.

A host profile (:data:`HOST_PROFILE`, set by whoever starts the evaluator, never by a kernel)
makes the sandbox behave as a host without some layer would: ``no-landlock`` (what a TPU VM
offers: no Landlock, no namespaces, the seal only), ``no-seal`` (Landlock and namespaces, no
seal: a container that forbids seccomp; also what the seal's cost is measured against) and
``bare`` (no OS layer at all: what a host where nothing seals offers, for testing that runs
then fail closed).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys
from typing import TypedDict

__all__ = ["HOST_PROFILE", "PROFILES", "RULES", "SealRecord", "host_profile", "install",
           "probe", "profile_allows", "syscall_numbers"]

HOST_PROFILE = "JAXBENCH_HOST_PROFILE"
# profile -> (the seal, Landlock and namespaces) as the host offers them: full, every layer the
# host has; no-landlock, as a host without Landlock and namespaces (a TPU VM); no-seal, as a
# host that forbids seccomp; bare, as a host where no OS layer can be had (a non-Linux laptop).
_PROFILE_LAYERS = {"full": (True, True), "no-landlock": (True, False),
                   "no-seal": (False, True), "bare": (False, False)}
PROFILES = tuple(_PROFILE_LAYERS)


def host_profile() -> str:
    """The host profile in force (``full`` unless :data:`HOST_PROFILE` names another)."""
    value = os.environ.get(HOST_PROFILE, "full").strip() or "full"
    if value not in PROFILES:
        raise ValueError(f"{HOST_PROFILE}={value!r} is not a host profile; use one of "
                         f"{', '.join(PROFILES)}")
    return value


def profile_allows(layer: str) -> bool:
    """Whether the host profile in force lets the sandbox use ``layer``: ``seal`` or
    ``landlock`` (Landlock and the namespaces)."""
    sealed, landlock = _PROFILE_LAYERS[host_profile()]
    return sealed if layer == "seal" else landlock


# The syscalls the seal refuses, by group. Each name is looked up in the running
# architecture's table (:data:`_TABLES`).
RULES: dict[str, tuple[str, ...]] = {
    # Opening any file by path: reads of the run's files, the shipped experts, other
    # processes' /proc entries (command lines, memory, environment), and every write,
    # Python's and C/C++'s alike (XLA's dump files, a compilation cache).
    "open": ("open", "creat", "openat", "openat2", "open_by_handle_at", "name_to_handle_at"),
    # Changing the filesystem by path: creating, renaming, linking and removing entries,
    # truncating, changing modes, owners and times.
    "change_files": ("rename", "renameat", "renameat2", "link", "linkat", "symlink",
                     "symlinkat", "unlink", "unlinkat", "mkdir", "mkdirat", "rmdir", "mknod",
                     "mknodat", "truncate", "chmod", "fchmodat", "fchmodat2", "chown", "lchown",
                     "fchownat", "utimensat", "uselib"),
    # Running another program.
    "execute": ("execve", "execveat"),
    # New sockets and connections (TCP, UDP, Unix, netlink): gRPC's client in
    # jax.distributed, a profiler server. Sockets already held stay usable.
    "network": ("socket", "socketpair", "connect", "bind", "listen", "accept", "accept4"),
    # Other processes: tracing, reading or writing their memory, taking their descriptors,
    # queueing signals to them (signals by kill/tgkill: :data:`SELF_ONLY`).
    "other_processes": ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_open",
                        "pidfd_getfd", "kcmp", "process_madvise", "tkill", "rt_sigqueueinfo",
                        "rt_tgsigqueueinfo", "pidfd_send_signal"),
    # Ways around this filter or into the kernel: io_uring's operations are not seen by
    # seccomp; BPF programs, userfaultfd, perf events, keyrings.
    "kernel_surfaces": ("io_uring_setup", "io_uring_enter", "io_uring_register", "bpf",
                        "userfaultfd", "perf_event_open", "keyctl", "add_key", "request_key"),
    # Mounts and namespaces: another view of the filesystem.
    "mounts": ("mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree",
               "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"),
}

# Syscalls allowed only when their first argument is this process's own pid: signals to itself
# and its threads (glibc's raise and abort, Python's thread signals use tgkill), none to
# another process (the parent, the fork server, the judge) nor to a process group.
SELF_ONLY = ("kill", "tgkill")

# Syscall numbers of the two architectures the project runs on (x86_64: <asm/unistd_64.h>;
# aarch64: the generic table, <asm-generic/unistd.h>, which has no path-only legacy calls).
_COMMON = {"openat2": 437, "pidfd_open": 434, "pidfd_getfd": 438, "process_madvise": 440,
           "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
           "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
           "fspick": 433, "mount_setattr": 442, "fchmodat2": 452, "pidfd_send_signal": 424}
_TABLES: dict[str, dict[str, int]] = {
    "x86_64": {**_COMMON,
               "open": 2, "creat": 85, "openat": 257, "open_by_handle_at": 304,
               "name_to_handle_at": 303, "rename": 82, "renameat": 264, "renameat2": 316,
               "link": 86, "linkat": 265, "symlink": 88, "symlinkat": 266, "unlink": 87,
               "unlinkat": 263, "mkdir": 83, "mkdirat": 258, "rmdir": 84, "mknod": 133,
               "mknodat": 259, "truncate": 76, "chmod": 90, "fchmodat": 268, "chown": 92,
               "lchown": 94, "fchownat": 260, "utimensat": 280, "uselib": 134,
               "execve": 59, "execveat": 322, "socket": 41, "socketpair": 53, "connect": 42,
               "bind": 49, "listen": 50, "accept": 43, "accept4": 288, "ptrace": 101,
               "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "bpf": 321,
               "userfaultfd": 323, "perf_event_open": 298, "keyctl": 250, "add_key": 248,
               "request_key": 249, "mount": 165, "umount2": 166, "pivot_root": 155,
               "chroot": 161, "unshare": 272, "setns": 308, "seccomp": 317, "kill": 62,
               "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297},
    "aarch64": {**_COMMON,
                "openat": 56, "open_by_handle_at": 265, "name_to_handle_at": 264,
                "renameat": 38, "renameat2": 276, "linkat": 37, "symlinkat": 36, "unlinkat": 35,
                "mkdirat": 34, "mknodat": 33, "truncate": 45, "fchmodat": 53, "fchownat": 54,
                "utimensat": 88, "execve": 221, "execveat": 281, "socket": 198,
                "socketpair": 199, "bind": 200, "listen": 201, "accept": 202, "connect": 203,
                "accept4": 242, "ptrace": 117, "process_vm_readv": 270,
                "process_vm_writev": 271, "kcmp": 272, "bpf": 280, "userfaultfd": 282,
                "perf_event_open": 241, "keyctl": 219, "add_key": 217, "request_key": 218,
                "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "unshare": 97,
                "setns": 268, "seccomp": 277, "kill": 129, "tkill": 130, "tgkill": 131,
                "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240},
}
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_SYSCALL_BIT = 0x40000000

# BPF (linux/filter.h, linux/seccomp.h)
_BPF_LD_W_ABS = 0x20
_BPF_JEQ_K = 0x15
_BPF_JGE_K = 0x35
_BPF_JSET_K = 0x45
_BPF_RET_K = 0x06
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000
_OFFSET_NR, _OFFSET_ARCH = 0, 4  # struct seccomp_data
_OFFSET_ARG0 = 16  # args[0]'s low 32 bits (little-endian): a pid_t argument
# Flags that make an open write, create or truncate (O_WRONLY, O_RDWR, O_CREAT, O_TRUNC,
# O_APPEND, __O_TMPFILE; the same values on x86_64 and aarch64), and where each open's flags
# are: a debug tracer may open for reading only (:func:`install`, ``read_only_opens``).
_WRITING_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000 | 0o20000000
_FLAGS_OFFSET = {"open": 16 + 8, "openat": 16 + 16}
_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


class SealRecord(TypedDict, total=False):
    """What :func:`install` achieved: ``seccomp`` (the filter is in force on every thread),
    ``syscalls`` (how many it refuses), ``groups`` (the groups of :data:`RULES` in it), or
    ``error`` (why there is no seal)."""

    seccomp: bool
    syscalls: int
    groups: list[str]
    tsync: bool
    reads: bool  # files may be opened for reading (a debug tracer)
    error: str


def _machine() -> str:
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def syscall_numbers(rules: dict[str, tuple[str, ...]] | None = None,
                    machine: str | None = None) -> list[int]:
    """The numbers of the refused syscalls on ``machine`` (this one by default), sorted."""
    table = _TABLES.get(machine or _machine(), {})
    names = {n for group in (RULES if rules is None else rules).values() for n in group}
    return sorted({table[n] for n in names if n in table})


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def program(numbers: list[int], machine: str, self_only: list[int] = (),
            pid: int = 0, reading: dict[int, int] | None = None,
            absent: list[int] = ()) -> list[tuple[int, int, int, int]]:
    """The BPF program: kill on a foreign architecture or an x32 call; ``ENOENT`` for each of
    ``absent`` (the opens: a file the process cannot open is, for the libraries it runs,
    one that is not there, which they handle: a missing cache or configuration file),
    ``EPERM`` for each of ``numbers`` and for each of ``self_only`` whose first argument is not
    ``pid``; allow the rest. ``reading`` (syscall number -> offset of its flags) are allowed
    first when their flags neither write, create nor truncate. ``(code, jt, jf, k)``
    instructions; the last two are the refusals (``EPERM``, then ``ENOENT``)."""
    deny = _RET_ERRNO | errno.EPERM
    prog = [(_BPF_LD_W_ABS, 0, 0, _OFFSET_ARCH),
            (_BPF_JEQ_K, 1, 0, _AUDIT_ARCH[machine]),
            (_BPF_RET_K, 0, 0, _RET_KILL_PROCESS),
            (_BPF_LD_W_ABS, 0, 0, _OFFSET_NR)]
    if machine == "x86_64":
        prog += [(_BPF_JGE_K, 0, 1, _X32_SYSCALL_BIT), (_BPF_RET_K, 0, 0, _RET_KILL_PROCESS)]
    for number, offset in (reading or {}).items():
        # not this syscall: on to the next check; else its flags decide, then the number is
        # loaded again for what follows
        prog += [(_BPF_JEQ_K, 0, 4, number),
                 (_BPF_LD_W_ABS, 0, 0, offset),
                 (_BPF_JSET_K, 1, 0, _WRITING_FLAGS),
                 (_BPF_RET_K, 0, 0, _RET_ALLOW),
                 (_BPF_RET_K, 0, 0, deny),
                 (_BPF_LD_W_ABS, 0, 0, _OFFSET_NR)]
    a, n, m = len(absent), len(numbers), len(self_only)
    # each refused number jumps over the rest (the self-only checks and the allow included)
    # to its refusal at the end; each self-only number to the pid check
    for i, number in enumerate(absent):
        prog.append((_BPF_JEQ_K, a + n + m + 4 - i, 0, number))
    for i, number in enumerate(numbers):
        prog.append((_BPF_JEQ_K, n + m + 3 - i, 0, number))
    for j, number in enumerate(self_only):
        prog.append((_BPF_JEQ_K, m - j, 0, number))
    prog += [(_BPF_RET_K, 0, 0, _RET_ALLOW),
             (_BPF_LD_W_ABS, 0, 0, _OFFSET_ARG0),  # the pid check
             (_BPF_JEQ_K, 0, 1, pid),
             (_BPF_RET_K, 0, 0, _RET_ALLOW),
             (_BPF_RET_K, 0, 0, deny),
             (_BPF_RET_K, 0, 0, _RET_ERRNO | errno.ENOENT)]
    return prog


def install(rules: dict[str, tuple[str, ...]] | None = None, *,
            read_only_opens: bool = False) -> SealRecord:
    """Seals this process and all its threads (``SECCOMP_FILTER_FLAG_TSYNC``) and everything
    it starts afterwards; irreversible. Never raises: the record says what holds. A filter
    that could be installed only on the calling thread (a kernel without TSYNC) counts as
    no seal (``seccomp: False``): other threads could still open files. ``read_only_opens``
    (a debug tracer's, whose verdict never counts): ``open`` and ``openat`` may open files
    for reading; every other rule holds."""
    machine = _machine()
    if sys.platform != "linux":
        return {"seccomp": False, "error": f"not Linux ({sys.platform})"}
    if machine not in _AUDIT_ARCH:
        return {"seccomp": False, "error": f"no syscall table for {machine}"}
    chosen = RULES if rules is None else rules
    numbers = syscall_numbers(chosen, machine)
    absent = syscall_numbers({"open": chosen["open"]}, machine) if "open" in chosen else []
    numbers = [n for n in numbers if n not in absent]
    self_only = sorted(_TABLES[machine][name] for name in SELF_ONLY)
    if len(numbers) + len(absent) + len(self_only) > 250:  # jumps are 8-bit
        return {"seccomp": False, "error": "too many syscalls for one filter"}
    reading = {_TABLES[machine][n]: off for n, off in _FLAGS_OFFSET.items()
               if n in _TABLES[machine]} if read_only_opens else None
    instructions = program(numbers, machine, self_only, os.getpid(), reading, absent)
    array = (_SockFilter * len(instructions))(*[_SockFilter(*i) for i in instructions])
    fprog = _SockFprog(len(instructions), ctypes.cast(array, ctypes.POINTER(_SockFilter)))
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError as exc:
        return {"seccomp": False, "error": f"no libc: {exc}"}
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    ctypes.set_errno(0)
    if libc.prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), ctypes.c_ulong(0),
                  ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        return {"seccomp": False, "error": f"no_new_privs refused: {_errstr(ctypes.get_errno())}"}
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(_TABLES[machine]["seccomp"]),
                       ctypes.c_uint(_SECCOMP_SET_MODE_FILTER),
                       ctypes.c_uint(_SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(fprog))
    record: SealRecord = {"syscalls": len(numbers) + len(absent), "groups": sorted(chosen)}
    if read_only_opens:
        record["reads"] = True
    if ret == 0:
        record.update(seccomp=True, tsync=True)
        return record
    err = ctypes.get_errno()
    if ret > 0:  # the id of a thread that could not be synchronised
        return {"seccomp": False, "error": f"thread {ret} could not take the filter"}
    if err in (errno.ENOSYS, errno.EINVAL):  # no seccomp(2) or no TSYNC: this thread only
        ctypes.set_errno(0)
        if libc.prctl(ctypes.c_int(_PR_SET_SECCOMP), ctypes.c_ulong(_SECCOMP_MODE_FILTER),
                      ctypes.byref(fprog), ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0:
            threads = _thread_count()
            record.update(seccomp=threads == 1, tsync=False)
            if threads > 1:
                record["error"] = (f"the filter holds on one thread of {threads} (the kernel "
                                   "cannot synchronise threads)")
            return record
        err = ctypes.get_errno()
    return {"seccomp": False, "error": f"seccomp refused: {_errstr(err)}"}


def _errstr(err: int) -> str:
    return f"{errno.errorcode.get(err, str(err))} ({os.strerror(err)})"


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0  # unknown: not sealed


_PROBE = ("import json, os\n"
          "from jaxbench.evaluator.sandbox import seal\n"
          "record = seal.install()\n"
          "if record.get('seccomp'):\n"
          "    try:\n"
          "        os.close(os.open('/proc/self/status', os.O_RDONLY))\n"
          "        record.update(seccomp=False, error='a file opened after the seal')\n"
          "    except OSError:\n"
          "        pass\n"
          "print(json.dumps(record))\n")


def probe(timeout_s: float = 30.0) -> SealRecord:
    """Whether this host seals: a short-lived child installs the seal and checks that a file
    can no longer be opened. Under a host profile without the seal (``no-seal``, ``bare``)
    nothing seals."""
    import json
    import subprocess

    if not profile_allows("seal"):
        return {"seccomp": False, "error": f"host profile {host_profile()!r} ({HOST_PROFILE})"}
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                             timeout=timeout_s, check=False)
        record = json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        return {"seccomp": False, "error": f"the seal's probe failed: {exc}"[:300]}
    return record if isinstance(record, dict) else {"seccomp": False, "error": "bad probe"}

