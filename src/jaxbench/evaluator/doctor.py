"""What this machine offers the evaluator (``jaxbench doctor``, the first command on a new host).

It reports the Python/JAX/jaxlib versions, JAX's backends and devices, which Pallas
backends import, the isolation level the untrusted side reaches here (measured in a fresh
process, as the tracer does it), the attached chip's peak figures, whether tiny kernels
cross-lower for TPU (Mosaic), GPU (Triton) and GPU (Mosaic GPU) from this host, and whether
the profiler gives device times (what `timing_method: device_trace` needs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, NotRequired, TypedDict

_ISOLATION_PROBE = (
    "import json\n"
    "from jaxbench.evaluator.sandbox import isolation as i, seal as s\n"
    "full = s.profile_allows('landlock')\n"
    "ns = i.enter_namespaces() if full else []\n"
    "r = i.restrict(i.python_read_roots(), ['/tmp'], landlock=full)\n"
    "print(json.dumps(i.describe(r, ns)))\n")


class Peaks(TypedDict):
    """The attached chip's published peaks (None where none are known, with a note why)."""

    device_kind: str
    peak_bf16_flops: float | None
    peak_bytes_per_s: float | None
    note: NotRequired[str]


class Diagnosis(TypedDict):
    """What ``jaxbench doctor`` reports (:func:`diagnose`), one key per finding."""

    versions: dict[str, str]
    backends: dict[str, list[str] | str]
    pallas_backends: dict[str, str]
    isolation: str
    seal: str
    host_limits: dict[str, str]
    peaks: Peaks
    cross_lowering: dict[str, str]
    triton_compiler: str
    profiler: str
    compile_cache: str  # the judge's compile cache of the task's programs: where, or why none
    held_chip: str  # a chip's owner kept between commands by `jaxbench hold`, or where it would be


def versions() -> dict[str, str]:
    import platform

    import jax
    import jaxlib

    return {"python": sys.version.split()[0], "jax": jax.__version__, "jaxlib": jaxlib.__version__,
            "machine": platform.machine(), "system": platform.platform()}


def backends() -> dict[str, list[str] | str]:
    """This process's devices (the CPU only: a chip has one owner) and the accelerator the
    short-lived probe found (:func:`jaxbench.backends.host.attached`), or why there is none."""
    import jax

    from jaxbench.backends.host import accelerator_installed, attached

    found: dict[str, list[str] | str] = {
        "this process": [f"{d.platform}:{d.id} {d.device_kind}" for d in jax.devices("cpu")]}
    if not accelerator_installed():
        found["accelerator"] = "none (no TPU or GPU plugin installed, or JAX_PLATFORMS=cpu)"
        return found
    held = held_chip_status()
    if held is not None:  # its owner holds the chip: a probe of our own would be refused
        said = held.get("probe", {})
        found["accelerator"] = (f"{said.get('count')} x {said.get('device_kind')} "
                                f"({said.get('platform')}); held by `jaxbench hold` (pid "
                                f"{held.get('pid')}), whose owner the commands use")
        return found
    try:
        chip = attached()
    except RuntimeError as exc:
        found["accelerator"] = f"unavailable ({str(exc)[:200]})"
        return found
    if chip is None:
        found["accelerator"] = "none (the probe found only the CPU)"
    else:
        memory = f", {chip.memory_bytes / 2**30:.2f} GiB each" if chip.memory_bytes else ""
        found["accelerator"] = (f"{chip.count} x {chip.device_kind} ({chip.platform}{memory}); "
                                "opened only by the device owner, one process per chip")
    return found


def host_limits(isolation: str) -> dict[str, str]:
    """What this host withholds from the sandbox, and what each gap means for trust (the
    verdict's own guarantees, which rest on the trusted side, hold on every host)."""
    import socket

    limits: dict[str, str] = {}
    if "no Landlock" in isolation:
        limits["landlock"] = ("missing: the seal (seccomp) alone keeps the tracer from the "
                              "host's files, sockets and processes (see seal); without it "
                              "too, nothing would, and run, optimize and serve refuse to start")
    try:
        with open(f"/proc/{os.getpid()}/status") as fh:
            fh.read(1)
    except OSError:
        limits["proc"] = ("unreadable: the parent cannot confirm from outside what the tracer "
                          "claims about its own restrictions (no_new_privs); the tracer's "
                          "word is never believed for a success, so this only hides a gap")
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.close()
    except OSError as exc:
        limits["sockets"] = (f"refused ({exc.strerror or exc}): the tracer has no network on "
                             "such a host by construction; `serve` over TCP, Ray and the "
                             "providers' HTTP APIs do not run here (Unix sockets do)")
    return limits or {"all": "none missing"}


