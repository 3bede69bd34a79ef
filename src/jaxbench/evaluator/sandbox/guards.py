"""Runtime guards for the worker process, installed before candidate code runs.

Python audit hooks cannot be removed once added, so after :func:`lock_down`
the process cannot spawn processes, open sockets, load native code through
ctypes, scan the heap, grab interpreter frames (the harness's locals hold the
inputs and its report handles), write files outside its private temp dir, or
read process memory or another process's /proc under any spelling of the path,
however the candidate's code is written: the static policy is only the first
line. rlimits bound its memory and file sizes; the parent owns the wall clock
and kills the whole process group.
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import os
import re
import resource  # noqa: F401 - loaded before lock-down: a kernel's import finds this copy
import stat
import sys
import threading
import types
import typing
from pathlib import Path
from typing import Any

from jaxbench.evaluator.sandbox import isolation

# Audit events that are never allowed once the candidate is loaded.
_DENIED_EVENTS = frozenset({
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "os.kill", "os.killpg", "subprocess.Popen", "pty.spawn",
    "socket.__new__", "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg",
    "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.addressof", "ctypes.cdata", "ctypes.call_function",
    "ctypes.string_at", "ctypes.wstring_at", "ctypes.create_string_buffer",
    "ctypes.create_unicode_buffer", "ctypes.PyObj_FromPtr", "ctypes.cdata/buffer",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "sys.setprofile", "sys.settrace", "sys.remote_exec", "sys._current_frames",
    "sys._current_exceptions", "sys.addaudithook", "code.__new__",
    "os.chdir", "os.chroot", "os.setuid", "os.setgid", "resource.setrlimit", "resource.prlimit",
    "webbrowser.open", "mmap.__new__", "os.memfd_create",
})
_PATH_EVENTS = frozenset({
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link",
    "os.symlink", "os.truncate", "os.utime", "shutil.rmtree", "shutil.copyfile", "shutil.move",
    "shutil.copytree", "shutil.chown", "os.mkfifo", "os.mknod",
})
# Modules that may not be *loaded* once the candidate runs (already-loaded ones are guarded by
# the events above; a fresh copy of an extension module would bring unpatched functions).
_DENIED_IMPORTS = frozenset({
    "ctypes", "_ctypes", "subprocess", "_posixsubprocess", "socket", "_socket", "multiprocessing",
    "_multiprocessing", "pty", "_posixshmem", "gc", "_signal", "signal", "resource", "faulthandler",
})
# Denied modules that JAX's own installation imports (JAX's Mosaic GPU ops import its test
# utilities, which import absl's absltest, which imports faulthandler): imported before lock-down
# with every function replaced by a refusal, so whoever imports them afterwards (JAX's modules,
# the candidate) gets that cached copy, which can do nothing; a fresh copy stays refused.
_DISARMED_MODULES = ("faulthandler",)
# Attributes that hand out interpreter frames (CPython audits their reads).
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
# Standard-library callers of sys._getframe that only read a module name and keep no frame.
_GETFRAME_CALLERS = ("/collections/__init__.py", "/typing.py", "/typing_extensions.py",
                     "/enum.py", "/warnings.py")
# Library callers (Tokamax's dependencies, at call time; absl's flags, defined by the module
# bodies of absl.logging when JAX's Mosaic GPU ops import it) that read a namespace or a location
# from the frames of the code calling them: pydantic's TypeAdapter, absl's logging and flags.
# Allowed only to frames above the candidate's (its own, or library code it called), never the
# harness's.
_GETFRAME_LIBRARY_CALLERS = ("/pydantic/type_adapter.py", "/absl/logging/__init__.py",
                             "/absl/flags/_helpers.py")
_TYPES_FILE = types.__file__.replace(os.sep, "/")
# Standard-library modules that compile code they generate (file name "<string>").
_CODE_GENERATORS = frozenset(m.__file__.replace(os.sep, "/")
                             for m in (dataclasses, collections, typing))
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# Flags that open a directory (or a path handle): such an fd is a dir_fd, and the "open" audit
# event does not carry dir_fd, so a path relative to it would be checked against the working
# directory instead of the directory it really names.
_DIRECTORY_FLAGS = getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_PATH", 0)
# Where each path event carries its dir_fd argument(s) (-1 when none was given).
_DIR_FD_ARGS = {"os.mkdir": (2,), "os.chmod": (2,), "os.chown": (3,), "os.link": (2, 3),
                "os.rename": (2, 3), "os.remove": (1,), "os.rmdir": (1,), "os.symlink": (2,),
                "os.utime": (3,)}
# Functions that create files without any audit event (os.mknod also makes regular files).
_UNAUDITED_WRITERS = ("mkfifo", "mknod")
# Matched against normalised paths (:func:`_normalised`: /proc/self is /proc/<pid> there).
_PROC_SECRETS = re.compile(r"^/proc/\d+(/task/\d+)?/(mem|environ|pagemap)$")
_PROC_PID_DIR = re.compile(r"^/proc/\d+(?=/|$)")
# Events that list a directory (args[0]: the path): another process's fd or task directory.
_LISTING_EVENTS = frozenset({"os.listdir", "os.scandir"})


def raised_by_untrusted_code(exc: BaseException) -> bool:
    """Whether candidate-controlled code (compiled after lock-down, or living in the private
    dir) is among the frames an exception passed through."""
    tb = exc.__traceback__
    while tb is not None:
        if _untrusted(tb.tb_frame):
            return True
        tb = tb.tb_next
    return False


class SandboxViolation(PermissionError):
    """Raised inside the candidate when it attempts something the sandbox forbids."""


_state: dict[str, object] = {"active": False, "root": None, "untrusted_files": set(),
                             "candidate_files": set(), "own_code": set(), "jax_roots": ()}
_local = threading.local()


def _normalised(path: object) -> str | None:
    """The absolute path with every symlink resolved that ``path`` (str, bytes or path-like;
    relative ones against the working directory) names: ``/proc/self`` reads as
    ``/proc/<pid>``, ``..`` and ``//`` are gone. None when it cannot be told."""
    try:
        return os.path.realpath(os.fsdecode(path))  # type: ignore[arg-type]
    except (TypeError, ValueError, OSError):
        return None


