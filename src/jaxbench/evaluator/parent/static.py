"""Stage 1, ``static``: the candidate parses, defines ``kernel`` and breaks no policy rule.

The rules are an allow-list of imports plus a deny-list of names and
attributes that let code escape the kernel contract (process spawning, host
callbacks, reaching the harness or the reference, patching modules, frame and
heap inspection). They are a first line that gives clear messages: the verdict
rests on the trusted judge, and the OS isolation and runtime guards of the
untrusted side catch code that hides from this check when it acts.

Only what is dangerous is ``rejected``. Scaffolding that honest model-written
files carry (a ``benchmark()`` that imports ``time`` and ``json``, a helper class
whose methods use ``setattr``/``getattr`` on its own objects) passes; importing a
library kernels cannot use (``torch``, ``scipy``) is a ``compile_error`` that
says what may be imported.
"""

from __future__ import annotations

import ast
import functools
import re
import threading
from typing import Any

from jaxbench.contract import Rule, Stage, StageFailure, Status
from jaxbench.evaluator.common.jaxpr_format import ALLOWED_IMPORT_ROOTS, imported_modules

# Imports that reach the process, the OS, the interpreter's internals or the harness: gaming.
# Any other import outside the allow-list is just unavailable (compile_error).
DANGEROUS_IMPORT_ROOTS = frozenset({
    "os", "sys", "subprocess", "socket", "ctypes", "cffi", "gc", "inspect", "importlib",
    "threading", "_thread", "multiprocessing", "concurrent", "asyncio", "signal", "pickle",
    "marshal", "shelve", "shutil", "builtins", "jaxbench", "io", "pathlib", "tempfile", "resource",
    "mmap", "pty", "code", "codeop", "types", "weakref", "atexit", "faulthandler", "sysconfig",
    "site", "runpy", "pkgutil", "select", "selectors", "http", "urllib", "ftplib", "smtplib",
    "requests", "pdb", "trace", "tracemalloc", "posix", "_posixsubprocess",  # other meaning: module names
    "fcntl", "glob",
})
# jax.interpreters / jax.extend / jax.core: defining primitives and lowering rules (one
# operation that lowers differently per platform would make the module checked and the module
# run differ).
DENIED_MODULE_PREFIXES = ("jax._src", "jax.config", "jax.experimental.host_callback",
                          "jax.experimental.io_callback", "jax.interpreters", "jax.extend",
                          "jax.core")
DENIED_CALLS = frozenset({
    "eval", "exec", "compile", "__import__", "open", "globals", "locals", "vars",
    "breakpoint", "input", "memoryview",
})
# Attribute helpers: fine on the kernel's own objects, not on modules (patching, reaching
# internals by computed names).
ATTRIBUTE_HELPERS = ("getattr", "hasattr", "setattr", "delattr")
DENIED_ATTRIBUTES = frozenset({
    # host callbacks
    "pure_callback", "io_callback", "debug_callback", "callback", "host_callback",
    "print_callback", "debug",
    # escapes to the interpreter, frames and the heap
    "__subclasses__", "__globals__", "__builtins__", "__code__", "__closure__",
    "__import__", "__loader__", "__spec__", "__dict__", "__bases__", "__mro__",
    "__getattribute__", "__reduce__", "__reduce_ex__", "__self__", "__func__",
    "__setattr__", "__delattr__", "__getattr__", "__class__", "__base__", "__traceback__",
    "__init_subclass__", "__set_name__", "__wrapped__", "__defaults__", "__kwdefaults__",
    "f_globals", "f_locals", "f_back", "f_builtins", "f_code", "tb_frame", "tb_next", "gi_frame",
    "cr_frame", "ag_frame", "co_code", "_getframe", "get_objects", "get_referrers",
    "get_referents", "_current_frames",
    # reaching the process, the OS and JAX's internals through module attributes
    "_src", "sys", "os", "modules", "system", "popen", "fork", "forkpty", "execv", "execve",
    "spawnv", "posix_spawn", "environ", "ctypes", "ctypeslib", "subprocess", "socket",
    "builtins", "_posixsubprocess", "settrace", "setprofile", "addaudithook",
    # global configuration: precision, interpret forcing
    "config", "update", "default_matmul_precision",
    # own primitives and rules (lowering, interpreter, discharge)
    "Primitive", "register_lowering", "lowering_rules", "_lowerings", "def_impl",
    "def_abstract_eval", "def_effectful_abstract_eval", "register_discharge_rule",
    "interpreters", "extend",
})
# Denied on modules only (``jax.config.update``, ``jax.debug``): the same names are ordinary
# attributes of a kernel's own objects (``self.config``, ``options.update(...)``, ``self.debug``).
MODULE_ONLY_ATTRIBUTES = frozenset({"config", "update", "default_matmul_precision", "debug",
                                    "callback", "extend", "interpreters"})
