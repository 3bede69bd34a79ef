"""The judge's rules for GPU kernels (Pallas' Triton and Mosaic GPU backends): Triton's rules on
the trace (:mod:`.triton_rules`) and on the Triton IR in the exported module
(:mod:`.triton_budgets`), the grid race rule decided by value (:mod:`.race`) and Triton's own
compiler run on this CPU (:mod:`.triton_compile`). Imports the judge's core, never
:mod:`jaxbench.evaluator.judge.tpu`."""
