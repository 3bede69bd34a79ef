"""The untrusted side: code that runs in the same process as a candidate's Python.

Nothing produced here is believed when it claims success. :mod:`.tracer` is the process
(OS-isolated by :mod:`.isolation`, with the in-process guards of :mod:`.guards` and
:mod:`.integrity` as a second line, the chip's answers from :mod:`.chip`); it traces the
candidate once per size and hands the jaxprs over as data (:mod:`.handover`). This package
imports only :mod:`jaxbench.evaluator.common` of the evaluator (and the shared
:mod:`jaxbench.contract`); the judge (:mod:`jaxbench.evaluator.judge`) and the parent never
import it.
"""
