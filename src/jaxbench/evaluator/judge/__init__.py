"""The trusted side: checks and runs exported modules; never imports candidate code.

:mod:`.structure` reads an exported StableHLO module (kernel custom calls, work
outside them); :mod:`.rules` decides on it; :mod:`.runner` is the warm process
that deserializes, checks, runs and times exports; :mod:`.client` is the
parent's handle on runners. Nothing here imports :mod:`jaxbench.evaluator.sandbox`.
"""