def _inside(path: object, root: str) -> bool:
    if isinstance(path, int):  # an fd: the file was opened (and checked) earlier
        return True
    real = _normalised(path)
    if real is None:
        return False
    return real == root or real.startswith(root + os.sep) or real == os.devnull


def _under_proc(real: str) -> bool:
    return real == "/proc" or real.startswith("/proc/")


def _proc_problem(path: object) -> str:
    """Why reading ``path`` would reach procfs beyond the process's own ('' if it does not):
    process memory (``mem``, ``environ``, ``pagemap``, its own included), another process's
    ``/proc/<pid>`` (anything in it: its command line, its ``cwd``/``root``/``fd`` links into
    its files), or procfs other than the process's own directory and the machine's description
    (:func:`isolation.own_procfs`, what Landlock grants). Every spelling counts: the path is
    normalised (:func:`_normalised`) one component at a time, so a lookup that only passes
    through another process's directory (``/proc/<pid>/root/...``, ``/proc/<pid>/../self``)
    counts too, and so does one that cannot be resolved inside procfs."""
    if isinstance(path, int) or path is None:  # an fd: opened (and checked) earlier
        return ""
    try:
        name = os.fsdecode(path)  # type: ignore[arg-type]
        current = "/" if name.startswith("/") else os.getcwd()
    except (TypeError, ValueError, OSError):
        return ""  # the call itself fails the same way
    own = ""
    for part in name.split("/"):
        if part in ("", "."):
            continue
        step = _normalised(os.path.join(current, part))
        if step is None:
            return "" if not _under_proc(current) else f"unresolvable below {current}"
        current = step
        if _under_proc(current):
            own = own or _normalised("/proc/self") or "/proc/self"
            pid_dir = _PROC_PID_DIR.match(current)
            if pid_dir and pid_dir.group() != own:
                return f"another process's {pid_dir.group()}"
    if not _under_proc(current):
        return ""
    if _PROC_SECRETS.match(current):
        return f"process memory: {current}"
    if not any(current == a or current.startswith(a + "/") for a in isolation.own_procfs()):
        return f"procfs beyond the process's own /proc/<pid> and the machine's: {current}"
    return ""


