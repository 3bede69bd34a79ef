"""Triton's own compiler on a CPU: the exported kernels compiled for a GPU that is not there.

Cross-lowering a Pallas Triton kernel stops at Triton IR (TTIR): jaxlib serializes it into
the ``__gpu$xla.gpu.triton`` custom call and XLA compiles it on the GPU host. The ``triton``
package (an optional extra, ``pip install -e '.[triton]'``) runs the rest of that pipeline
without a GPU: TTIR -> TTGIR -> LLVM IR -> PTX -> cubin, with ``ptxas`` (shipped with it) for
a chosen compute capability (sm_90 = Hopper by default). What it finds are the errors the GPU
host would report at compile time: unsupported ops or layouts, register or shared-memory
allocation failures; and it measures the shared memory a kernel needs, which is checked
against the chip's per-block limit (the launch would fail there).

Trusted side: the TTIR comes from the export the judge already checked (parsed here with
jaxlib's own Triton dialect, printed as text), and the compiler runs in a separate process
with a timeout (it only ever reads IR; nothing of the candidate's runs). Triton and jaxlib
each carry their own MLIR, so they never share a process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

TRITON_TARGET = "__gpu$xla.gpu.triton"
# Shared memory one block may use, by compute capability (opt-in maximum per block).
SHARED_LIMIT = {80: 163 * 1024, 86: 99 * 1024, 89: 99 * 1024, 90: 227 * 1024, 100: 227 * 1024}
DEFAULT_CAPABILITY = 90


class InvalidTritonIR(ValueError):
    """The Triton IR Pallas emitted fails the Triton dialect's own verifier (jaxlib's copy of
    it, the one XLA parses the IR with on the GPU host): the GPU compile would fail."""

    @property
    def rule(self) -> Any:
        """``Rule.TRITON_RULE`` (imported here: the compile worker runs this file as a script
        that imports nothing of jaxbench)."""
        from jaxbench.contract import Rule

        return Rule.TRITON_RULE


def _first_error(text: str) -> str:
    """The verifier's first error line, its location names dropped."""
    for line in text.splitlines():
        if "error:" in line:
            message = line.split("): ", 1)[-1] if "): " in line else line.split("error:", 1)[1]
            return message.strip()[:300]
    return text.strip().splitlines()[0][:300] if text.strip() else "invalid Triton IR"


def available() -> bool:
    """Whether the ``triton`` package is installed in this interpreter."""
    return importlib.util.find_spec("triton") is not None


def enabled() -> bool:
    """Whether GPU kernels are compiled by Triton on this CPU host: the ``triton`` package is
    installed and JAXBENCH_TRITON_COMPILE is not 0."""
    return os.environ.get("JAXBENCH_TRITON_COMPILE", "1") != "0" and available()


def _walk(op: Any, out: list[Any]) -> None:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.name == "stablehlo.custom_call":
                    out.append(inner.operation)
                _walk(inner.operation, out)


def kernels_ttir(module_text: str) -> list[dict[str, Any]]:
    """The Triton kernels of an exported StableHLO module: name, TTIR text, warps, stages."""
    from jaxbench import compat
    from jaxbench.evaluator.judge.mlir import parse_module

    ctx, module, ir = parse_module(module_text)
    found = []
    with ctx:
        calls: list[Any] = []
        _walk(module.operation, calls)
        for call in calls:
            target = ir.StringAttr(call.attributes["call_target_name"]).value
            if target != TRITON_TARGET or "mhlo.backend_config" not in call.attributes:
                continue
            config = ir.DictAttr(call.attributes["mhlo.backend_config"])
            data = ir.StringAttr(config["ir"]).value_bytes
            item = {"ir_bytes": data}
            for key in ("num_warps", "num_stages"):
                try:
                    item[key] = int(ir.IntegerAttr(config[key]).value)
                except (KeyError, ValueError):
                    pass
            found.append(item)
    with compat.triton_ir_context() as tt_ctx:
        for item in found:
            try:
                tt_module = ir.Module.parse(item.pop("ir_bytes"), context=tt_ctx)
            except ir.MLIRError as exc:
                text = str(exc)
                if "failed to verify" not in text and "op requires" not in text:
                    raise
                raise InvalidTritonIR(_first_error(text)) from None
            item["ttir"] = tt_module.operation.get_asm(enable_debug_info=False)
            item["name"] = next((str(ir.StringAttr(op.attributes["sym_name"]).value)
                                 for op in tt_module.body.operations
                                 if "sym_name" in op.attributes), "kernel")
    return found


class TritonUnusable(RuntimeError):
    """The installed ``triton`` package cannot be used at all here (it does not import): a
    fault of the environment, never of the kernel being checked."""


# What Triton says when it cannot read the IR it was given: jaxlib's Triton dialect and the
# installed package's differ (a version skew). The trusted runner has already verified that
# IR with jaxlib's own dialect, so this is a limit of the check, not the kernel's fault.
UNPARSABLE = "Parse MLIR file failed"


