"""The chips kernels are judged for: one table for the rules and for the identity a kernel sees.

Each entry is what JAX reports for the chip (``jax.devices()[0].device_kind`` and the device's
attributes) plus the on-chip memory limits the rules apply. The tracer answers a kernel's
questions about its hardware from here (:mod:`jaxbench.evaluator.sandbox.chip`), the memory
rules read the same limits (:mod:`jaxbench.evaluator.judge.tpu`,
:mod:`jaxbench.evaluator.judge.gpu`), so a kernel that tunes its tiles to the chip
and the rule that checks those tiles agree on which chip it is.

Sources (facts, not code):

- TPU device kinds, TensorCores per device and physical VMEM per TensorCore: JAX's own chip
  table, ``jax/_src/pallas/mosaic/tpu_info.py`` (``chip_version_from_device_kind``,
  ``_get_tpu_info_impl``; JAX 0.10.2). A v4 or v5p device is a megacore chip (two
  TensorCores, ``num_cores == 2``); v4 lite, v5e and v6e devices have one.
- The scoped VMEM default (XLA's ``--xla_tpu_scoped_vmem_limit_kib``, what a ``pallas_call``
  may allocate unless it sets ``vmem_limit_bytes``): 16 MiB before v6e, 32 MiB on v6e, as the
  compiler's own errors on real chips name it ("limit 16.00M" on v5e, "limit 32.00M" on v6e;
  docs/vmem-calibration.md lists the runs).
- GPU compute capability, SM count and the shared memory one thread block may opt into:
  NVIDIA's CUDA C++ Programming Guide (compute capability table: 227 KiB on 9.0, 163 KiB on
  8.0) and the H100/H200/A100 SXM datasheets (132 SMs on H100 SXM and H200, 108 on A100).
- GPU registers (64 K 32-bit registers per SM, at most 255 per thread, on 8.0 and 9.0) and
  features from the same guide's compute capability table and the PTX ISA: ``cp.async``
  (asynchronous global-to-shared copies) from 8.0; warpgroup MMA (``wgmma``), the tensor
  memory accelerator (``tma``) and thread-block clusters from 9.0. Pallas' Mosaic GPU backend
  emits ``wgmma`` and TMA copies (JAX's Mosaic GPU dialect targets sm_90a), so a Mosaic GPU
  kernel needs :data:`MOSAIC_GPU_FEATURES`.
- Peak FLOP/s and memory bandwidth for the roofline: :mod:`jaxbench.backends.peaks` (the
  vendors' datasheets), keyed by the same device kinds; every chip here has an entry there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

KiB, MiB = 1 << 10, 1 << 20


@dataclass(frozen=True)
class Chip:
    device_kind: str  # as the chip's JAX device reports it
    platform: str  # "tpu" or "gpu"
    num_cores: int = 1  # TensorCores per JAX device (TPU)
    scoped_vmem: int = 0  # bytes: the default scoped VMEM limit (TPU)
    physical_vmem: int = 0  # bytes: VMEM per TensorCore (TPU)
    compute_capability: str = ""  # "9.0" (GPU), as JAX's device reports it
    core_count: int = 0  # streaming multiprocessors (GPU)
    shared_bytes: int = 0  # shared memory one thread block may use (GPU)
    registers: int = 0  # 32-bit registers per SM (GPU)
    features: frozenset[str] = frozenset()  # instructions and units beyond the base set (GPU)


_AMPERE = frozenset({"cp.async"})
_HOPPER = _AMPERE | {"wgmma", "tma", "clusters"}
# What Pallas' Mosaic GPU backend emits, so what a chip needs to run one of its kernels.
MOSAIC_GPU_FEATURES = frozenset({"wgmma", "tma"})


CHIPS: dict[str, Chip] = {c.device_kind: c for c in (
    Chip("TPU v4", "tpu", num_cores=2, scoped_vmem=16 * MiB, physical_vmem=16 * MiB),
    Chip("TPU v4 lite", "tpu", scoped_vmem=16 * MiB, physical_vmem=16 * MiB),
    Chip("TPU v5 lite", "tpu", scoped_vmem=16 * MiB, physical_vmem=128 * MiB),
    Chip("TPU v5", "tpu", num_cores=2, scoped_vmem=16 * MiB, physical_vmem=64 * MiB),
    Chip("TPU v6 lite", "tpu", scoped_vmem=32 * MiB, physical_vmem=128 * MiB),
    Chip("NVIDIA H200", "gpu", compute_capability="9.0", core_count=132, shared_bytes=227 * KiB,
         registers=64 * KiB, features=_HOPPER),
    Chip("NVIDIA H100", "gpu", compute_capability="9.0", core_count=132, shared_bytes=227 * KiB,
         registers=64 * KiB, features=_HOPPER),
    Chip("NVIDIA A100", "gpu", compute_capability="8.0", core_count=108, shared_bytes=163 * KiB,
         registers=64 * KiB, features=_AMPERE),
)}
# The marketing names, as users write them, for the kinds the devices report.
ALIASES = {"TPU v5e": "TPU v5 lite", "TPU v5p": "TPU v5", "TPU v6e": "TPU v6 lite"}
DEFAULT_TPU = "TPU v6 lite"
DEFAULT_GPU = "NVIDIA H200"
# A suite defined for another chip than the defaults: PallasBench is defined for an A100.
SUITE_GPU = {"pallasbench": "NVIDIA A100"}
# The chips kernels are lowered for when none is attached: JAXBench's TPU v6e, and an H200
# (the parent names the real device in device mode; the tracer and the judge fall back to these).
CROSS_LOWERING_TPU = "TPU v6 lite"
CROSS_LOWERING_GPU = "NVIDIA H200"


def chip(device_kind: str) -> Chip | None:
    """The table's entry for a device kind: exact, an alias, or the longest table kind the
    reported one starts with ("NVIDIA A100-SXM4-80GB" is an A100), answering with the kind as
    given; None when unknown."""
    kind = ALIASES.get(device_kind, device_kind)
    if kind in CHIPS:
        return CHIPS[kind]
    for name in sorted(CHIPS, key=len, reverse=True):
        if kind.startswith(name + " ") or kind.startswith(name + "-"):
            return replace(CHIPS[name], device_kind=device_kind)
    return None


def chip_or_default(device_kind: str, platform: str) -> Chip:
    """The entry for ``device_kind``; for a kind the table does not know, the default chip of
    ``platform`` ("tpu", or "gpu"/"cuda") under that kind's name."""
    found = chip(device_kind)
    if found is not None:
        return found
    default = CHIPS[DEFAULT_TPU if platform == "tpu" else DEFAULT_GPU]
    return replace(default, device_kind=device_kind or default.device_kind)