def _opens_directory(path: object, mode: object, flags: object) -> str:
    """What an "open" event would open that could serve as a dir_fd ('' if nothing): any path
    with O_DIRECTORY or O_PATH, or (os.open, whose mode is None) a path that is a directory,
    inside the private dir too (a relative path through a directory fd below the working
    directory reaches beyond the private dir while the hook resolves it inside). The built-in
    open() (a str mode) never hands out a directory's fd: it raises IsADirectoryError."""
    if isinstance(path, int):  # an fd already open: open(fd) wraps it, no new directory fd
        return ""
    try:
        name = os.fsdecode(path)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    if isinstance(flags, int) and flags & _DIRECTORY_FLAGS:
        return name
    if mode is None:
        try:
            if stat.S_ISDIR(os.stat(name).st_mode):
                return name
        except (OSError, ValueError):
            pass
    return ""


def _untrusted(frame: object) -> bool:
    """Whether the frame runs candidate code: compiled after lock-down other than by an import
    of an installed module, or from a file in the private dir (the only place it can write)."""
    filename = frame.f_code.co_filename  # type: ignore[attr-defined]
    return filename in _state["untrusted_files"] or _inside_root(filename)  # type: ignore[operator]


def _inside_root(filename: str) -> bool:
    root = _state["root"]
    return isinstance(root, str) and (filename == root or filename.startswith(root + os.sep))


def _untrusted_on_stack(frame: object) -> bool:
    while frame is not None:
        if _untrusted(frame):
            return True
        frame = frame.f_back  # type: ignore[attr-defined]
    return False


def _where(frame: object) -> tuple[str, str]:
    code = frame.f_code  # type: ignore[attr-defined]
    return code.co_filename.replace(os.sep, "/"), code.co_name


def _getframe_allowed(caller: object, target: object) -> bool:
    """sys._getframe from library code that keeps the frame to itself, or with no candidate
    code on the stack at all (the harness reporting an error)."""
    if not _untrusted_on_stack(caller):
        return True
    if _untrusted(caller):
        return False
    filename, func = _where(caller)
    if filename.endswith(_GETFRAME_CALLERS):
        return True
    if filename.endswith(_GETFRAME_LIBRARY_CALLERS):
        return target is not None and _untrusted_on_stack(target)
    if filename.endswith("/traceback.py") and func in ("extract_stack", "format_stack",
                                                       "print_stack"):
        return True
    # logging.currentframe is a lambda handing the frame to its caller: only findCaller may.
    parent = caller.f_back  # type: ignore[attr-defined]
    return (filename.endswith("/logging/__init__.py") and parent is not None
            and _where(parent) == (filename, "findCaller"))


def _frame_read_allowed(accessor: object) -> bool:
    """A traceback/generator frame read: by JAX's traceback filtering (it keeps the frames to
    itself) or with no candidate code on the stack."""
    if not _untrusted_on_stack(accessor):
        return True
    return not _untrusted(accessor) and _where(accessor)[0].endswith(
        "/jax/_src/traceback_util.py")


def _jax_roots() -> tuple[str, ...]:
    roots = []
    for name in ("jax", "jaxlib"):
        module = sys.modules.get(name)
        filename = getattr(module, "__file__", None)
        if isinstance(filename, str):
            roots.append(os.path.dirname(filename) + os.sep)
    return tuple(roots)


def _imported_for_jax(frame: object) -> bool:
    """Whether the module body running in ``frame`` is imported on behalf of a module of JAX's
    own installation: walking outwards, the frames up to the first that is not one are bodies
    of installed (not candidate-controlled) modules being imported, with the import machinery
    between them, and one of them is a module of JAX's installation. The candidate's own module,
    code it compiled and modules in its private dir never qualify."""
    roots = _state.get("jax_roots") or ()
    for_jax = False
    while frame is not None:
        filename, name = _where(frame)
        if not filename.startswith("<frozen importlib"):
            if _untrusted(frame) or name != "<module>":
                break
            for_jax = for_jax or filename.startswith(roots)  # type: ignore[arg-type]
        frame = frame.f_back  # type: ignore[attr-defined]
    return for_jax


