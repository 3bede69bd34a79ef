"""`jaxbench eval --debug`: jax.debug.print allowed, the kernel's output shown, and the verdict
plainly marked as one that does not count (exit 1, never recorded in a run)."""

import json
import subprocess
import sys

import pytest

from jaxbench.contract import StageFailure
from jaxbench.evaluator.parent.static import check_source

DEBUG_PRINT = '''
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _body(x_ref, s_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    jax.debug.print("block {i}: mean square {m}", i=pl.program_id(0), m=ms[0, 0])
    y = (x * jax.lax.rsqrt(ms + 1e-5)).astype(o_ref.dtype).astype(jnp.float32)
    o_ref[...] = (y * s_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def kernel(x, scale):
    *lead, h = x.shape
    x2 = x.reshape(-1, h)
    return pl.pallas_call(
        _body, out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype), grid=(x2.shape[0] // 128,),
        in_specs=[pl.BlockSpec((128, h), lambda i: (i, 0)), pl.BlockSpec((1, h), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((128, h), lambda i: (i, 0)))(x2, scale.reshape(1, h)).reshape(x.shape)
'''


def test_static_policy_allows_only_debug_print_in_debug_mode():
    with pytest.raises(StageFailure, match="allowed by `jaxbench eval --debug`"):
        check_source(DEBUG_PRINT)
    check_source(DEBUG_PRINT, debug=True)
    for other in ("jax.debug.callback(print, 1)", "jax.debug.breakpoint()"):
        with pytest.raises(StageFailure, match=r"\.debug is not allowed"):
            check_source(f"import jax\ndef kernel(x):\n    {other}\n    return x\n", debug=True)


def test_debug_run_shows_the_prints_and_does_not_count(tmp_path):
    path = tmp_path / "debug_kernel.py"
    path.write_text(DEBUG_PRINT)
    out = subprocess.run([sys.executable, "-m", "jaxbench.cli", "eval", str(path), "--task",
                          "12p_rmsnorm", "--debug", "--json"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 1, out.stderr  # even when the outputs match: it does not count
    result = json.loads(out.stdout)
    assert result["debug"] is True and result["judged_on"] == "untrusted_debug_run"
    assert result["status"] == "correct" and result["trials"] == 1
    assert "block 0: mean square" in result["output"] and "block 3: mean square" in result["output"]
    assert any("this verdict does not count" in w for w in result["warnings"])
    # its tracer is sealed, with files readable (XLA's threads seed random devices from
    # /dev/urandom when jax.debug.print's callback runs): never what a counted run gets
    assert result["sealed"].startswith("seccomp-debug"), result["sealed"]

    from jaxbench.runs import RunDir

    run = RunDir.open(tmp_path / "run", {"command": "test"})
    with pytest.raises(ValueError, match="never recorded in a run"):
        run.append(result)


def test_debug_is_refused_in_device_mode(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(DEBUG_PRINT)
    out = subprocess.run([sys.executable, "-m", "jaxbench.cli", "eval", str(path), "--task",
                          "12p_rmsnorm", "--debug", "--mode", "device"], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert out.stderr == ("jaxbench: error: --debug runs the kernel in interpret mode on the CPU; "
                          "drop --mode device\n")
