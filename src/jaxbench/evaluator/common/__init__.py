"""What more than one side of the evaluator imports: the array files, the artifacts, the
hand-over's vocabulary and jaxpr walks, one module of process helpers (with the exit status of
a sealed tracer), exceptions as messages quote them (:mod:`.errors`), where a mask's
elements lie (:mod:`.masks`), the device lease the parent and a chip's owner both hold
(:mod:`.lease`) and the timing medians' intervals (:mod:`.intervals`). It imports nothing
else of the evaluator (tests/test_architecture.py). The statuses, rule codes and the records
that cross a process boundary are not the evaluator's alone: they are :mod:`jaxbench.contract`."""
