"""The trusted side: reads the hand-over, lowers it, applies every rule, runs and times the
modules; never imports candidate code.

:mod:`.jaxpr_reader` reads the tracer's jaxprs with an allow-listed unpickler;
:mod:`.lowering` and :mod:`.exporting` make the modules from them; :mod:`.structure`
analyses an exported StableHLO module (kernel custom calls, work outside them), read by
:mod:`.mlir`, its ops priced by :mod:`.pricing` and its loops by :mod:`.loops`; :mod:`.rules`,
:mod:`.budgets`, :mod:`.memory_rules`, :mod:`.triton_rules` and :mod:`.gpu_rules` decide on it;
:mod:`.timing` holds the timers (raw samples: the parent computes the figures) and
:mod:`.fitting` what fits the chip (on a device, the float32 truth beside the trials; the
parent compares the outputs with it); :mod:`.runner` is the warm process that does all of
it. This package imports :mod:`jaxbench.evaluator.common` of the evaluator and nothing of
the sandbox or the parent.
"""
