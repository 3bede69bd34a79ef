"""What more than one side of the evaluator imports: the schema of everything that crosses a
process boundary (:mod:`~jaxbench.evaluator.common.schema`), the array files, the artifacts,
the hand-over's vocabulary and jaxpr walks, and one module of process helpers. It imports
nothing else of the evaluator (tests/test_architecture.py)."""
