"""OS-level isolation of the current process (Linux; stdlib + ctypes only).

A fresh worker process calls, in this order and before it runs untrusted code::

    namespaces = enter_namespaces()        # while still single-threaded: no network at all
    set_rlimits(memory_bytes, file_bytes)
    record = restrict(python_read_roots(exclude=[repo_src]), [work_dir])
    level = describe(record, namespaces)   # one string for the results

Every step is best-effort: where the kernel (or a seccomp'd container) refuses a
mechanism, the call returns what it achieved and never raises, so callers keep
working with weaker isolation and record the level they got.

Caveats worth knowing:

* Landlock (below ABI 8) and ``no_new_privs`` apply to the *calling thread* and the
  threads and processes it starts afterwards; threads that already exist keep their
  old rights. ``restrict`` uses ``LANDLOCK_RESTRICT_SELF_TSYNC`` where the kernel has
  it (ABI >= 8) and otherwise reports the number of threads it could not restrict
  (``unrestricted_threads``), so call it while single-threaded where you can.
* ``PR_SET_PDEATHSIG`` fires when the *thread* that forked this process exits, not the
  parent process: spawn workers from a long-lived thread.
* Landlock does not govern connecting to pathname (filesystem) Unix sockets below the
  ABI that adds a right for it; a fresh network namespace does not either. That is what
  ``hide_host`` is for: in the private mount namespace ``enter_namespaces`` makes, it lays
  empty tmpfs (mode 0555) over the shared directories that hold sockets (``/tmp``, ``/run``,
  ``/dev/shm``, home directories, ...) and binds back only what the process needs there.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import site
import stat
import sys
import sysconfig
import threading
from collections.abc import Iterable
from typing import Any, NotRequired, TypedDict

from jaxbench.evaluator.common.procs import make_non_dumpable  # noqa: F401 - the zygote's

__all__ = ["enter_namespaces", "hide_host", "restrict", "set_rlimits", "describe",
           "python_read_roots", "HIDDEN_DIRS"]


class HostHidden(TypedDict):
    """What :func:`hide_host` did: the directories hidden, the kept paths bound back beneath
    them, and why something could not be hidden (where it could not)."""

    hidden: list[str]
    kept: list[str]
    hide_error: NotRequired[str]


class Restrictions(TypedDict, total=False):
    """What :func:`restrict` achieved (see it for examples); the tracer adds what it knows
    before its handshake: whether Triton imports, its namespaces, the directories hidden."""

    landlock_abi: int
    landlock: list[str]  # what the Landlock domain handles: fs, net_tcp, scope_..., tsync
    landlock_error: str
    rules: int  # the Landlock path rules added
    skipped: list[str]  # paths whose rule could not be added, with why
    unrestricted_threads: int  # older threads Landlock left unrestricted (ABI < 8)
    threads: int
    no_new_privs: bool
    capabilities_dropped: bool
    pdeathsig: bool
    # the tracer's (sandbox/tracer.py)
    triton: bool
    namespaces: list[str]
    hidden: list[str]

# unshare(2) flags
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000

# mount(2) flags
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18

# Shared directories where other processes keep pathname Unix sockets (and other state): hidden
# from the process by ``hide_host``. Paths that do not exist are skipped; symlinks (``/var/run``
# -> ``/run``) count once.
HIDDEN_DIRS = ("/tmp", "/var/tmp", "/run", "/var/run", "/var/lock", "/dev/shm", "/dev/mqueue",
               "/var/lib", "/var/spool", "/home", "/root", "/mnt", "/media", "/srv")

# prctl(2) options
_PR_SET_PDEATHSIG = 1
_PR_GET_PDEATHSIG = 2
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_NO_NEW_PRIVS = 39

# Landlock syscalls: the same numbers on every architecture with the unified table
# (x86_64, aarch64, riscv64, ...).
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446

_LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
_LANDLOCK_RESTRICT_SELF_TSYNC = 1 << 3  # ABI >= 8
_LANDLOCK_RULE_PATH_BENEATH = 1
_LANDLOCK_RULE_NET_PORT = 2

# enum landlock_access_fs
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI >= 2
FS_TRUNCATE = 1 << 14  # ABI >= 3
FS_IOCTL_DEV = 1 << 15  # ABI >= 5

# enum landlock_access_net (ABI >= 4)
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1

# scoped (ABI >= 6)
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

_FS_ABI1 = (FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_READ_DIR | FS_REMOVE_DIR | FS_REMOVE_FILE
            | FS_MAKE_CHAR | FS_MAKE_DIR | FS_MAKE_REG | FS_MAKE_SOCK | FS_MAKE_FIFO | FS_MAKE_BLOCK
            | FS_MAKE_SYM)
# The only rights Landlock accepts on a rule whose path is not a directory.
_FS_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
_FS_READ = FS_READ_FILE | FS_READ_DIR | FS_EXECUTE
_FS_DEVICE_READ = FS_READ_FILE | FS_READ_DIR
_FS_DEVICE_RW = FS_READ_FILE | FS_READ_DIR | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV

_CAP_VERSION_3 = 0x20080522

# (pid, parent pid) when the worker imported this module, to notice a parent that died
# before PR_SET_PDEATHSIG was in place (only meaningful in that process; a process forked
# after the import names its own with :func:`expect_parent`).
_IMPORTED_BY = (os.getpid(), os.getppid())


def expect_parent(parent: int) -> None:
    """In a process forked after this module was imported: ``parent`` is the one whose death
    :func:`restrict`'s parent-death signal stands for (checked once the signal is armed)."""
    global _IMPORTED_BY
    _IMPORTED_BY = (os.getpid(), parent)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


