"""The trusted side: checks and runs exported modules; never imports candidate code.

:mod:`.structure` analyses an exported StableHLO module (kernel custom calls, work
outside them), read by :mod:`.mlir`, its ops priced by :mod:`.pricing` and its
loops by :mod:`.loops`; :mod:`.rules` decides on it; :mod:`.runner` is the warm process
that deserializes, checks, runs and times exports; :mod:`.client` is the
parent's handle on runners. Nothing here imports :mod:`jaxbench.evaluator.sandbox`.
"""
