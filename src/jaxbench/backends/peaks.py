"""Published peak figures (dense bf16 FLOP/s, HBM bytes/s) for the roofline fraction.

Figures are the vendors' datasheet numbers; the device kind string is the one
``jax.devices()[0].device_kind`` reports.
"""

from __future__ import annotations

# device-kind substring -> (peak bf16 FLOP/s dense, HBM bytes/s)
PEAKS: dict[str, tuple[float, float]] = {
    "H200": (989e12, 4.8e12),
    "H100": (989e12, 3.35e12),
    "A100": (312e12, 2.039e12),
    "TPU v6": (918e12, 1.64e12),
    "TPU v5 lite": (197e12, 0.819e12),
    "TPU v5e": (197e12, 0.819e12),
    "TPU v5p": (459e12, 2.765e12),
    "TPU v5": (459e12, 2.765e12),
    "TPU v4": (275e12, 1.2e12),
}


def peak_for(device_kind: str) -> tuple[float, float] | None:
    """(FLOP/s, bytes/s) for a device kind, longest matching name first; None if unknown."""
    for name in sorted(PEAKS, key=len, reverse=True):
        if name.lower() in device_kind.lower():
            return PEAKS[name]
    return None


def roofline_fraction(flops: float, nbytes: float, t_seconds: float, device_kind: str) -> float | None:
    """max(flops/peak_flops, bytes/peak_bw) / t: 1.0 means at the roofline."""
    peak = peak_for(device_kind)
    if peak is None or t_seconds <= 0:
        return None
    return max(flops / peak[0], nbytes / peak[1]) / t_seconds