DENIED_NAMES = frozenset({"__builtins__", "__loader__", "__spec__", "sys", "os", "builtins",
                          "__import__", "eval", "exec", "compile", "globals", "locals", "vars",
                          "breakpoint", "open", "memoryview"})
# Dunder attributes a kernel may use (protocols and names, no way out of the object model).
SAFE_DUNDERS = frozenset({
    "__name__", "__qualname__", "__doc__", "__module__", "__init__", "__call__", "__len__",
    "__getitem__", "__setitem__", "__iter__", "__next__", "__enter__", "__exit__",
    "__post_init__", "__hash__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
    "__repr__", "__str__", "__add__", "__sub__", "__mul__", "__matmul__", "__truediv__",
    "__neg__", "__version__", "__main__", "__all__", "__future__", "__annotations__",
})
# String constants that only serve to reach something denied by name (getattr tricks).
_GENERIC_WORDS = frozenset({"update", "config", "callback", "debug", "extend"})
DENIED_STRINGS = (DENIED_NAMES | DENIED_ATTRIBUTES | frozenset({
    "subprocess", "socket", "ctypes", "gc", "inspect", "importlib", "posix", "signal",
    "jaxbench", "multiprocessing", "threading", "_thread", "pickle", "marshal", "shutil",
})) - _GENERIC_WORDS
DENIED_STRING_PREFIXES = ("jax._src", "jaxbench.", "jax.config", "os.", "sys.")


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _denied_attribute(name: str) -> bool:
    return name in DENIED_ATTRIBUTES or (_is_dunder(name) and name not in SAFE_DUNDERS)


def _denied_string(value: str) -> bool:
    return (value in DENIED_STRINGS or value.startswith(DENIED_STRING_PREFIXES)
            or (_is_dunder(value) and value not in SAFE_DUNDERS)
            or any(_denied_attribute(part) for part in value.split(".")[1:] if part))


# A library's private tree re-exports JAX internals; only its Pallas kernel modules may be
# imported from there (Tokamax keeps its kernels private: ``tokamax._src.ops.<op>.pallas_*``,
# ``tokamax._src.ops.experimental.tpu.splash_attention``). Which modules those are is decided
# from the installed package's layout, never from a hand list: every module of a folder under
# the library's kernel tree that holds a Pallas kernel (a module importing
# ``jax.experimental.pallas``), and those folders themselves, except tests, benchmarks and any
# module that imports what kernels may not (decided from its text; nothing is imported).
# ``jax.experimental.pallas.ops`` (JAX's own kernels) is public and allowed as it is.
LIBRARY_KERNEL_TREES = {"tokamax": ("tokamax", "_src", "ops")}
# A library module that imports one of these (the process, the OS, the network, frames and the
# heap) is never a kernel module a kernel may import: its attributes would hand them over.
# (Library code may import ``types``, ``threading`` and the like for its own use: Tokamax's
# op modules do.)
ESCAPE_IMPORT_ROOTS = frozenset({
    "os", "sys", "subprocess", "socket", "ctypes", "cffi", "gc", "inspect", "importlib",
    "multiprocessing", "concurrent", "signal", "pickle", "marshal", "shelve", "shutil",
    "builtins", "jaxbench", "tempfile", "resource", "mmap", "pty", "code", "codeop", "runpy",
    "pkgutil", "site", "sysconfig", "http", "urllib", "ftplib", "smtplib", "requests", "posix",
    "_posixsubprocess", "fcntl", "pdb", "trace",  # other meaning: module names
})


