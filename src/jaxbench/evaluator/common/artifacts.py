"""IR capture (``--save-ir``): jaxpr, StableHLO, the kernels' own IR, XLA's analyses.

The kernel IR comes from cross-lowering: Mosaic MLIR for TPU kernels, Triton
IR for GPU kernels. Pallas serialises both to bytecode inside the custom call;
this module records their text on the way, by wrapping the two lowering
entry points for the duration of one lowering (harness code, restored after).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

FILES = {"jaxpr": "jaxpr.txt", "stablehlo": "stablehlo.mlir", "kernel_ir": "kernel_ir.mlir",
         "optimized_hlo": "optimized_hlo.txt"}


@contextlib.contextmanager
def capture_kernel_ir() -> Iterator[list[str]]:
    """Collects the textual Mosaic/Triton module of every kernel lowered inside."""
    captured: list[str] = []
    patches: list[tuple[Any, str, Callable[..., Any]]] = []

    with contextlib.suppress(ImportError):
        from jax._src import tpu_custom_call

        original_tpu = tpu_custom_call._lower_mosaic_module_to_asm

        def tpu_wrapper(module: Any, *args: Any, **kwargs: Any) -> Any:
            with contextlib.suppress(Exception):
                captured.append("// Mosaic TPU kernel\n" + str(module))
            return original_tpu(module, *args, **kwargs)

        patches.append((tpu_custom_call, "_lower_mosaic_module_to_asm", tpu_wrapper))
    with contextlib.suppress(ImportError):
        from jax._src.pallas.triton import lowering as triton_lowering

        original_triton = triton_lowering.lower_jaxpr_to_triton_module

        def triton_wrapper(*args: Any, **kwargs: Any) -> Any:
            result = original_triton(*args, **kwargs)
            with contextlib.suppress(Exception):
                captured.append("// Triton kernel\n" + str(result.module))
            return result

        patches.append((triton_lowering, "lower_jaxpr_to_triton_module", triton_wrapper))
    originals = [(mod, name, getattr(mod, name)) for mod, name, _ in patches]
    for mod, name, wrapper in patches:
        setattr(mod, name, wrapper)
    try:
        yield captured
    finally:
        for mod, name, original in originals:
            setattr(mod, name, original)


def _analysis(fn: Callable[[], Any]) -> dict[str, float] | str:
    try:
        value = fn()
    except Exception as exc:  # noqa: BLE001 - analyses are best effort per backend
        return f"unavailable: {type(exc).__name__}"
    if isinstance(value, list):  # older JAX returns one dict per device
        value = value[0] if value else None
    if hasattr(value, "__dict__") and not isinstance(value, dict):
        value = {k: v for k, v in vars(value).items() if isinstance(v, (int, float))}
    if isinstance(value, dict):
        return {k: float(v) for k, v in value.items() if isinstance(v, (int, float))}
    return str(value)


def compiled_artifacts(compiled: Any) -> dict[str, str | dict[str, float]]:
    """On a device: XLA's optimised HLO, cost and memory analyses of the compiled kernel."""
    return {
        "optimized_hlo": compiled.as_text() or "",
        "compiled_cost_analysis": _analysis(compiled.cost_analysis),
        "memory_analysis": _analysis(compiled.memory_analysis),
    }


def write_artifacts(data: dict[str, Any], directory: Path, extra: dict[str, object]) -> list[str]:
    """Writes one file per IR plus ``analysis.json``; returns the file names."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for key, name in FILES.items():
        if data.get(key):
            (directory / name).write_text(data[key])
            written.append(name)
    analysis = {k: v for k, v in data.items() if k not in FILES} | extra
    (directory / "analysis.json").write_text(json.dumps(analysis, indent=1, default=str))
    written.append("analysis.json")
    return written
