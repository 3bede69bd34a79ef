"""The accelerator probe (backends/host.py ``probe``): what JAX in this process sees, as one JSON
line (the first accelerator's platform, kind, count and memory, or the error JAX gave).

Run by path, it is a short-lived process of its own that prints the line and exits, releasing
the chip. A device owner started as the probe (``python -m jaxbench.evaluator.judge.runner
--probe``, :mod:`jaxbench.evaluator.parent.first_owner`) calls :func:`seen` itself, says the
line and keeps the chip it opened. No other process of a command asks JAX for the
accelerator."""

import json
import sys
from typing import Any


def seen() -> dict[str, Any]:
    """What this process's JAX sees: ``platform`` ("cpu" when there is no accelerator),
    ``device_kind``, ``count`` and ``memory_bytes``; or ``{"error": ...}``. Opens the chip."""
    import jax

    out: dict[str, Any] = {"platform": "cpu", "device_kind": "", "count": 0,
                           "memory_bytes": None}
    try:
        devices = [d for d in jax.devices() if d.platform != "cpu"]
    except RuntimeError as exc:
        return {"error": str(exc)[-600:]}
    if devices:
        d = devices[0]
        stats = {}
        try:
            stats = d.memory_stats() or {}
        except Exception:
            pass
        out.update(platform=d.platform, device_kind=d.device_kind, count=len(devices),
                   memory_bytes=stats.get("bytes_limit"))
    return out


if __name__ == "__main__":
    print(json.dumps(seen()))
    sys.exit(0)