assert ctypes.sizeof(_PathBeneathAttr) == 12 and ctypes.sizeof(_NetPortAttr) == 16

_libc_handle: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL:
    global _libc_handle
    if _libc_handle is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.syscall.restype = ctypes.c_long
        lib.prctl.restype = ctypes.c_int
        lib.unshare.restype = ctypes.c_int
        lib.unshare.argtypes = [ctypes.c_int]
        lib.mount.restype = ctypes.c_int
        lib.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                              ctypes.c_char_p]
        _libc_handle = lib
    return _libc_handle


def _errstr(err: int) -> str:
    return f"{errno.errorcode.get(err, str(err))} ({os.strerror(err)})"


def _syscall(number: int, *args: Any) -> tuple[int, int]:
    """(return value, errno) of a raw syscall; arguments are ctypes values."""
    ctypes.set_errno(0)
    ret = _libc().syscall(ctypes.c_long(number), *args)
    return ret, (ctypes.get_errno() if ret < 0 else 0)


def _prctl(option: int, arg2: int = 0) -> tuple[int, int]:
    ctypes.set_errno(0)
    ret = _libc().prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(0),
                        ctypes.c_ulong(0), ctypes.c_ulong(0))
    return ret, (ctypes.get_errno() if ret < 0 else 0)