# What each layer of the seal stops (`jaxbench doctor`'s seal line).
_SEAL_STOPS = {
    "seccomp": "seccomp (every tracer, on every thread: no file opened, created, renamed, "
               "linked or executed, no new socket or connection, no other process traced, "
               "read or signalled through pidfds, no io_uring, mounts or namespaces)",
    "landlock": "Landlock (reads limited to the Python installation, writes to the private "
                "directory, no TCP, no signals or abstract sockets outside)",
}


def host_seals() -> tuple[list[str], list[str]]:
    """(the kernel-enforced layers this host gives the tracers, why each other one is missing):
    ``seccomp`` (:func:`probe`) and ``landlock`` (its ABI), as the host profile allows. Either
    one keeps a kernel from reading the host's files; with neither, verdicts can be forged."""
    from jaxbench.evaluator.sandbox.isolation import landlock_abi
    from jaxbench.evaluator.sandbox.seal import host_profile, probe, profile_allows

    profile = host_profile()
    layers, missing = [], []
    record = probe()
    if record.get("seccomp"):
        layers.append("seccomp")
    else:
        missing.append(f"seccomp ({record.get('error', 'not installed')})")
    abi, why = landlock_abi() if profile_allows("landlock") else (0, f"host profile {profile!r}")
    if abi > 0:
        layers.append("landlock")
    else:
        missing.append(f"Landlock ({why})")
    return layers, missing


class Unsealed(RuntimeError):
    """This host cannot seal the processes that run candidate code."""


def require_seal(allow_unsealed: bool) -> list[str]:
    """The layers that will seal the tracers; :class:`Unsealed` (one line: what is missing and
    what to do) when there are none, unless ``allow_unsealed``."""
    layers, missing = host_seals()
    if not layers and not allow_unsealed:
        raise Unsealed(f"this host cannot seal the processes that run kernels (no "
                       f"{'; no '.join(missing)}): a kernel could read the host's files and "
                       "forge its verdict; run on a Linux host that allows seccomp, or pass "
                       "--unsealed to run anyway (every result then records sealed: none)")
    return layers


def seal_text() -> str:
    """Which kernel-enforced layers seal the tracers here, what each stops, and which are
    missing (``jaxbench doctor``; results record the ones that held as ``sealed``)."""
    try:
        layers, missing = host_seals()
    except ValueError as exc:  # a host profile that does not exist
        return f"unknown ({exc})"
    held = " + ".join(_SEAL_STOPS[layer] for layer in layers) or (
        "NONE: kernels could read the host's files and forge verdicts; run, optimize and "
        "serve refuse to start here without --unsealed")
    return held + (f"; missing: {', '.join(missing)}" if missing else "")


