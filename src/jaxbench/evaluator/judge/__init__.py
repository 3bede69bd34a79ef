"""The trusted side: reads the hand-over, lowers it, applies every rule, runs and times the
modules; never imports candidate code.

:mod:`.jaxpr_reader` reads the tracer's jaxprs with an allow-listed unpickler;
:mod:`.lowering` and :mod:`.exporting` make the modules from them; :mod:`.structure`
analyses an exported StableHLO module (kernel custom calls, work outside them), read by
:mod:`.mlir`, its ops priced by :mod:`.pricing` and its loops by :mod:`.loops`; :mod:`.rules`,
:mod:`.budgets`, :mod:`.memory_rules`, :mod:`.triton_rules` and :mod:`.gpu_rules` decide on it;
:mod:`.compare` holds the float32 truth and the output check, :mod:`.timing` the timers;
:mod:`.runner` is the warm process that does all of it. This package imports
:mod:`jaxbench.evaluator.common` of the evaluator and nothing of the sandbox or the parent.
"""
