"""PallasBench: 45 float32 tasks in three levels (L1 single ops, L2 fused patterns, L3 blocks).

Task IDs are ``l<level>_<name>``, each task's folder named as its ID; the catalogue number
(the suite's order) is ``meta["number"]``.
Each task ships ``seed_tpu.py`` (the original TPU-style kernel: large blocks) and
``seed_gpu.py`` (the port to the Pallas Triton backend: power-of-two 2-D tiles of at most
2^20 elements, masked or padded edges, loops over K inside the kernel).
"""

from __future__ import annotations

from typing import Any

SUITE = "pallasbench"


def meta(number: int, level: int, family: str, repair: str | None = None, **extra: Any) -> dict:
    """The catalogue entry of a task: its number (orders the suite), level and family, and
    ``repair``: what this version changed from the published one, when it did."""
    out: dict[str, Any] = dict(number=number, level=level, family=family,
                               source="PallasBench", **extra)
    if repair:
        out["repair"] = repair
    return out