# The `triton` releases that read the Triton IR each jaxlib emits, measured on this project's
# kernels and JAX's own GPU ops (rms_norm, layer_norm, softmax; compiled for sm_80 and sm_90):
# jaxlib 0.10 and 0.11 write a load's eviction policy as `evictionPolicy = evict_last`, which
# Triton 3.4 to 3.8 read and 3.9 does not ("expected ':'"); jaxlib 0.12 writes it as a
# `{cachePolicy = #tt.cache_policy<...>}` attribute, which only 3.9 reads. Kernels without an
# eviction policy parse with all of them. (jaxlib first version, first after, triton range)
MATCHING_TRITON = (((0, 10), (0, 12), ">=3.4,<3.9"), ((0, 12), None, ">=3.9"))


def verified_kernels(exported: Any) -> list[dict[str, Any]] | str:
    """The Triton kernels of the module the runner runs (:func:`kernels_ttir` of the export),
    their IR verified by jaxlib's Triton dialect (invalid IR: ``compile_error``); the parent
    hands them to Triton's compiler. A string says why the IR could not be read."""
    from jaxbench.contract import Rule, Stage, StageFailure, Status
    from jaxbench.evaluator.common.errors import short_error

    try:
        return kernels_ttir(exported.mlir_module())
    except InvalidTritonIR as exc:
        raise StageFailure(Status.COMPILE_ERROR, Stage.LOWER,
                           f"the kernel's Triton IR fails verification (XLA would reject it on "
                           f"the GPU host): {exc}", rule=Rule.TRITON_RULE) from None
    except Exception as exc:  # noqa: BLE001 - e.g. a JAX version whose TTIR we cannot read
        return f"reading the Triton IR failed: {short_error(exc, 250)}"


def kernels_to_compile(target: Any, target_by_size: dict[str, Any], uncertain: set[Any],
                       size: str) -> list[dict[str, Any]] | str:
    """The Triton kernels of the ``target`` export at ``size``, and those of the exports at the
    other sizes (``target_by_size``) whose shared memory only Triton's compiler can decide
    (``uncertain``: the sizes of the ``smem_uncertain`` figures), named ``<kernel>@<size>``."""
    found = verified_kernels(target)
    for other in sorted(uncertain - {size}):
        more = verified_kernels(target_by_size[other]) if other in target_by_size else []
        if isinstance(found, list) and isinstance(more, list):
            seen = {k["ttir"] for k in found}
            found += [{**k, "name": f"{k['name']}@{other}", "size": other} for k in more
                      if k["ttir"] not in seen]
    return found


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def matching_triton(jaxlib_version: str) -> str | None:
    """The `triton` requirement (``">=3.4,<3.9"``) matching a jaxlib, None when not known."""
    version = _version(jaxlib_version)[:2]
    for first, after, wanted in MATCHING_TRITON:
        if version >= first and (after is None or version < after):
            return wanted
    return None


def skew(jaxlib_version: str, triton_version: str) -> str:
    """Why this `triton` will not read some of the IR this jaxlib emits, with the fix; '' when
    they match (or the pair is not known)."""
    wanted = matching_triton(jaxlib_version)
    if wanted is None:
        return ""
    have = _version(triton_version)
    for clause in wanted.split(","):
        bound = _version(clause.lstrip("<>="))
        ok = have >= bound if clause.startswith(">=") else have < bound
        if not ok:
            return (f"Triton {triton_version} does not read all the Triton IR jaxlib "
                    f"{jaxlib_version} emits (loads with an eviction policy); install "
                    f"'triton{wanted}' for it (pip install -e '.[triton]' picks it by Python "
                    "version: 3.11 has JAX 0.10, 3.12 and later get JAX 0.12)")
    return ""


def jaxlib_version() -> str:
    """The installed jaxlib's version (whose Triton dialect wrote the IR)."""
    from jaxlib import version

    return version.__version__