def _imports_of(path: Any) -> set[str]:
    try:
        return imported_modules(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return set()


def root_of(name: str) -> str:
    return name.split(".")[0]


def library_kernel_modules(root: str) -> frozenset[str]:
    """The dotted names of the installed library ``root``'s kernel modules and their
    packages (see :data:`LIBRARY_KERNEL_TREES`); empty when it is not installed."""
    return _library_layout(root)[0]


def library_modules(root: str) -> frozenset[str]:
    """Every module and package of the installed library ``root``'s kernel tree."""
    return _library_layout(root)[1]


def reexported_module(module: str, name: str) -> str | None:
    """The module that kernel module ``module`` binds to ``name`` by an import of its own
    (``import types``, ``from tokamax._src import quantization``), or None: importing it
    from there is judged as importing it directly."""
    return _library_layout(root_of(module))[2].get(module, {}).get(name)


def _bound_by_imports(path: Any, package: str) -> dict[str, str]:
    """``name -> module`` for the names a module's top-level imports bind (from its text)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return {}
    bound: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{base}.{alias.name}"
    return bound


@functools.cache
def _library_layout(root: str) -> tuple[frozenset[str], frozenset[str], dict[str, dict[str, str]]]:
    import importlib.util
    from pathlib import Path

    tree = LIBRARY_KERNEL_TREES.get(root)
    try:
        spec = importlib.util.find_spec(root) if tree else None  # locates, runs nothing
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return frozenset(), frozenset(), {}
    base = Path(next(iter(spec.submodule_search_locations)))
    top = base.joinpath(*tree[1:])
    if not top.is_dir():
        return frozenset(), frozenset(), {}
    found: set[str] = set()
    every: set[str] = set()
    bound: dict[str, dict[str, str]] = {}
    for folder in sorted({p.parent for p in top.rglob("*.py")}):
        package = ".".join((root, *folder.relative_to(base).parts))
        every.add(package)
        every.update(f"{package}.{p.stem}" for p in folder.glob("*.py") if p.stem != "__init__")
        modules = [p for p in sorted(folder.glob("*.py"))
                   if "test" not in p.stem and p.stem not in ("bench", "conftest")]
        texts = {p: _imports_of(p) for p in modules}
        if not any(any(n == "jax.experimental.pallas" or n.startswith("jax.experimental.pallas.")
                       for n in names) for names in texts.values()):
            continue
        parts = package.split(".")
        found.update(".".join(parts[:i]) for i in range(len(tree) + 1, len(parts) + 1))
        for path, names in texts.items():
            if any(n.split(".")[0] in ESCAPE_IMPORT_ROOTS for n in names):
                continue
            name = package if path.stem == "__init__" else f"{package}.{path.stem}"
            found.add(name)
            bound[name] = _bound_by_imports(path, package)
    return frozenset(found), frozenset(every), bound


def _library_kernel_module(name: str) -> bool:
    return name in library_kernel_modules(name.split(".")[0])


def _refused_library_module(name: str) -> bool:
    """A private module of an allowed library that is not one of its kernel modules: refused
    by policy (``compile_error``), not evidence of gaming."""
    root = name.split(".")[0]
    return (root in ALLOWED_IMPORT_ROOTS and "._src" in name and root != "jax"
            and not _library_kernel_module(name))


def _allowed_module(name: str) -> bool:
    root = name.split(".")[0]
    if root not in ALLOWED_IMPORT_ROOTS:
        return False
    if "._src" in name and not _library_kernel_module(name):
        return False
    return not any(name == p or name.startswith(p + ".") for p in DENIED_MODULE_PREFIXES)


class _PolicyVisitor(ast.NodeVisitor):
    def __init__(self, debug: bool = False) -> None:
        self.violations: list[str] = []
        self.unavailable: list[str] = []
        self.private: list[str] = []  # private modules of an allowed library: policy
        self.module_aliases: set[str] = set()
        self.debug = debug
        self.allowed_nodes: set[int] = set()  # the `.debug` of `jax.debug.print`
        self.debug_prints: list[int] = []  # their lines (outside debug mode: a compile error)

    def allow_debug_print(self, tree: ast.AST) -> None:
        """``jax.debug.print(...)`` is no policy violation: in debug mode it passes (as does
        ``<module>.debug.print``), otherwise :func:`check_source` makes it a compile error.
        Every other use of ``.debug`` (``jax.debug.callback``, ``jax.debug.breakpoint``, and
        outside debug mode ``<alias>.debug.print``) stays denied."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "print" and isinstance(
                    node.value, ast.Attribute) and node.value.attr == "debug":
                plain = isinstance(node.value.value, ast.Name) and node.value.value.id == "jax"
                if self.debug or plain:
                    self.allowed_nodes.add(id(node.value))
                if plain:
                    self.debug_prints.append(node.lineno)

    def _deny(self, node: ast.AST, why: str) -> None:
        self.violations.append(f"line {getattr(node, 'lineno', '?')}: {why}")

    def _import(self, node: ast.AST, name: str, what: str) -> None:
        """An import outside the allow-list: gaming when it reaches the process or the
        harness, merely unavailable otherwise."""
        root = name.split(".")[0]
        if _refused_library_module(name):
            self.private.append(f"line {getattr(node, 'lineno', '?')}: {what} {name!r}")
        elif root in ALLOWED_IMPORT_ROOTS or root in DANGEROUS_IMPORT_ROOTS or not root:
            self._deny(node, f"{what} {name!r} is not allowed")
        else:
            self.unavailable.append(f"line {getattr(node, 'lineno', '?')}: {what} {name!r}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not _allowed_module(alias.name):
                self._import(node, alias.name, "import of")
            self.module_aliases.add((alias.asname or alias.name).split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        # `from pkg._src.ops.x import pallas_triton` names the kernel module itself.
        kernel_modules = all(_library_kernel_module(f"{module}.{a.name}") for a in node.names)
        if node.level:
            self._deny(node, f"import from {'.' * node.level + module!r} is not allowed")
        elif not (_allowed_module(module) or kernel_modules):
            self._import(node, module, "import from")
            for alias in node.names:
                self.module_aliases.add(alias.asname or alias.name)
            return
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if _denied_attribute(alias.name):
                self._deny(node, f"import of {full!r} is not allowed")
            elif _library_kernel_module(module) and reexported_module(module, alias.name):
                # a module the kernel module imported for itself: judged as imported directly
                target = reexported_module(module, alias.name) or ""
                if not (_allowed_module(target) or _library_kernel_module(target)):
                    self._import(node, target, f"import of {full!r}, which is")
            elif not _allowed_module(full) and not (_library_kernel_module(module)
                                                   and full not in library_modules(root_of(full))):
                # (a name a kernel module defines is no module: it comes with the module)
                self._import(node, full, "import of")
            self.module_aliases.add(alias.asname or alias.name)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in DENIED_CALLS:
            self._deny(node, f"call to {node.func.id}() is not allowed")
        if isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_HELPERS and node.args:
            self._attribute_helper(node, node.func.id)
        self.generic_visit(node)

    def _attribute_helper(self, node: ast.Call, helper: str) -> None:
        """``getattr(obj, name)`` & co.: a literal name must be permitted; on a module (or on
        anything but the kernel's own objects) the name must be a literal, and modules are
        never written."""
        obj = node.args[0]
        root = obj
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        on_module = not isinstance(root, ast.Name) or root.id in self.module_aliases
        attr = node.args[1] if len(node.args) > 1 else None
        literal = isinstance(attr, ast.Constant) and isinstance(attr.value, str)
        if literal and _denied_attribute(attr.value):  # type: ignore[union-attr]
            self._deny(node, f"{helper}() needs a literal, permitted attribute name")
        elif on_module and helper in ("setattr", "delattr"):
            self._deny(node, f"{helper}() on a module is not allowed (patching)")
        elif on_module and not literal:
            self._deny(node, f"{helper}() needs a literal, permitted attribute name")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and _denied_string(node.value):
            self._deny(node, f"the string {node.value!r} names something kernels may not reach")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        root = node.value
        while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
            root = root.func if isinstance(root, ast.Call) else root.value
        on_module = isinstance(root, ast.Name) and root.id in self.module_aliases
        if node.attr in MODULE_ONLY_ATTRIBUTES and not on_module:
            pass
        elif id(node) in self.allowed_nodes:
            pass
        elif _denied_attribute(node.attr):
            hint = (" (jax.debug.print is allowed by `jaxbench eval --debug`, whose verdict does not "
                    "count)") if node.attr == "debug" and not self.debug else ""
            self._deny(node, f"use of .{node.attr} is not allowed (host callbacks, "
                             f"introspection and global config are outside the kernel contract){hint}")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in DENIED_NAMES:
            self._deny(node, f"use of {node.id!r} is not allowed")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._skip_docstring(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._skip_docstring(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._skip_docstring(node)

    def visit_Module(self, node: ast.Module) -> None:
        self._skip_docstring(node)

    def _skip_docstring(self, node: ast.AST) -> None:
        body = getattr(node, "body", [])
        doc = body[0] if body and isinstance(body[0], ast.Expr) and isinstance(
            getattr(body[0], "value", None), ast.Constant) else None
        for child in ast.iter_child_nodes(node):
            if child is not doc:
                self.visit(child)

    def _check_store_target(self, target: ast.AST) -> None:
        # Assigning into an imported module (jax.numpy.dot = ..., time.time = ...) patches
        # code the harness shares with the candidate.
        root = target
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if isinstance(target, ast.Attribute) and isinstance(root, ast.Name) \
                and root.id in self.module_aliases:
            self._deny(target, f"assigning to an attribute of module {root.id!r} is not allowed")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_store_target(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_store_target(node.target)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self._deny(node, "global statements are not allowed")


_PARSE_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse``, one at a time in this process: CPython 3.11 keeps the AST constructor's
    recursion depth in state shared by threads, so two threads parsing at once can fail with
    "SystemError: AST constructor recursion depth mismatch" (CPython gh-106905; seen with
    Python 3.11.7 in this suite under pytest-xdist). An evaluation's threads parse candidates
    while the caller's thread may parse too (a traceback's caret anchors parse source lines);
    a parse that still meets it, from a thread outside this lock, is retried once: parsing
    is deterministic."""
    for attempt in range(2):
        try:
            with _PARSE_LOCK:
                return ast.parse(source, filename=filename)
        except SystemError as exc:
            if attempt or "recursion depth mismatch" not in str(exc):
                raise
    raise AssertionError("unreachable")


def check_source(source: str, filename: str = "<kernel>", debug: bool = False) -> None:
    """Raises :class:`StageFailure` when the source does not parse or breaks a policy rule.
    ``debug`` (``jaxbench eval --debug``, whose verdict never counts) also allows
    ``jax.debug.print``."""
    try:
        tree = parse(source, filename)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" if exc.lineno else "?"
        raise StageFailure(Status.COMPILE_ERROR, Stage.STATIC, f"SyntaxError at {where}: {exc.msg}",
                           rule=Rule.SYNTAX_ERROR) from None
    visitor = _PolicyVisitor(debug)
    visitor.allow_debug_print(tree)  # outside debug mode: recorded, a compile error below
    visitor.visit(tree)
    if visitor.violations:
        shown = "; ".join(visitor.violations[:3])
        more = f" (+{len(visitor.violations) - 3} more)" if len(visitor.violations) > 3 else ""
        raise StageFailure(Status.REJECTED, Stage.STATIC, f"policy violation: {shown}{more}",
                           rule=Rule.STATIC_POLICY)
    if visitor.debug_prints and not debug:
        # A leftover jax.debug.print is an honest mistake, not gaming: the kernel cannot be
        # judged with it (a host callback never runs in the trusted judge), so it does not
        # compile here. Every other use of jax.debug stays a policy violation above.
        lines = ", ".join(str(n) for n in visitor.debug_prints[:5])
        raise StageFailure(
            Status.COMPILE_ERROR, Stage.STATIC,
            f"jax.debug.print at line{'s' if len(visitor.debug_prints) > 1 else ''} {lines}: "
            "remove it to have the kernel judged (a host callback cannot run in the trusted "
            "judge); it is allowed by `jaxbench eval --debug`, which shows its output and whose "
            "verdict does not count", rule=Rule.DEBUG_PRINT)
    if visitor.private:
        raise StageFailure(
            Status.COMPILE_ERROR, Stage.STATIC,
            f"{'; '.join(visitor.private[:3])}: a private module of an allowed library that is "
            "not one of its Pallas kernel modules; kernels may import a library's kernel modules "
            "(for Tokamax, the folders of tokamax._src.ops that hold Pallas kernels) and its "
            "public API (docs/kernels.md, \"What a kernel may import\")",
            rule=Rule.PRIVATE_IMPORT)
    if visitor.unavailable:
        raise StageFailure(
            Status.COMPILE_ERROR, Stage.STATIC,
            f"{'; '.join(visitor.unavailable[:3])}: not available to kernels, which may import "
            f"only {', '.join(sorted(ALLOWED_IMPORT_ROOTS - {'__future__'}))}",
            rule=Rule.UNAVAILABLE_IMPORT)
    defines_kernel = any(
        (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "kernel")
        or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "kernel"
                                              for t in n.targets))
        for n in tree.body
    )
    if not defines_kernel:
        raise StageFailure(Status.COMPILE_ERROR, Stage.STATIC,
                           "the file defines no top-level `kernel(*inputs)` function",
                           rule=Rule.NO_KERNEL_FUNCTION)


# A module-level ``TARGET = "gpu"`` line, read from the text of a file that does not parse.
_TARGET_LINE = re.compile(r"""^TARGET\s*(?::\s*str\s*)?=\s*(["'])(tpu|gpu)\1\s*(?:#.*)?$""",
                          re.MULTILINE)


def target_declaration(source: str) -> tuple[str | None, str | None]:
    """(target, problem) from the module-level ``TARGET = "tpu"|"gpu"`` of a candidate:
    (None, None) when there is none, (None, "...") when it names something else."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):  # its syntax error is the verdict; its TARGET still says
        found = _TARGET_LINE.search(source)  # which platform (the result names it)
        return (found.group(2), None) if found else (None, None)
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            names, value = [node.target], node.value
        else:
            continue
        if not any(isinstance(t, ast.Name) and t.id == "TARGET" for t in names):
            continue
        if isinstance(value, ast.Constant) and value.value in ("tpu", "gpu"):
            return value.value, None
        shown = repr(value.value) if isinstance(value, ast.Constant) else ast.unparse(value)[:40]
        return None, f'TARGET = {shown} (line {node.lineno}) is not "tpu" or "gpu"'
    return None, None


def parses(source: str) -> bool:
    """Whether the source is valid Python (a file that is not gets no TARGET warning: its
    syntax error is the message)."""
    try:
        parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def declared_target(source: str) -> str | None:
    """The module-level ``TARGET = "tpu"|"gpu"`` of a candidate, if any."""
    return target_declaration(source)[0]


# Pallas modules that only one platform's lowering accepts.
_PLATFORM_MODULES = {
    "jax.experimental.pallas.tpu": "tpu",
    "jax.experimental.pallas.triton": "gpu",
    "jax.experimental.pallas.mosaic_gpu": "gpu",
    "jax.experimental.pallas.gpu": "gpu",
}


def kernel_platforms(source: str) -> dict[str, str]:
    """Platform-specific Pallas modules the source imports: {module: "tpu"|"gpu"}."""
    try:
        tree = parse(source)
    except SyntaxError:
        return {}
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            for module, platform in _PLATFORM_MODULES.items():
                if name == module or name.startswith(module + "."):
                    found[module] = platform
    return found


def wrong_target_hint(source: str, target: str) -> str:
    """One line explaining a lowering failure of a kernel written for the other platform
    ("" when the imports do not say so)."""
    platforms = kernel_platforms(source)
    if target == "gpu" and "jax.experimental.pallas.mosaic_gpu" in platforms:
        from jaxbench import compat

        if not compat.mosaic_gpu_pallas_call():
            import jax

            return (f"JAX {jax.__version__} lowers pl.pallas_call on a GPU only with Triton's "
                    "compiler params (jax.experimental.pallas.triton); Mosaic GPU params "
                    "lowered through pallas_call in JAX 0.10 only (from 0.11, Mosaic GPU "
                    "kernels are written with plgpu.kernel)")
    if not platforms or target in platforms.values():
        return ""
    module = sorted(platforms)[0]
    other = platforms[module]
    return (f"{MISMATCH_HINT}{other.upper()} kernel (it imports {module}) but was lowered for "
            f'{target}: set TARGET = "{other}" in the file (or pass --target {other})')


# How the hint for a kernel written for the other platform begins (the parent shows it alone).
MISMATCH_HINT = "this looks like a "


# Installed libraries whose modules the judge imports before reading a kernel's hand-over, when
# the kernel imports them (modules that define JAX primitives, such as jax.experimental.sparse).
LIBRARY_ROOTS = ("jax", "tokamax")


def preloaded(source: str) -> list[str]:
    """The modules under :data:`LIBRARY_ROOTS` that ``source`` imports (from its text only)."""
    names = imported_modules(source)
    return sorted(n for n in names if n.split(".")[0] in LIBRARY_ROOTS)[:64]
