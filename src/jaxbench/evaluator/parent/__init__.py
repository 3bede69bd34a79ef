"""The parent: the process that calls the evaluator. It never runs candidate code and never
reads candidate objects. It holds the :class:`~jaxbench.evaluator.parent.evaluator.Evaluator`
(the pools, the trusted runners, the float32 truths, the device lease), walks each
evaluation's phases (:mod:`~jaxbench.evaluator.parent.evaluation`), each ending in a report
(``reports``) that ``assemble`` turns into the result, applies the static policy
(``static``), believes of the tracer only its failures (``untrusted``), talks to the trusted
runners (``judge_client``, asked through ``requests``), compares their outputs with the
float32 truth (``compare``), computes the timing figures from their samples (``figures``)
and derives the verdict (``verdict``, a pure function)."""
