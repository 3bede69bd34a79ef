"""The errors executors raise (a leaf module: the local and Ray executors and the package's
face share them without importing each other)."""


class ExecutorError(RuntimeError):
    """An executor that cannot run (Ray missing or unreachable, no node with the hardware)."""


class EvaluationLost(RuntimeError):
    """An evaluation that ended without a verdict for reasons outside the kernel (its Ray
    worker or node died on every attempt, or the run was stopped). Nothing is recorded as
    its verdict; a resumed run evaluates the kernel again."""