def thread_count() -> int:
    """Threads of this process (the kernel's count; a fresh user namespace needs one)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def set_parent_death_signal() -> bool:
    """SIGKILL to this process when its parent (the thread that started it) dies."""
    return _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))[0] == 0


# ---------------------------------------------------------------------------------------------
# namespaces


def _write_proc(path: str, text: str) -> bool:
    try:
        with open(path, "w") as f:
            f.write(text)
        return True
    except OSError:
        return False


# Whether this process made its own mount namespace (``hide_host`` never mounts otherwise: in
# the host's namespace its mounts would hide the directories from everyone).
_OWN_MOUNT_NAMESPACE = False


def enter_namespaces() -> list[str]:
    """Move this process into a fresh user + network + mount namespace: no interface but a
    loopback that is down, so no network at all, and mounts of its own (see ``hide_host``).
    Best-effort: returns what was achieved (``["userns", "netns", "mntns"]``, ``["userns",
    "netns"]``, ``["netns", "mntns"]``, ``["netns"]`` or ``[]``) and never raises.

    Must run while the process is single-threaded (``unshare(CLONE_NEWUSER)`` refuses a
    multi-threaded caller); otherwise it does nothing and returns ``[]``.
    """
    global _OWN_MOUNT_NAMESPACE
    if sys.platform != "linux" or threading.active_count() != 1 or thread_count() != 1:
        return []
    uid, gid = os.geteuid(), os.getegid()
    try:
        libc = _libc()
    except OSError:
        return []
    # User namespaces refused (sysctl, AppArmor, seccomp): a privileged process can still
    # take network and mount namespaces of its own.
    for flags, names in ((_CLONE_NEWUSER | _CLONE_NEWNET | _CLONE_NEWNS, ["userns", "netns", "mntns"]),
                         (_CLONE_NEWUSER | _CLONE_NEWNET, ["userns", "netns"]),
                         (_CLONE_NEWNET | _CLONE_NEWNS, ["netns", "mntns"]),
                         (_CLONE_NEWNET, ["netns"])):
        ctypes.set_errno(0)
        if libc.unshare(flags) != 0:
            continue
        if flags & _CLONE_NEWUSER:
            # Keep our own ids visible inside (one line mapping our own id is always allowed);
            # unmapped, they would read as the overflow id 65534.
            _write_proc("/proc/self/uid_map", f"{uid} {uid} 1\n")
            if _write_proc("/proc/self/setgroups", "deny\n"):
                _write_proc("/proc/self/gid_map", f"{gid} {gid} 1\n")
        _OWN_MOUNT_NAMESPACE = bool(flags & _CLONE_NEWNS)
        return names
    return []


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> int:
    """0, or the errno of mount(2)."""
    ctypes.set_errno(0)
    enc = (lambda v: None if v is None else os.fsencode(v))
    ret = _libc().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))
    return 0 if ret == 0 else (ctypes.get_errno() or errno.EPERM)


def _make_mount_point(path: str, is_dir: bool) -> None:
    if is_dir:
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))


def _seal_tmpfs(root: str) -> None:
    """Mode 0555 on the directories of a masking tmpfs (made by ``hide_host``), deepest first,
    not crossing into the mounts bound onto it."""
    dev = os.lstat(root).st_dev
    dirs = [root]
    for base, names, _files in os.walk(root):
        keep = []
        for name in names:
            path = os.path.join(base, name)
            try:
                if os.lstat(path).st_dev == dev:
                    keep.append(name)
                    dirs.append(path)
            except OSError:
                pass
        names[:] = keep
    for path in reversed(dirs):
        try:
            os.chmod(path, 0o555)
        except OSError:
            pass


def hide_host(keep_readable: Iterable[str], keep_writable: Iterable[str],
              hidden: Iterable[str] = HIDDEN_DIRS) -> HostHidden:
    """Hide the shared directories ``hidden`` (where other processes keep pathname Unix sockets,
    which neither Landlock below ABI 8 nor a network namespace stops a ``connect``) under empty
    tmpfs mounts (mode 0555, 64 KiB), in the private mount namespace ``enter_namespaces`` made; the
    ``keep_*`` paths beneath them are bound back at their own paths (the writable ones stay
    shared with the host, so a parent still reads what is written there). A hidden directory
    that lies beneath (or is) a kept path is left alone.

    Call after ``enter_namespaces`` and before ``restrict`` (Landlock forbids mounting).
    Never raises: returns ``{"hidden": [...], "kept": [...]}``, plus ``"hide_error"`` when
    something could not be hidden (nothing at all without a mount namespace of its own).
    """
    record: HostHidden = {"hidden": [], "kept": []}
    if not _OWN_MOUNT_NAMESPACE:
        record["hide_error"] = "no mount namespace of its own"
        return record
    keep = sorted({os.path.realpath(p) for p in [*keep_readable, *keep_writable]
                   if p and os.path.exists(p)})
    targets: list[str] = []
    for path in sorted({os.path.realpath(p) for p in hidden}):
        if not os.path.isdir(path) or path == "/":
            continue
        if any(_beneath(path, t) for t in targets):  # inside one hidden already
            continue
        if any(_beneath(path, k) for k in keep):  # needed whole
            continue
        targets.append(path)
    errors: list[str] = []
    err = _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    if err:
        record["hide_error"] = f"make mounts private: {_errstr(err)}"
        return record
    fds: dict[str, tuple[int, bool]] = {}
    try:
        for path in keep:  # opened before anything is hidden
            if any(_beneath(path, t) for t in targets):
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                    fds[path] = (fd, stat.S_ISDIR(os.fstat(fd).st_mode))
                except OSError as e:
                    errors.append(f"{path}: open: {_errstr(e.errno or 0)}")
        for target in targets:
            err = _mount("tmpfs", target, "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC,
                         "size=64k,nr_inodes=1024,mode=755")
            if err:
                errors.append(f"{target}: {_errstr(err)}")
                continue
            for path, (fd, is_dir) in fds.items():  # sorted: a parent before what it holds
                if not _beneath(path, target):
                    continue
                try:
                    _make_mount_point(path, is_dir)
                except OSError as e:
                    errors.append(f"{path}: mount point: {_errstr(e.errno or 0)}")
                    continue
                err = _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC)
                if err:
                    errors.append(f"{path}: bind: {_errstr(err)}")
                else:
                    record["kept"].append(path)
            # Not remounted read-only: a write there would then fail with EROFS, before the
            # permission checks (and Landlock's), and read as an ordinary error rather than
            # the sandbox's refusal. Mode 0555 and a tiny size instead.
            _seal_tmpfs(target)
            record["hidden"].append(target)
    finally:
        for fd, _ in fds.values():
            os.close(fd)
    if errors:
        record["hide_error"] = "; ".join(errors)[:500]
    return record


# ---------------------------------------------------------------------------------------------
# Landlock


def landlock_abi() -> tuple[int, str]:
    """(ABI version, "") or (0, reason) when Landlock is not usable here."""
    if sys.platform != "linux":
        return 0, f"not Linux ({sys.platform})"
    try:
        _libc()
    except OSError as e:
        return 0, f"no libc: {e}"
    ret, err = _syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.c_void_p(None), ctypes.c_size_t(0),
                        ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    if ret < 0:
        why = {errno.ENOSYS: "kernel without Landlock", errno.EOPNOTSUPP: "Landlock disabled at boot",
               errno.EPERM: "refused (seccomp?)"}.get(err, "unavailable")
        return 0, f"{why}: {_errstr(err)}"
    return int(ret), ""


def _handled_fs(abi: int) -> int:
    rights = _FS_ABI1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def _add_path_rule(ruleset_fd: int, path: str, wanted: int, handled: int) -> str | None:
    """Allow ``wanted`` (within ``handled``) beneath ``path``. None when added, else why not."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError as e:
        return f"open: {_errstr(e.errno or 0)}"
    try:
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        access = wanted & handled if is_dir else wanted & handled & _FS_FILE_RIGHTS
        if not access:
            return "no applicable right"
        attr = _PathBeneathAttr(allowed_access=access, parent_fd=fd)
        ret, err = _syscall(_SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset_fd),
                            ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH), ctypes.byref(attr),
                            ctypes.c_uint32(0))
        return None if ret == 0 else f"add_rule: {_errstr(err)}"
    finally:
        os.close(fd)


