"""One evaluation's case: the task, the :class:`~jaxbench.contract.Settings` it
was asked with, and what the parent resolved from them (the target, the mode, the chip it is
judged for, the limits). Shared by the evaluation's phases
(:mod:`jaxbench.evaluator.parent.evaluation`) and the readers of what the untrusted side left
(:mod:`jaxbench.evaluator.parent.untrusted`).

:func:`resolve_case` is the one resolver of settings: the evaluator resolves every evaluation
with it, and the front doors (``jaxbench eval``, ``jaxbench serve``'s admission) call it with
``front_door=True`` to refuse what they are given before anything runs, with the same words."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from jaxbench.backends import device_kind, resolve_mode
from jaxbench.backends.chips import chip_or_default, default_chip, resolve_chip
from jaxbench.contract import TARGETS, Mode, Settings, Target
from jaxbench.evaluator.parent.static import target_declaration
from jaxbench.evaluator.parent.timeouts import default_timeout


@dataclasses.dataclass(frozen=True)
class Case:
    """One evaluation's settings, resolved."""

    task: Any
    settings: Settings
    target: Target
    mode: Mode
    chip: str  # the device kind it is judged for (jaxbench.backends.chips)
    timeout_s: float
    memory_bytes: int
    assumed_target: bool = False  # the kernel declares no TARGET and none was asked for

    @property
    def size(self) -> str:
        return self.settings.size

    @property
    def trials(self) -> int:
        return self.settings.trials

    @property
    def tpu_interpret(self) -> bool:
        return self.settings.tpu_interpret

    @property
    def max_outside_fraction(self) -> float:
        return self.settings.max_outside_flops_fraction

    @property
    def timing(self) -> dict[str, Any]:
        return self.settings.timing_options()

    @property
    def save_ir(self) -> str | None:
        return self.settings.save_ir

    @property
    def debug(self) -> bool:
        return self.settings.debug


def resolve_case(task: Any, settings: Settings, source: str, *, front_door: bool = False,
                 mode_of: Callable[[str, str], str] | None = None) -> Case:
    """The case for ``task`` asked with ``settings`` for ``source``: its target (asked, else
    the kernel's ``TARGET``, else tpu), mode, the chip it is judged for and its limits. A bad
    setting is a ValueError (an unknown size a KeyError naming the sizes; ``--mode device``
    without the hardware a RuntimeError), before anything runs.

    ``front_door``: also refuse a ``TARGET`` that names no platform and an asked target that
    contradicts it (a caller's input; inside an evaluation they are the kernel's fault, and its
    verdict says so). ``mode_of``: where the evaluation resolves its mode elsewhere (a Ray
    cluster), that resolution; the chip is then the one asked for, not this host's."""
    if settings.trials < 1:
        raise ValueError("trials must be at least 1")
    declared, problem = target_declaration(source)
    if front_door and problem:
        raise ValueError(problem)
    if front_door and settings.target and declared and settings.target != declared:
        raise ValueError(f'target {settings.target} contradicts the kernel\'s TARGET = '
                         f'"{declared}": drop the target (the kernel\'s TARGET is used) or '
                         "change TARGET")
    target = settings.target or declared or Target.TPU
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; use tpu or gpu")
    target = Target(target)
    task.dims(settings.size)  # unknown size -> KeyError with the sizes listed
    if settings.debug and settings.mode == "device":
        raise ValueError("--debug runs the kernel in interpret mode on the CPU; drop "
                         "--mode device")
    mode = Mode.INTERPRET if settings.debug else Mode((mode_of or resolve_mode)(settings.mode,
                                                                                 target))
    here = mode if mode_of is None else Mode.INTERPRET  # no chip of this host's to ask for
    return Case(task=task, settings=settings, target=target, mode=mode,
                chip=judged_chip(task.suite, target, here, settings.chip),
                timeout_s=settings.timeout_s or default_timeout(task.id, mode),
                memory_bytes=int(settings.memory_gb * 2**30),
                assumed_target=settings.target is None and declared is None)


def job_chip(case: Case, target: str) -> str:
    """The chip a target is lowered and budgeted for: the case's for its own target."""
    if case.target == target:
        return case.chip
    return default_chip(case.task.suite, target)


def judged_chip(suite: str, target: str, mode: str, asked: str | None) -> str:
    """The device kind a kernel is judged for: in device mode the attached chip (a ``chip``
    asked for must be that one), else the one asked for, else the suite's default."""
    wanted = resolve_chip(asked, target).device_kind if asked else None
    if mode == "device":
        attached = device_kind()
        known = chip_or_default(attached, target)
        if wanted and known.device_kind != wanted and not attached.startswith(wanted):
            raise ValueError(f"--chip {asked} but the attached {target.upper()} is {attached}: "
                             "drop --chip, or judge for that chip in interpret mode (--mode "
                             "interpret)")
        return attached
    return wanted or default_chip(suite, target)