# Over the scoped VMEM limit by at most this fraction of it, a kernel is warned about, not
# refused: the count the rules make matched the TPU compiler's own to the byte where both are
# known (a v5e run: 22.50 MiB counted, "size 22.50M" reported), but a float32 GEMM counted at
# 32.5 MiB ran on a v6e at its 32 MiB default, while a kernel the compiler itself sized at
# 33.56 MiB failed there (docs/vmem-calibration.md). Inside that margin the chip's answer is
# not known; beyond it, or beyond the physical VMEM, it is a refusal.
VMEM_UNCERTAIN_FRACTION = 1 / 32


def vmem_verdict(total: int, limit: int, physical: int) -> str:
    """"fits", "uncertain" (over ``limit`` by at most :data:`VMEM_UNCERTAIN_FRACTION` of it,
    within the physical VMEM) or "over"."""
    if total <= limit:
        return "fits"
    if total <= min(limit + int(limit * VMEM_UNCERTAIN_FRACTION), physical):
        return "uncertain"
    return "over"


def default_chip(suite: str, target: str) -> str:
    """The chip a task of ``suite`` is judged for on ``target`` ("tpu"/"gpu") when none is
    chosen (and no device is attached)."""
    return DEFAULT_TPU if target == "tpu" else SUITE_GPU.get(suite, DEFAULT_GPU)


def resolve_chip(name: str, target: str) -> Chip:
    """The table's chip for a user's ``--chip`` (a device kind, an alias, or its distinctive
    word: "A100", "H200", "v6e"); ValueError naming the choices when it is not one for
    ``target``."""
    wanted = name.strip()
    found = chip(wanted)
    if found is None:
        matches = [c for c in CHIPS.values() if wanted.lower() in c.device_kind.lower().split()
                   or any(wanted.lower() == a.split()[-1].lower() for a, k in ALIASES.items()
                          if k == c.device_kind)]
        found = matches[0] if len(matches) == 1 else None
    platform = "tpu" if target == "tpu" else "gpu"
    if found is None or found.platform != platform:
        choices = ", ".join(c.device_kind for c in CHIPS.values() if c.platform == platform)
        raise ValueError(f"unknown {target.upper()} chip {name!r}; choose one of: {choices}")
    return found


def capability(chip_entry: Chip) -> int:
    """A GPU's compute capability as Triton's targets number it ("8.0" -> 80)."""
    major, _, minor = chip_entry.compute_capability.partition(".")
    return int(major) * 10 + int(minor or 0)
