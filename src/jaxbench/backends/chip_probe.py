"""The accelerator probe (backends/host.py ``probe``): run by path in a short-lived process of
its own, it asks JAX for the devices, prints one JSON line (the first accelerator's platform,
kind, count and memory, or the error JAX gave) and exits, releasing the chip. No other
process of a command asks JAX for an accelerator."""

import json
import sys

import jax

out = {"platform": "cpu", "device_kind": "", "count": 0, "memory_bytes": None}
try:
    devices = [d for d in jax.devices() if d.platform != "cpu"]
except RuntimeError as exc:
    print(json.dumps({"error": str(exc)[-600:]}))
    sys.exit(0)
if devices:
    d = devices[0]
    stats = {}
    try:
        stats = d.memory_stats() or {}
    except Exception:
        pass
    out.update(platform=d.platform, device_kind=d.device_kind, count=len(devices),
               memory_bytes=stats.get("bytes_limit"))
print(json.dumps(out))
