"""The trusted side: reads the hand-over, lowers it, applies every rule, runs and times the
modules; never imports candidate code.

A shared core and a folder per target, as JAX's own ``pallas/{mosaic,triton,mosaic_gpu}``:

- the core: :mod:`.jaxpr_reader` reads the tracer's jaxprs with an allow-listed unpickler;
  :mod:`.lowering` and :mod:`.exporting` make the modules from them; :mod:`.structure`
  analyses an exported StableHLO module (kernel custom calls, work outside them), read by
  :mod:`.mlir`, its ops priced by :mod:`.pricing` and its loops by :mod:`.loops`;
  :mod:`.kernel_work` counts the kernels' work and :mod:`.coverage` what their grids write;
  :mod:`.rules` decides on the modules; :mod:`.memory_rules` (on the trace) and
  :mod:`.budgets` (on the export, its kernel calls found by :mod:`.custom_calls`) hand each
  kernel to its target's memory rule; :mod:`.timing` holds the timers (raw samples: the parent
  computes the figures), :mod:`.fitting` what fits the chip and :mod:`.chip_verdict` the
  trials decided on it; :mod:`.runner` is the warm process that does all of it;
- :mod:`.tpu` (Mosaic): the VMEM budget of a kernel, from its trace (:mod:`.tpu.traced_vmem`)
  and from its Mosaic kernel in the export (:mod:`.tpu.mosaic_vmem`);
- :mod:`.gpu` (Triton, Mosaic GPU): Triton's rules on the trace (:mod:`.gpu.triton_rules`)
  and on the export (:mod:`.gpu.triton_budgets`), the grid race rule (:mod:`.gpu.race`) and
  Triton's own compiler (:mod:`.gpu.triton_compile`).

The target folders import the core, never each other. This package imports
:mod:`jaxbench.evaluator.common` of the evaluator and nothing of the sandbox or the parent;
the parent reaches it only through :mod:`jaxbench.evaluator.parent.judge_client`.
"""