def _library_generated(frame: object) -> bool:
    """Code that the standard library generates (file name "<string>": dataclass methods,
    namedtuple constructors, typing's forward references) for a class that the body of an
    installed module defines while the import system loads it (a JAX op's BlockSizes or
    NamedTuple). Without this, every class with such a method (JAX's GridMapping included)
    would count as the candidate's (:func:`untrusted_code`)."""
    if _where(frame)[0] not in _CODE_GENERATORS:
        return False
    while frame is not None and _where(frame)[0] in _CODE_GENERATORS:
        frame = frame.f_back  # type: ignore[attr-defined]
    if frame is None or _untrusted(frame) or _where(frame)[1] != "<module>":
        return False
    parent = frame.f_back  # type: ignore[attr-defined]
    return parent is not None and _where(parent)[0].startswith("<frozen importlib")


def _stdlib_coroutine_for_jax(frame: object) -> bool:
    """types.coroutine (a copy of a code object with one more flag, same file name) called by a
    module body that JAX's own installation is importing (asyncio's, through absl's test
    utilities)."""
    filename, name = _where(frame)
    return (name == "coroutine" and filename == _TYPES_FILE
            and _imported_for_jax(frame.f_back))  # type: ignore[attr-defined]


def neuter(module: object) -> None:
    """Replaces every callable attribute of a denied module with a refusal."""
    name = getattr(module, "__name__", "?")
    for attribute, value in list(vars(module).items()):
        if callable(value) and not attribute.startswith("__"):
            setattr(module, attribute, _refuse(f"{name}.{attribute}"))


def _check(event: str, args: tuple) -> str | None:
    root = _state["root"]
    if event in _DENIED_EVENTS:
        if event == "code.__new__" and _stdlib_coroutine_for_jax(sys._getframe(2)):
            return None
        return f"{event} is not allowed in a kernel"
    if event in ("compile", "exec"):
        # Code compiled or run from now on, other than by the import system loading an installed
        # module, is candidate-controlled: remember its file name.
        caller = sys._getframe(2)
        if _where(caller)[0].startswith("<frozen importlib"):
            return None
        code = args[0] if args else None
        name = getattr(code, "co_filename", None) if event == "exec" else (
            args[1] if len(args) > 1 else None)
        if isinstance(name, (str, bytes)):
            _state["untrusted_files"].add(os.fsdecode(name))  # type: ignore[union-attr]
            if not _library_generated(caller):  # the candidate's classes, see untrusted_code
                _state["candidate_files"].add(os.fsdecode(name))  # type: ignore[union-attr]
            if _own_code(_where(caller)[0]):  # compile()/exec() called by the candidate itself
                _state["own_code"].add(os.fsdecode(name))  # type: ignore[union-attr]
        return None
    if event == "import":
        name = args[0] if args else ""
        if isinstance(name, str) and name.split(".")[0] in _DENIED_IMPORTS:
            return f"importing {name!r} is not allowed in a kernel"
        return None
    if event == "sys._getframe":
        # frames: 0 _check, 1 _hook, 2 the code that called sys._getframe; args: the frame it gets
        if not _getframe_allowed(sys._getframe(2), args[0] if args else None):
            return "sys._getframe is not allowed in a kernel (frame inspection)"
        return None
    if event == "object.__getattr__":
        name = args[1] if len(args) > 1 else ""
        if name in _FRAME_ATTRIBUTES and not _frame_read_allowed(sys._getframe(2)):
            return f"reading .{name} is not allowed in a kernel (frame inspection)"
        return None
    if event == "open" and len(args) >= 3:
        path, mode, flags = args[0], args[1], args[2]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS)
        if writing and not _inside(path, root):  # type: ignore[arg-type]
            return f"writing {path!r} outside the private temp dir is not allowed"
        directory = _opens_directory(path, mode, flags)
        if directory:
            return (f"opening directory {directory!r} is not allowed in a kernel (paths "
                    "relative to a directory fd escape the private temp dir's checks)")
        problem = _proc_problem(path)
        if problem:
            return f"reading {os.fsdecode(path)!r} is not allowed in a kernel ({problem})"
        return None
    if event in _LISTING_EVENTS:
        problem = _proc_problem(args[0] if args else None)
        if problem:
            return f"listing {os.fsdecode(args[0])!r} is not allowed in a kernel ({problem})"
        return None
    if event in _PATH_EVENTS:
        dir_fds = [args[i] for i in _DIR_FD_ARGS.get(event, ()) if i < len(args)]
        if any(isinstance(fd, int) and fd != -1 for fd in dir_fds):
            return f"{event} relative to a directory fd (dir_fd) is not allowed in a kernel"
        paths = [a for a in args[:2] if isinstance(a, (str, bytes, os.PathLike))]
        if any(not _inside(p, root) for p in paths):  # type: ignore[arg-type]
            return f"{event} outside the private temp dir is not allowed"
    return None