def isolation_level(timeout_s: float = 60.0) -> str:
    """What the untrusted side gets here: a fresh process enters namespaces and restricts
    itself the way the tracer does, and describes the result (the string results record as
    ``isolation``)."""
    env = {"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1", "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
           **{k: v for k, v in os.environ.items() if k == "JAXBENCH_HOST_PROFILE"}}
    try:
        out = subprocess.run([sys.executable, "-c", _ISOLATION_PROBE], capture_output=True,
                             text=True, env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"unknown (the probe took more than {timeout_s:g} s)"
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return f"unknown (probe failed: {(out.stderr.strip().splitlines() or ['?'])[-1][:200]})"
    return str(json.loads(lines[-1]))


def peaks() -> Peaks:
    from jaxbench.backends import device_kind
    from jaxbench.backends.peaks import peak_for

    kind = device_kind()
    peak = peak_for(kind)
    if peak is None:
        return {"device_kind": kind, "peak_bf16_flops": None, "peak_bytes_per_s": None,
                "note": "no published figures for this device (roofline fraction not computed)"}
    return {"device_kind": kind, "peak_bf16_flops": peak[0], "peak_bytes_per_s": peak[1]}


def _copy_kernel(backend: str) -> Any:
    """A one-block copy kernel for ``backend``; built only from trusted code here."""
    import jax
    from jax.experimental import pallas as pl

    params: Any = None
    if backend == "triton":
        from jax.experimental.pallas import triton as pltriton

        params = pltriton.CompilerParams(num_warps=4)
    elif backend == "mosaic_gpu":
        from jax.experimental.pallas import mosaic_gpu as plgpu

        params = plgpu.CompilerParams()

    def body(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1.0

    if backend == "mosaic_gpu_kernel":  # plgpu.kernel: two blocks, each copies through SMEM
        from jax.experimental.pallas import mosaic_gpu as plgpu

        def block(x_gmem, o_gmem, smem, barrier):
            rows = pl.ds(jax.lax.axis_index("blocks") * 8, 8)
            plgpu.copy_gmem_to_smem(x_gmem.at[rows], smem, barrier)
            plgpu.barrier_wait(barrier)
            smem[...] = smem[...] + 1.0
            plgpu.commit_smem()
            plgpu.copy_smem_to_gmem(smem, o_gmem.at[rows])
            plgpu.wait_smem_to_gmem(0)

        return lambda x: plgpu.kernel(
            block, out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
            scratch_types=[plgpu.SMEM((8, 128), x.dtype), plgpu.Barrier()],
            grid=(x.shape[0] // 8,), grid_names=("blocks",))(x)

    def kernel(x):
        return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(x.shape[0] // 8,),
                              in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                              out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
                              compiler_params=params)(x)
    return kernel


def cross_lowering() -> dict[str, str]:
    """For each (platform, backend): "ok (<kernel custom calls>)" when a tiny kernel exports
    under an abstract chip from this host, else the error."""
    import re

    import jax
    import jax.numpy as jnp

    from jaxbench import compat
    from jaxbench.evaluator.judge.exporting import CROSS_LOWERING_GPU, CROSS_LOWERING_TPU

    spec = [jax.ShapeDtypeStruct((16, 128), jnp.float32)]
    found = {}
    for label, platform, backend, chip in (
            ("tpu (Mosaic TPU)", "tpu", "mosaic_tpu", CROSS_LOWERING_TPU),
            ("cuda (Triton)", "cuda", "triton", CROSS_LOWERING_GPU),
            ("cuda (Mosaic GPU)", "cuda", "mosaic_gpu_kernel", CROSS_LOWERING_GPU),
            ("cuda (Mosaic GPU, pallas_call)", "cuda", "mosaic_gpu", CROSS_LOWERING_GPU)):
        if backend == "mosaic_gpu" and not compat.mosaic_gpu_pallas_call():
            found[label] = (f"unavailable: JAX {jax.__version__}'s pallas_call does not lower "
                            "Mosaic GPU params (JAX 0.10 does); the seed_mosaic_legacy kernels "
                            "are skipped (plgpu.kernel is the way)")
            continue
        try:
            with compat.abstract_device(platform, chip):
                exported = compat.export_fn(_copy_kernel(backend), spec, platform,
                                            ("__gpu$xla.gpu.triton",) if backend == "triton" else ())
            calls = sorted(set(re.findall(r"custom_call @([\w$.]+)", exported.mlir_module())))
            found[label] = f"ok ({', '.join(calls)})"
        except Exception as exc:  # noqa: BLE001 - report, do not stop
            found[label] = f"fails: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    return found


def triton_compiler(capability: int = 80) -> str:
    """Whether Triton's own compiler (the optional ``triton`` extra) can check GPU kernels here:
    a tiny Triton kernel, exported from this host, compiled for ``sm_<capability>``."""
    import jax
    import jax.numpy as jnp

    from jaxbench import compat
    from jaxbench.evaluator.judge.exporting import CROSS_LOWERING_GPU
    from jaxbench.evaluator.judge.gpu import triton_compile

    if not triton_compile.available():
        return ("not installed (optional: pip install -e '.[triton]' compiles GPU kernels for "
                "the judged chip on this CPU)")
    if not triton_compile.enabled():
        return "installed, off (JAXBENCH_TRITON_COMPILE=0)"
    spec = [jax.ShapeDtypeStruct((16, 128), jnp.float32)]
    with compat.abstract_device("cuda", CROSS_LOWERING_GPU):
        exported = compat.export_fn(_copy_kernel("triton"), spec, "cuda",
                                    ("__gpu$xla.gpu.triton",))
    try:
        report = triton_compile.compile_all(triton_compile.kernels_ttir(exported.mlir_module()),
                                            capability)
    except triton_compile.TritonUnusable as exc:
        return (f"unusable: {exc}; reinstall it (pip install -e '.[triton]') or set "
                "JAXBENCH_TRITON_COMPILE=0: GPU verdicts do not depend on it")
    except Exception as exc:  # noqa: BLE001 - report, do not stop
        return f"fails: {type(exc).__name__}: {str(exc)[:200]}"
    if report["not_checked"]:
        return (f"Triton {report['triton_version']} cannot parse the Triton IR of this jaxlib "
                f"(the dialects differ): kernels it cannot read are not checked by it")
    if report["problem"]:
        return f"fails: {report['problem'][:200]}"
    # the tiny kernel parses; kernels whose loads carry an eviction policy may not
    skew = triton_compile.skew(triton_compile.jaxlib_version(), report["triton_version"])
    if skew:
        return f"skew: {skew}; kernels it cannot read are not checked by it"
    return f"ok (Triton {report['triton_version']}, compiles for sm_{capability})"


def profiler_check() -> str:
    """Whether the profiler gives a device time for each of a few calls on the default device."""
    import jax
    import jax.numpy as jnp

    from jaxbench.evaluator.judge.timing import time_device

    fn = jax.jit(lambda x: x * 2 + 1)
    sets = [(jnp.ones((256, 256)),)]
    jax.block_until_ready(fn(*sets[0]))
    out = time_device(fn, fn, sets, reps=2)
    if "error" in out:
        return f"no device times: {out['error'][:200]}"
    return f"ok ({out['source']}, {out['events']} events for 4 calls)"


def diagnose() -> Diagnosis:
    from jaxbench import compat

    isolation = isolation_level()
    return {"versions": versions(), "backends": backends(),
            "pallas_backends": compat.pallas_backends_available(),
            "isolation": isolation, "seal": seal_text(),
            "host_limits": host_limits(isolation), "peaks": peaks(),
            "cross_lowering": cross_lowering(), "triton_compiler": triton_compiler(),
            "profiler": profiler_check(), "compile_cache": compile_cache(),
            "held_chip": held_chip()}


def held_chip_status() -> dict[str, Any] | None:
    """The status of a chip held by ``jaxbench hold`` (parent/held.py), or None; a socket that
    cannot be used is reported as None here and named by :func:`held_chip`."""
    from jaxbench.evaluator.parent import held

    try:
        return held.held_status()
    except (held.HoldError, OSError):
        return None


def held_chip() -> str:
    """Whether ``jaxbench hold`` keeps a chip's owner between commands, and its socket."""
    import time

    from jaxbench.evaluator.parent import held

    path = held.socket_path()
    try:
        found = held.held_status()
    except (held.HoldError, OSError) as exc:
        return f"unusable ({exc})"
    if found is None:
        return (f"none (`jaxbench hold` would keep the chip's owner between commands; its "
                f"socket: {path})")
    said = found.get("probe", {})
    return (f"{said.get('device_kind')} held by pid {found.get('pid')} for "
            f"{time.time() - float(found.get('since', time.time())):.0f} s, "
            f"{found.get('served')} requests served, released after {found.get('idle_s'):g} s "
            f"idle (socket {path})")


def compile_cache() -> str:
    """The trusted runner's compile cache of the task's own programs
    (:mod:`jaxbench.evaluator.judge.xla_cache`): its directory, or why there is none."""
    from jaxbench.evaluator.judge import xla_cache

    return xla_cache.describe()
