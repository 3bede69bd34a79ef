"""Triton's rules for a Pallas kernel, checked on its traced jaxpr without a GPU (untrusted side:
a finding can only add a failure).

A kernel for the Pallas Triton backend becomes one Triton program per grid point. Triton
refuses, or miscompiles, kernels that break these rules, and Pallas' cross-lowering on a CPU
only checks part of them (the operands of loads and stores are checked for power-of-two
sizes; intermediates and budgets are not). Each rule names the offending tensor, its shape and
the line of the kernel file that made it:

``power_of_two``
    Every tensor the kernel body computes (loads, intermediates, values stored) has a
    power-of-two number of elements (Triton's tensor-size trait).
``max_elements``
    ... and at most 2^20 = 1,048,576 elements (Triton's ``TRITON_MAX_TENSOR_NUMEL``).
``edge_mask``
    A block that does not divide its array (a 1013-long axis in blocks of 64) makes the last
    program address memory past the array's end: every read and write of that block must be
    masked (``plgpu.load(..., mask=...)`` / ``plgpu.store(..., mask=...)``, atomics with
    ``mask=``); a plain ``x_ref[...]`` access there is out of bounds on the chip (the
    interpreter pads and hides it). Refs are followed into every binder Triton's lowering
    accepts (jit, closed_call, custom_jvp_call, remat, scan, while, cond; it does not lower
    run_scoped).
``shared_memory``
    An estimate of the shared memory a program needs: Hopper's tensor-core instructions read
    both operands of a ``dot`` from shared memory, and inside a loop Triton's software
    pipeliner keeps ``num_stages`` copies of them (default 3). The largest such figure over
    the body's dots must fit the chip's per-block limit (227 KiB on Hopper). An estimate:
    Triton may need more (layout conversions, reductions, epilogues).

Kernels of the Mosaic GPU backend (``plgpu`` Mosaic compiler params) are not Triton programs
and are not checked here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import numpy as np

from jaxbench.backends.chips import chip_or_default
from jaxbench.contract import Finding, Rule
from jaxbench.evaluator.judge.blocks import block_dims

if TYPE_CHECKING:
    from jaxbench.contract.records import KernelFigures

MAX_NUMEL = 1 << 20
DEFAULT_NUM_STAGES = 3  # Pallas Triton's default when CompilerParams leaves num_stages unset

Locate = Callable[[Any], str]


class TritonFigures(TypedDict):
    """One Triton kernel's figures (:func:`check`): its largest tensor, its dots' shared memory
    (the estimate and the least Triton needs) and its pipeline stages; where the chip's limit
    lies between the two shared-memory figures, ``smem_uncertain`` with the limit and the
    place (Triton's compiler decides, else the parent warns)."""

    largest_tensor_elements: int
    dot_shared_bytes_estimate: int
    dot_shared_bytes_lower_bound: int
    num_stages: int
    smem_uncertain: NotRequired[bool]
    shared_limit_bytes: NotRequired[int]
    smem_where: NotRequired[str]


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str
    subject: str = ""  # the tensor, block or dot in question, in short
    where: str = ""    # "file:line" of the kernel code that made it

    def __str__(self) -> str:
        return f"Triton rule {self.rule}: {self.message}"

    @property
    def code(self) -> Rule:
        """The schema's rule code: a shared-memory overrun is a memory budget, the tensor and
        edge rules are Triton's."""
        return Rule.SMEM_BUDGET if self.rule == "shared_memory" else Rule.TRITON_RULE

    def finding(self) -> Finding:
        """This violation as its message reads (``str(self)``), with its rule code."""
        return Finding(str(self), self.code)


def is_triton(eqn: Any) -> bool:
    """Whether a ``pallas_call`` targets the Triton backend (its compiler params say so)."""
    params = eqn.params.get("compiler_params")
    if isinstance(params, dict):  # older JAX: {"triton": {...}}
        return "triton" in params
    return params is not None and "triton" in type(params).__module__


def location(source: str | None, filename: str) -> Locate:
    """``eqn -> "file:line: code"`` for equations the candidate file made ('' otherwise)."""
    from jaxbench import compat

    lines = (source or "").splitlines()

    def locate(eqn: Any) -> str:
        frame = compat.user_frame(eqn)
        if frame is None:
            return ""
        file_name, line = frame
        text = lines[line - 1].strip() if file_name == filename and 0 < line <= len(lines) else ""
        short = file_name.rsplit("/", 1)[-1]
        return f"{short}:{line}" + (f": {text[:100]}" if text else "")

    return locate


def _numel(shape: Any) -> int:
    return math.prod(int(d) for d in shape)


def _arrays(eqn: Any) -> Iterator[Any]:
    """Array values (not refs, not scalars) an equation produces."""
    for var in eqn.outvars:
        aval = getattr(var, "aval", None)
        shape = getattr(aval, "shape", None)
        if shape is None or type(aval).__name__ == "AbstractRef" or not shape:
            continue
        yield var, aval


def _sub_bindings(eqn: Any) -> list[tuple[Any, list[Any]]]:
    """(sub-jaxpr, the outer values bound to its inputs, position by position)."""
    from jaxbench import compat

    name, params, invars = eqn.primitive.name, eqn.params, list(eqn.invars)

    def jaxpr_of(x: Any) -> Any:
        return x.jaxpr if isinstance(x, compat.ClosedJaxpr) else x

    if name == "while":
        cn, bn = params["cond_nconsts"], params["body_nconsts"]
        carry = invars[cn + bn:]
        return [(jaxpr_of(params["cond_jaxpr"]), invars[:cn] + carry),
                (jaxpr_of(params["body_jaxpr"]), invars[cn:cn + bn] + carry)]
    if name == "cond":
        return [(jaxpr_of(b), invars[1:]) for b in params["branches"]]
    from jaxbench.evaluator.common.jaxprs import sub_jaxprs

    return [(sub, invars) for sub in sub_jaxprs(params) if len(sub.invars) == len(invars)]


def _walk(jaxpr: Any, aliases: dict[Any, int],
          depth: int = 0) -> Iterator[tuple[Any, dict[Any, int], int]]:
    """Every equation of a kernel body, nested ones included, with the map from the ref
    values visible there to the kernel's operand index and its loop depth."""
    for eqn in jaxpr.eqns:
        yield eqn, aliases, depth
        inner_depth = depth + (eqn.primitive.name in ("while", "scan"))
        for sub, bound in _sub_bindings(eqn):
            inner = {v: aliases[o] for v, o in zip(sub.invars, bound, strict=False)
                     if _hashable(o) and o in aliases}
            yield from _walk(sub, inner, inner_depth)


def _hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True





def _access(eqn: Any) -> tuple[Any, bool] | None:
    """(ref, masked) for a read or write of a ref; None for other equations."""
    name = eqn.primitive.name
    if name in ("get", "swap", "addupdate"):
        return eqn.invars[0], False
    if name in ("masked_load", "masked_swap", "load", "swap_masked", "atomic_rmw"):
        # args_tree: (ref, indexers, mask, other) for loads; (ref, indexers, value, mask)
        # for stores and for plgpu.atomic_add & co. (an unmasked atomic past the end writes
        # out of bounds as surely as a store)
        tree = eqn.params.get("args_tree")
        masked = True
        if tree is not None:
            try:
                parts = tree.unflatten(list(eqn.invars))
                mask = parts[2] if name in ("masked_load", "load") else parts[3]
                masked = mask is not None
            except Exception:  # noqa: BLE001 - an unfamiliar layout: assume masked
                masked = True
        return eqn.invars[0], masked
    return None


def check(eqn: Any, device_kind: str = "NVIDIA H200",
          locate: Locate | None = None) -> tuple[list[Violation], TritonFigures]:
    """Violations of Triton's rules by one Triton ``pallas_call``, and its figures."""
    locate = locate or (lambda _e: "")
    mapping = eqn.params["grid_mapping"]
    body = eqn.params["jaxpr"]
    blocks = list(mapping.block_mappings)
    operands = {}
    offset = len(body.invars) - len(blocks)  # scalar-prefetch operands come first, if any
    for i, var in enumerate(body.invars[offset:offset + len(blocks)]):
        operands[var] = i

    found: list[Violation] = []
    seen: set[str] = set()

    def add(rule: str, message: str, subject: str = "", where: str = "") -> None:
        if message not in seen:
            seen.add(message)
            found.append(Violation(rule, message, subject, where.split(": ", 1)[0]))

    # edge blocks that need masks
    ragged: dict[int, str] = {}
    for i, block in enumerate(blocks):
        dims, shape = block_dims(block), tuple(int(d) for d in block.array_aval.shape)
        for axis, (b, n) in enumerate(zip(dims, shape, strict=False)):
            if b > 0 and n % b:
                kind = "input" if i < mapping.num_inputs else "output"
                number = i if i < mapping.num_inputs else i - mapping.num_inputs
                ragged[i] = (f"{kind} {number}'s block {dims} does not divide its array "
                             f"{shape} (axis {axis}: {n} % {b} = {n % b})")
                break

    largest = (0, ())
    stages = getattr(eqn.params.get("compiler_params"), "num_stages", None) or DEFAULT_NUM_STAGES
    shared = dot_bytes = 0
    dot_stages, dot_at = 1, ""
    for inner, aliases, depth in _walk(body, operands):
        where = locate(inner)
        at = f" at {where}" if where else ""
        for _var, aval in _arrays(inner):
            numel = _numel(aval.shape)
            largest = max(largest, (numel, tuple(int(d) for d in aval.shape)))
            desc = f"{inner.primitive.name} -> {aval.str_short() if hasattr(aval, 'str_short') else aval}"
            if numel > MAX_NUMEL:
                add("max_elements", f"tensor {desc} has {numel:,} elements, over Triton's limit "
                                    f"of 2^20 = {MAX_NUMEL:,}{at}. Load smaller pieces and loop "
                                    "inside the kernel", f"{desc} ({numel:,} elements)", where)
            elif numel & (numel - 1):
                add("power_of_two", f"tensor {desc} has {numel:,} elements, not a power of two"
                                    f"{at}. Use power-of-two tiles; mask or pad the edges",
                    f"{desc} ({numel:,} elements)", where)
        access = _access(inner)
        if access is not None:
            ref, masked = access
            index = aliases.get(ref) if _hashable(ref) else None
            if index in ragged and not masked:
                add("edge_mask", f"{ragged[index]}, and the kernel accesses it without a mask"
                                 f"{at}: the last program reads or writes past the array's end "
                                 "on the chip. Mask the access (plgpu.load/plgpu.store with "
                                 "mask=) or pad the array to a multiple of the block",
                    ragged[index].split(" does not")[0] + " (ragged, unmasked)", where)
        if inner.primitive.name == "dot_general":
            nbytes = sum(_numel(v.aval.shape) * np.dtype(v.aval.dtype).itemsize
                         for v in inner.invars[:2])
            staged = int(stages) if depth else 1  # the pipeliner multi-buffers loads in loops
            if nbytes * staged > shared:
                shared, dot_bytes, dot_stages, dot_at = nbytes * staged, nbytes, staged, at
    # Shared memory one thread block may use (Hopper: 227 KiB of the SM's 228 KiB; A100: 163 KiB).
    limit = chip_or_default(device_kind, "gpu").shared_bytes
    least = shared_lower_bound(body, int(stages))
    figures: TritonFigures = {
        "largest_tensor_elements": largest[0], "dot_shared_bytes_estimate": shared,
        "dot_shared_bytes_lower_bound": least, "num_stages": int(stages)}
    if shared > limit and least > limit:  # over under every layout Triton can choose
        staging = f" x {dot_stages} pipeline stages" if dot_stages > 1 else ""
        add("shared_memory", f"the operands of a dot need an estimated {shared / 1024:.0f} KiB "
                             f"of shared memory ({dot_bytes / 1024:.0f} KiB{staging}), and at "
                             f"least {least / 1024:.0f} KiB whatever layout Triton chooses, over "
                             f"{device_kind}'s {limit // 1024} KiB{dot_at}. Use smaller tiles "
                             "(along K in particular) or fewer stages",
            f"dot operands ~{shared / 1024:.0f} KiB", dot_at.removeprefix(" at "))
    elif shared > limit:  # between the two: Triton's compiler decides; without it, a warning
        figures.update({"smem_uncertain": True, "shared_limit_bytes": limit,
                        "smem_where": dot_at.removeprefix(" at ")})
    return found, figures


# What Triton's NVIDIA backend needs in shared memory for a dot, whatever layouts it picks
# (measured with Triton 3.8 for sm_80 and sm_90 on the kernels of tests/test_shared_memory.py):
# the operands its software pipeliner multi-buffers, num_stages - 1 copies of every operand
# loaded inside a loop of two or more steps (196,608 bytes = 6 x 32 KiB for a 7-stage
# matmul on sm_80), and, outside loops, at least the smaller of a dot's two loaded operands (a
# dot of a (64, 512) by a (512, 256) bf16 panel: 256 KiB for sm_80, 576 KiB for sm_90, never
# less than the 64 KiB counted). An operand computed in the kernel (the probabilities of an
# attention) or carried into the loop from outside counts nothing: Triton can keep it in
# registers. The estimate above, every dot's operands times the stages, is the upper figure.
_THROUGH = ("convert_element_type", "transpose", "reshape", "squeeze", "copy", "copy_p",
            "reduce_precision")
_LOADS = ("get", "load", "masked_load")


def _loaded_bytes(var: Any, producers: dict[Any, Any]) -> int:
    """Bytes of the ref load ``var`` is (through casts, transposes, reshapes), at the loaded
    dtype; 0 when it is computed or comes from outside this jaxpr."""
    for _ in range(16):
        eqn = producers.get(var) if _hashable(var) else None
        if eqn is None:
            return 0
        if eqn.primitive.name in _LOADS:
            aval = eqn.outvars[0].aval
            return _numel(aval.shape) * np.dtype(aval.dtype).itemsize
        if eqn.primitive.name not in _THROUGH or not eqn.invars:
            return 0
        var = eqn.invars[0]
    return 0


def shared_lower_bound(body: Any, stages: int) -> int:
    """The least shared memory (bytes) Triton needs for the dots of a kernel body: see above."""
    best = 0

    def visit(jaxpr: Any, looped: bool) -> None:
        nonlocal best
        producers: dict[Any, Any] = {}
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "dot_general":
                sizes = [_loaded_bytes(v, producers) for v in eqn.invars[:2]]
                staged = sum(sizes) * (stages - 1) if looped and stages >= 2 else 0
                best = max(best, staged, min(sizes))
            for var in eqn.outvars:
                producers[var] = eqn
            loop = eqn.primitive.name == "scan" and int(eqn.params.get("length", 0) or 0) >= 2
            for sub, _bound in _sub_bindings(eqn):
                visit(sub, loop)

    visit(body if hasattr(body, "eqns") else body.jaxpr, False)
    return best


def check_trace(closed: Any, device_kind: str = "NVIDIA H200", locate: Locate | None = None,
                every_kernel: bool = False) -> list[tuple[int, Violation]]:
    """(pallas_call index, violation) for the Triton kernels of a trace; ``every_kernel``
    checks every ``pallas_call`` as if it were one (a TPU-style kernel ported as is)."""
    from jaxbench.evaluator.judge.exporting import scan

    out = []
    for index, eqn in enumerate(scan(closed).kernel_eqns):
        if eqn.primitive.name != "pallas_call" or not (every_kernel or is_triton(eqn)):
            continue
        found, _ = check(eqn, device_kind, locate)
        out += [(index, v) for v in found]
    return out


def gpu_blocks(eqn: Any, device_kind: str = "NVIDIA H200",
               locate: Any = None) -> tuple[str, KernelFigures]:
    """(problem or '', figures) for one GPU ``pallas_call``: Triton's rules
    (this module's :func:`check`) for Triton kernels; a problem is a
    :class:`~jaxbench.contract.Finding` with the first violation's code."""
    mapping = eqn.params["grid_mapping"]
    nbytes = sum(math.prod(block_dims(b)) * np.dtype(b.array_aval.dtype).itemsize
                 for b in mapping.block_mappings)
    figures: KernelFigures = {"block_bytes": nbytes}
    if not is_triton(eqn):
        return "", figures
    found, numbers = check(eqn, device_kind, locate)
    figures.update(numbers)
    if not found:
        return "", figures
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return Finding(f"{found[0]}{more}", found[0].code), figures


__all__ = ["MAX_NUMEL", "Violation", "check", "check_trace", "gpu_blocks", "is_triton", "location"]
