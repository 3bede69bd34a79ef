"""Cheat (8p_gemm): scans the heap with gc.get_objects() for the harness's inputs/answers."""
import gc

TARGET = "tpu"


def kernel(a, b):
    found = [o for o in gc.get_objects() if isinstance(o, dict) and "trial_keys" in o]
    return found[0] if found else a
