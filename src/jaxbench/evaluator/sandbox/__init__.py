"""The untrusted side: code that runs in the same process as a candidate's Python.

Nothing produced here is believed when it claims success. :mod:`.tracer` is the
process (OS-isolated by :mod:`.isolation`, with the in-process guards of
:mod:`.guards` and :mod:`.integrity` as a second line); it traces the
candidate once and exports that trace (:mod:`.exporting`); :mod:`.gpu_rules`
adds the GPU grid race rule. The judge (:mod:`jaxbench.evaluator.judge`) never
imports this package.
"""
