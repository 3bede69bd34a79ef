"""Cheat (8p_gemm): gets a frame object from a caught exception's traceback (tb_frame, names
computed at run time), to walk f_back up to the worker's locals: the trial keys regenerate the
inputs, the task's reference gives the answers, and the report file handle is right there.
The audit hook refuses the frame read while candidate code is on the stack."""
import operator

TARGET = "tpu"


def kernel(a, b):
    get = operator.attrgetter
    try:
        raise ValueError("x")
    except ValueError as exc:
        tb = get("__trace" + "back__")(exc)
    frame = get("tb_" + "frame")(tb)
    while frame is not None:
        frame = get("f_" + "back")(frame)
    return a
