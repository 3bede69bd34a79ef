"""The errors executors raise, below both executors (:mod:`jaxbench.executors` and
:mod:`jaxbench.ray_executor`), so neither imports the other to share them."""


class ExecutorError(RuntimeError):
    """An executor that cannot run (Ray missing or unreachable, no node with the hardware)."""


class EvaluationLost(RuntimeError):
    """An evaluation that ended without a verdict for reasons outside the kernel (its Ray
    worker or node died on every attempt, or the run was stopped). Nothing is recorded as
    its verdict; a resumed run evaluates the kernel again."""
