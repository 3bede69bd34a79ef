"""One evaluation's settings, shared by the parent (:mod:`jaxbench.evaluator.parent.evaluator`) and the
readers of what the untrusted side left (:mod:`jaxbench.evaluator.parent.untrusted`)."""

from __future__ import annotations

from typing import Any


class Case:
    """One evaluation's settings."""

    def __init__(self, task: Any, size: str, target: str, mode: str, trials: int, timeout_s: float,
                 memory_bytes: int, tpu_interpret: bool, max_outside_fraction: float,
                 timing: dict[str, Any], save_ir: Any, debug: bool = False,
                 chip: str = "") -> None:
        self.task, self.size, self.target, self.mode = task, size, target, mode
        self.trials, self.timeout_s, self.memory_bytes = trials, timeout_s, memory_bytes
        self.tpu_interpret, self.max_outside_fraction = tpu_interpret, max_outside_fraction
        self.timing, self.save_ir, self.debug = timing, save_ir, debug
        self.chip = chip  # the device kind it is judged for (jaxbench.backends.chips)