from jaxbench.evaluator.common.procs import SEALED_EXIT  # noqa: E402 - a tracer's exit status

_SEALED = "sealed"  # other meaning: the guards' flag for a sealed tracer


def seal() -> None:
    """From now on any audited action (opening a file, an import, setting a function's code,
    reading a frame, ...; not ``id()`` or other attribute reads) with candidate code on the
    stack ends the process at once, before the action: the tracer calls this before it makes
    and writes its exports, so nothing of the candidate's can touch them."""
    _state[_SEALED] = True


def untrusted_code(filename: str) -> bool:
    """Whether code from ``filename`` is candidate-controlled (see :func:`_untrusted`), for
    telling the candidate's classes from JAX's: code that the standard library generated for the
    classes of installed modules' bodies ("<string>": a JAX op's dataclasses) does not count
    unless the candidate compiled such a name too (frames from it stay untrusted anyway)."""
    return filename in _state["candidate_files"] or _inside_root(filename)  # type: ignore[operator]


def candidate_file(filename: str) -> None:
    """Names the candidate's own source file (the tracer calls this before loading it)."""
    _state["own_code"].add(filename)  # type: ignore[union-attr]
    _state["candidate_files"].add(filename)  # type: ignore[union-attr]


def own_code(filename: str) -> bool:
    """Whether code from ``filename`` is the candidate's own (see :func:`_own_code`)."""
    return _own_code(filename)


def _own_code(filename: str) -> bool:
    """Code the candidate wrote: its file, files in the private dir, and code that its own
    frames compiled (not code the standard library generates for JAX's classes at any time,
    which is named "<string>" like anything else exec'd)."""
    return filename in _state["own_code"] or _inside_root(filename)  # type: ignore[operator]


def _candidate_on_stack(frame: object) -> bool:
    """Whether the candidate's own code is on the stack (see :func:`_own_code`)."""
    while frame is not None:
        if _own_code(frame.f_code.co_filename):  # type: ignore[attr-defined]
            return True
        frame = frame.f_back  # type: ignore[attr-defined]
    return False


def state_problem(root: Path, filename: str) -> str:
    """'' while the guards are as :func:`lock_down` left them; else what changed (candidate
    code can reach this module's state through ``sys.modules``: checked after every stage)."""
    if _state.get("active") is not True:
        return "the sandbox's guards were switched off"
    if _state.get("root") != os.path.realpath(root):
        return "the sandbox's private directory was changed"
    if filename not in (_state.get("own_code") or ()) or \
            filename not in (_state.get("candidate_files") or ()):
        return "the sandbox's record of the kernel's code was cleared"
    return ""


def _hook(event: str, args: tuple) -> None:
    # id() and attribute reads other than frame inspection act on nothing, and no rule looks at
    # them: they return at once, also when sealed (JAX's own tracing and lowering make hundreds
    # of thousands of them; walking the stack for each was most of a tracer's time).
    if event == "builtins.id" or (event == "object.__getattr__" and (
            len(args) < 2 or args[1] not in _FRAME_ATTRIBUTES)):
        return
    if not _state["active"] or getattr(_local, "busy", False):
        return
    _local.busy = True  # the checks themselves raise audit events (sys._getframe)
    try:
        if _state.get(_SEALED) and _candidate_on_stack(sys._getframe(1)):
            os._exit(SEALED_EXIT)
        why = _check(event, args)
    finally:
        _local.busy = False
    if why:
        raise SandboxViolation(why)


_installed = False


