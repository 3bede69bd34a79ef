"""The judge's rules for TPU (Mosaic) kernels: the VMEM budget of each kernel, from its trace
at every size (:mod:`.traced_vmem`) and from the Mosaic kernel in the exported module
(:mod:`.mosaic_vmem`). Imports the judge's core, never :mod:`jaxbench.evaluator.judge.gpu`."""