def _drop_capabilities() -> bool:
    """Empty the bounding set (where allowed) and the effective, permitted and inheritable sets
    (ambient follows). With no_new_privs, a later execve cannot get them back, even as uid 0."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last_cap = int(f.read())
    except (OSError, ValueError):
        last_cap = 63
    for cap in range(last_cap + 1):
        _prctl(_PR_CAPBSET_DROP, cap)  # EPERM without CAP_SETPCAP: fine, permitted goes below
    header = _CapHeader(version=_CAP_VERSION_3, pid=0)
    data = (_CapData * 2)()
    ctypes.set_errno(0)
    try:
        return _libc().capset(ctypes.byref(header), data) == 0
    except AttributeError:
        return False


def restrict(readable: Iterable[str], writable: Iterable[str], *,
             read_write_devices: Iterable[str] = ("/dev/null",),
             readable_devices: Iterable[str] = ("/dev/urandom", "/dev/random", "/dev/zero"),
             drop_capabilities: bool = True, landlock: bool = True) -> Restrictions:
    """Lock this process (and everything it starts) down for running untrusted code.

    * ``no_new_privs``; ``SIGKILL`` when the parent dies (``PR_SET_PDEATHSIG``);
    * a Landlock domain handling every filesystem right the kernel knows: read + execute
      beneath ``readable``, everything beneath ``writable``, the named devices (files get
      file rights only); TCP bind and connect refused on every port (ABI >= 4); no signals
      to, and no abstract Unix sockets of, processes outside the domain (ABI >= 6);
      ptrace and ``/proc/<pid>/mem`` of outside processes are refused by Landlock itself;
    * all capabilities dropped (``drop_capabilities``).

    ``landlock=False`` leaves Landlock out (a host profile that stands for a host without it).

    Non-existent paths are skipped. Never raises for an unavailable mechanism: the returned
    record says what holds, e.g. ``{"landlock_abi": 7, "landlock": ["fs", "net_tcp",
    "scope_signal", "scope_abstract_unix"], "no_new_privs": True, "pdeathsig": True, ...}``
    or ``{"landlock_abi": 0, "landlock": [], "landlock_error": "...", ...}``.
    """
    record: Restrictions = {"landlock_abi": 0, "landlock": []}
    if sys.platform != "linux":
        record.update({"landlock_error": f"not Linux ({sys.platform})", "no_new_privs": False,
                       "pdeathsig": False})
        return record
    threads = thread_count()
    record["threads"] = threads

    ret, err = _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    record["no_new_privs"] = ret == 0 or _prctl(_PR_GET_NO_NEW_PRIVS)[0] == 1

    abi, why = landlock_abi() if landlock else (0, "left out by the host profile")
    record["landlock_abi"] = abi
    if abi <= 0:
        record["landlock_error"] = why
    else:
        _landlock(record, abi, readable, writable, read_write_devices, readable_devices, threads)

    if drop_capabilities:
        record["capabilities_dropped"] = _drop_capabilities()

    # Last: PR_SET_PDEATHSIG is cleared by some credential changes.
    record["pdeathsig"] = set_parent_death_signal()
    if record["pdeathsig"] and os.getpid() == _IMPORTED_BY[0] and os.getppid() != _IMPORTED_BY[1]:
        os.kill(os.getpid(), signal.SIGKILL)  # the parent died before the signal was armed
    return record


def _landlock(record: Restrictions, abi: int, readable: Iterable[str], writable: Iterable[str],
              read_write_devices: Iterable[str], readable_devices: Iterable[str], threads: int) -> None:
    handled_fs = _handled_fs(abi)
    attr = _RulesetAttr(handled_access_fs=handled_fs)
    size = 8
    achieved = ["fs"]
    if abi >= 4:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
        achieved.append("net_tcp")
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
        achieved += ["scope_signal", "scope_abstract_unix"]
    fd, err = _syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                       ctypes.c_uint32(0))
    if fd < 0:
        record["landlock_error"] = f"create_ruleset: {_errstr(err)}"
        return
    try:
        skipped: list[str] = []
        rules = 0
        groups = ((readable, _FS_READ), (writable, handled_fs),
                  (read_write_devices, _FS_DEVICE_RW), (readable_devices, _FS_DEVICE_READ))
        for paths, wanted in groups:
            for path in paths:
                path = os.fspath(path)
                if not os.path.exists(path):
                    continue
                failure = _add_path_rule(fd, path, wanted, handled_fs)
                if failure is None:
                    rules += 1
                else:
                    skipped.append(f"{path}: {failure}")
        record["rules"] = rules
        if skipped:
            record["skipped"] = skipped
        flags = _LANDLOCK_RESTRICT_SELF_TSYNC if abi >= 8 else 0
        ret, err = _syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(flags))
        if ret < 0:
            record["landlock_error"] = f"restrict_self: {_errstr(err)}"
            return
    finally:
        os.close(fd)
    if flags:
        achieved.append("tsync")
    elif threads > 1:
        record["unrestricted_threads"] = threads - 1
    record["landlock"] = achieved


# ---------------------------------------------------------------------------------------------
# resource limits and reporting


def set_rlimits(memory_bytes: int | None, file_bytes: int, nproc: int | None = None) -> dict[str, int]:
    """No core dumps; files of at most ``file_bytes``; optionally an address-space cap and a
    process count cap (``RLIMIT_NPROC`` does not bind uid 0 outside a user namespace).
    Soft and hard limits are both set, so the process cannot raise them again; a limit
    that is already lower is kept. Returns what was set."""
    import resource

    wanted = [("core", resource.RLIMIT_CORE, 0), ("fsize", resource.RLIMIT_FSIZE, file_bytes)]
    if memory_bytes is not None:
        wanted.append(("as", resource.RLIMIT_AS, memory_bytes))
    if nproc is not None:
        wanted.append(("nproc", resource.RLIMIT_NPROC, nproc))
    applied: dict[str, int] = {}
    for name, which, value in wanted:
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        try:
            resource.setrlimit(which, (value, value))
            applied[name] = value
        except (OSError, ValueError):
            pass
    return applied


def describe(record: Restrictions, namespaces: list[str], *, rlimits: bool = True,
             hidden: HostHidden | None = None) -> str:
    """One short line for the results, e.g.
    ``landlock-abi7(fs,net_tcp,scope_signal,scope_abstract_unix)+userns+netns+mntns+host_hidden
    +no_new_privs+rlimits`` or ``userns+netns+no_new_privs+rlimits (no Landlock: <reason>)``.
    ``hidden`` is what ``hide_host`` returned (omitted: not attempted)."""
    parts: list[str] = []
    if record.get("landlock"):
        parts.append(f"landlock-abi{record.get('landlock_abi', 0)}({','.join(record['landlock'])})")
    parts += list(namespaces)
    if hidden is not None and hidden.get("hidden") and not hidden.get("hide_error"):
        parts.append("host_hidden")
    if record.get("no_new_privs"):
        parts.append("no_new_privs")
    if record.get("capabilities_dropped"):
        parts.append("no_caps")
    if rlimits:
        parts.append("rlimits")
    text = "+".join(parts) or "none"
    notes = []
    if not record.get("landlock"):
        notes.append(f"no Landlock: {record.get('landlock_error') or 'not applied'}")
    elif record.get("unrestricted_threads"):
        notes.append(f"Landlock on the calling thread only: {record['unrestricted_threads']} "
                     "older thread(s) unrestricted")
    if hidden is not None and (hidden.get("hide_error") or not hidden.get("hidden")):
        notes.append("host directories not hidden: "
                     f"{hidden.get('hide_error') or 'none found'}"[:300])
    return f"{text} ({'; '.join(notes)})" if notes else text


def _beneath(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def python_read_roots(exclude: Iterable[str] = ()) -> list[str]:
    """What a Python process needs to read to keep importing modules of its installed
    environment: its prefixes, site-packages and sysconfig paths, the system libraries, and
    the read-only system files Python, NumPy and XLA look at. Resolved, existing, and with
    paths nested in another one dropped.

    Nothing else on ``sys.path`` is added: not the current directory (``''``, or the
    absolute one ``python -m`` puts first), not ``PYTHONPATH``'s entries, not an editable
    install's source tree: those are where the host keeps its own files (a repository root
    holds ``runs/``, with each run's secret, events and kernel sources); a tracer imports what
    it needs from them before it locks itself down. Only the library directories an operator
    names in :data:`LIBRARY_PATH` are added (:func:`library_roots`).

    Landlock grants by subtree, so a root that holds an ``exclude`` entry is replaced by its
    children, recursively, leaving out the excluded directory itself (the repository's
    ``src/`` or a ``site-packages`` that holds ``jaxbench``)."""
    excluded = [os.path.realpath(p) for p in exclude]
    candidates: list[str] = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    try:
        candidates += site.getsitepackages()
    except AttributeError:  # old virtualenv's site module
        pass
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user_site:
        candidates.append(user_site)
    paths = sysconfig.get_paths()
    candidates += [paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths]
    candidates += library_roots()
    candidates += ["/usr/lib", "/lib", "/lib64", "/usr/lib64", "/etc/ld.so.cache", "/etc/localtime",
                   *own_procfs(), "/sys/devices/system/cpu", "/sys/devices/system/node",
                   "/sys/fs/cgroup"]

    resolved = sorted({os.path.realpath(c) for c in candidates if c and os.path.exists(c)})
    roots: list[str] = []
    for path in resolved:  # sorted, so a parent comes before what lies beneath it
        if not any(_beneath(path, r) for r in roots):
            roots.append(path)
    return sorted(p for root in roots for p in _split_around(root, excluded))


# Directories of kernel libraries that are not installed (os.pathsep-separated, absolute), which
# tracers may read besides the installation: set by whoever starts the evaluator, never by a
# kernel. The parent passes it to tracers only as ``library_roots`` leaves it.
LIBRARY_PATH = "JAXBENCH_TRACER_LIBRARY_PATH"


def library_roots(cwd: str | None = None) -> list[str]:
    """The existing directories :data:`LIBRARY_PATH` names, resolved, except a relative entry,
    the working directory ``cwd`` (this process's by default) and any directory that holds it:
    the working directory is where the host keeps its runs. Put them on ``PYTHONPATH`` as well
    for the tracers to import from them."""
    here = os.path.realpath(cwd if cwd is not None else os.getcwd())
    roots = []
    for entry in os.environ.get(LIBRARY_PATH, "").split(os.pathsep):
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        real = os.path.realpath(entry)
        if not _beneath(here, real):
            roots.append(real)
    return roots


# System-wide procfs files that describe the machine, not other processes.
_PROC_MACHINE_FILES = ("/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg",
                       "/proc/version", "/proc/filesystems", "/proc/sys")


def own_procfs() -> list[str]:
    """The procfs a process may read of itself: its own ``/proc/<pid>`` (what ``/proc/self``
    and ``/proc/thread-self`` resolve to) and the machine's description, never another
    process's directory nor the listing of ``/proc`` (other processes' command lines and
    environments). Landlock grants by path, so this stands in for a PID namespace with its
    own procfs."""
    return [os.path.realpath("/proc/self"), *_PROC_MACHINE_FILES]


def _split_around(root: str, excluded: list[str]) -> list[str]:
    """``root`` itself, or (when an excluded path lies beneath it) its children minus the
    excluded ones, split again where needed."""
    if any(_beneath(root, ex) for ex in excluded):
        return []
    if not any(_beneath(ex, root) for ex in excluded) or not os.path.isdir(root):
        return [root]
    try:
        children = sorted(os.path.join(root, name) for name in os.listdir(root))
    except OSError:
        return []
    return [p for child in children for p in _split_around(child, excluded)]