def install_hook() -> None:
    """Adds the (inactive) audit hook; call once, early, in the worker."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
        try:  # JAX's traceback filtering reads tb_frame; the worker reports messages, not frames
            import jax

            jax.config.update("jax_traceback_filtering", "off")
        except Exception:  # noqa: BLE001 - no JAX: nothing to configure
            pass


def _refuse(what: str):
    def refused(*args: object, **kwargs: object) -> None:
        raise SandboxViolation(f"{what} is not allowed in a kernel")

    return refused


# Functions that reach the process or the OS from C++ without an audit event: the profiler's
# trace writers and its TCP server. Refused (before the integrity snapshot is taken).
_PROFILER_ENTRY_POINTS = ("start_server", "start_trace", "stop_trace",
                          "trace",  # other meaning: jax.profiler.trace
                          "save_device_memory_profile", "device_memory_profile")


def _guarded_thread_start(start: Any) -> Any:
    def start_new_thread(*args: Any, **kwargs: Any) -> Any:
        if _state["active"]:
            _local.busy = True  # the frame walk below is the guard's own, not audited
            try:
                untrusted = _untrusted_on_stack(sys._getframe(1))
            finally:
                _local.busy = False
            if untrusted:
                raise SandboxViolation("starting a thread is not allowed in a kernel")
        return start(*args, **kwargs)

    return start_new_thread


def _guarded_module_creation(create: Any) -> Any:
    """importlib.import_module and importlib.util.module_from_spec load a built-in or extension
    module without the "import" audit event: a fresh copy of a denied module (with unpatched
    functions) is refused there too."""
    def create_module(spec: Any, *args: Any, **kwargs: Any) -> Any:
        name = getattr(spec, "name", None)
        if _state["active"] and isinstance(name, str) and name.split(".")[0] in _DENIED_IMPORTS:
            raise SandboxViolation(f"importing {name!r} is not allowed in a kernel")
        return create(spec, *args, **kwargs)

    return create_module


def disarm_unaudited() -> None:
    """Replaces the process, thread, frame and profiler escapes CPython does not audit with
    refusals. Called before the integrity snapshot, so these replacements are the baseline."""
    spawn = sys.modules.get("_posixsubprocess")
    if spawn is not None:
        spawn.fork_exec = _refuse("_posixsubprocess.fork_exec")  # type: ignore[attr-defined]
    # Threads started by candidate code could run beside the harness after the trace and swap
    # what it calls; JAX's own threads (the TPU interpreter's simulated cores) are fine.
    for module_name, attribute in (("_thread", "start_new_thread"), ("_thread", "start_new"),
                                   ("threading", "_start_new_thread")):
        module = sys.modules.get(module_name)
        if module is not None and hasattr(module, attribute):
            setattr(module, attribute, _guarded_thread_start(getattr(module, attribute)))
    profiler = sys.modules.get("jax.profiler")
    if profiler is not None:
        for name in _PROFILER_ENTRY_POINTS:
            if hasattr(profiler, name):
                setattr(profiler, name, _refuse(f"jax.profiler.{name}"))
    for name in ("signal", "_signal"):  # a signal handler receives the interrupted frame
        mod = sys.modules.get(name)
        if mod is not None:
            mod.signal = _refuse("signal.signal")  # type: ignore[attr-defined]
    for name in _DISARMED_MODULES:  # whether or not a preloaded JAX op imported it already
        neuter(importlib.import_module(name))
    for module in (os, sys.modules.get("posix")):  # no audit event: files made anywhere
        for attribute in _UNAUDITED_WRITERS:
            if module is not None and hasattr(module, attribute):
                setattr(module, attribute, _refuse(f"os.{attribute}"))
    imp = sys.modules.get("_imp")
    if imp is not None:
        for attribute in ("create_builtin", "create_dynamic"):
            if hasattr(imp, attribute):
                setattr(imp, attribute, _guarded_module_creation(getattr(imp, attribute)))


def lock_down(temp_dir: Path) -> None:
    """From now on the audit hook enforces the rules (irreversibly for this process)."""
    install_hook()
    _state["root"] = os.path.realpath(temp_dir)
    _state["jax_roots"] = _jax_roots()
    _state["active"] = True