def compile_all(kernels: list[dict[str, Any]], capability: int = DEFAULT_CAPABILITY,
                timeout_s: float = 300.0) -> dict[str, Any]:
    """Compiles each kernel's TTIR for ``sm_<capability>`` in a separate process.

    Returns ``{"triton_version", "capability", "kernels": [{name, ok, error, shared_bytes,
    num_warps, num_stages}]}``; ``problem`` names the first failure of a kernel ('' if none; a
    :class:`~jaxbench.contract.Finding`: ``Rule.TRITON_COMPILE`` when Triton
    could not compile it, ``Rule.SMEM_BUDGET`` when it needs more shared memory than a block has),
    ``not_checked`` the kernels whose IR this Triton cannot parse (a skew, see UNPARSABLE).
    Raises :class:`TritonUnusable` when the package does not import.
    """
    with tempfile.TemporaryDirectory(prefix="jaxbench-triton-") as tmp:
        jobs = []
        for i, k in enumerate(kernels):
            path = Path(tmp) / f"k{i}.ttir"
            path.write_text(k["ttir"])
            jobs.append({"name": k.get("name", f"kernel{i}"), "path": str(path),
                         "num_warps": k.get("num_warps", 4), "num_stages": k.get("num_stages", 3)})
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp,
               "TRITON_CACHE_DIR": str(Path(tmp) / "cache"), "TRITON_DEFAULT_FP_FUSION": "1"}
        # This file as a script (-I: no user site, no cwd on the path): the worker imports
        # nothing of jaxbench or jaxlib, whose MLIR would clash with Triton's.
        proc = subprocess.run([sys.executable, "-I", __file__, str(capability)],
                              input=json.dumps(jobs), capture_output=True,
                              text=True, timeout=timeout_s, env=env, cwd=tmp)
    try:
        report = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (proc.stderr or proc.stdout)[-400:]
        raise RuntimeError(f"the Triton compiler process failed (exit {proc.returncode}): "
                           f"{tail}") from None
    if report.get("environment_error"):
        raise TritonUnusable(report["environment_error"])
    # (imported here: this file is also the compile worker's script, which imports no jaxbench)
    from jaxbench.contract import Finding, Rule

    limit = SHARED_LIMIT.get(capability, SHARED_LIMIT[DEFAULT_CAPABILITY])
    report["problem"] = ""
    report["not_checked"] = [k["name"] for k in report["kernels"]
                             if not k["ok"] and UNPARSABLE in (k["error"] or "")]
    # A crash inside Triton's own code (not its diagnosis of the IR) is not the kernel's
    # (jaxbench.evaluator.judge.tool_faults): that kernel is set aside as not checked by it.
    from jaxbench.evaluator.judge.tool_faults import classify_frames

    report["tool_faults"] = []
    for k in report["kernels"]:
        frame = k.get("frame")
        if k["ok"] or k["name"] in report["not_checked"] or not isinstance(frame, list) \
                or len(frame) != 4:
            continue
        fault = classify_frames(str(k.get("error_type")), str(k.get("message") or ""),
                                [(str(frame[0]), int(frame[1]), str(frame[2]), str(frame[3]))],
                                f"Triton's compiler for sm_{capability}",
                                f"Triton {report.get('triton_version')}")
        if fault is not None:
            report["tool_faults"].append({"name": k["name"], **fault.as_dict()})
    faulty = {f["name"] for f in report["tool_faults"]}
    for k in report["kernels"]:
        if k["name"] in report["not_checked"] or k["name"] in faulty:
            continue
        if not k["ok"]:
            report["problem"] = Finding(f"Triton {report['triton_version']} could not compile "
                                        f"kernel {k['name']} for sm_{capability}: {k['error']}",
                                        Rule.TRITON_COMPILE)
            break
        if k["shared_bytes"] > limit:
            report["problem"] = Finding(f"Triton {report['triton_version']} compiled kernel "
                                        f"{k['name']} for sm_{capability} needing "
                                        f"{k['shared_bytes']:,} bytes of shared memory, over the "
                                        f"block limit of {limit:,}: the launch would fail on the "
                                        "GPU. Use smaller tiles or fewer stages", Rule.SMEM_BUDGET)
            break
    return report


def _worker(capability: int) -> None:
    """Compile worker: JSON jobs on stdin, one JSON report line on stdout."""
    try:
        import triton
        from triton.backends.compiler import GPUTarget
    except Exception as exc:  # noqa: BLE001 - a broken install: the environment's fault
        print(json.dumps({"environment_error": f"triton does not import: "
                                               f"{type(exc).__name__}: {str(exc)[:300]}"}))
        return

    jobs = json.loads(sys.stdin.read())
    out = []
    for job in jobs:
        entry = {"name": job["name"], "num_warps": job["num_warps"],
                 "num_stages": job["num_stages"], "ok": False, "error": None, "shared_bytes": None}
        try:
            compiled = triton.compile(job["path"], target=GPUTarget("cuda", capability, 32),
                                      options={"num_warps": job["num_warps"],
                                               "num_stages": job["num_stages"]})
            entry.update(ok=True, shared_bytes=int(getattr(compiled.metadata, "shared", 0)))
        except Exception as exc:  # noqa: BLE001 - the compiler's message is the finding
            text = str(exc).strip().splitlines()
            entry["error"] = f"{type(exc).__name__}: {' '.join(text)[-600:]}"
            # where it arose (innermost frame, inside Triton's package or not), for the judge's
            # question whose fault it is
            frames = traceback.extract_tb(exc.__traceback__)
            if frames:
                last, root = frames[-1], os.path.dirname(os.path.realpath(triton.__file__))
                path = os.path.realpath(last.filename)
                inside = "triton/" + os.path.relpath(path, root) \
                    if path.startswith(root + os.sep) else ""
                entry.update(error_type=type(exc).__name__, message=str(exc)[:400],
                             frame=[inside, last.lineno or 0, last.name,
                                    (last.line or "").strip()[:200]])
        out.append(entry)
    print(json.dumps({"triton_version": triton.__version__, "capability": capability,
                      "kernels": out}))


if __name__ == "__main__":
    _worker(int(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CAPABILITY)
