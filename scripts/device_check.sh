#!/usr/bin/env bash
# One prepared device check for an NVIDIA GPU machine (no network, JAX preinstalled): versions,
# the untrusted side's isolation there, GPU seeds in device mode at full size (trusted export run
# and timed against the reference), and GPU cheats in device mode. Results go to ${OUT:-results}.
#     OUT=results/h200 bash scripts/device_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-results/device}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  uname -r
  "$PY" -c "import sys, jax, jaxlib; print(sys.version.split()[0], 'jax', jax.__version__, 'jaxlib', jaxlib.__version__, jax.devices())"
} 2>&1 | tee "$OUT/versions.txt"
"$PY" - <<'PY' 2>&1 | tee "$OUT/isolation.txt"
import json, os, subprocess, sys
from jaxbench.evaluator.sandbox import isolation
print("landlock", isolation.landlock_abi())
code = ("import json; from jaxbench.evaluator.sandbox import isolation as i; "
        "ns = i.enter_namespaces(); r = i.restrict(i.python_read_roots(), ['/tmp']); "
        "print(json.dumps({'namespaces': ns, 'describe': i.describe(r, ns)}))")
out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                     env={"OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin",
                          "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
print(out.stdout.strip() or out.stderr.strip()[-500:])
PY
TASKS="${TASKS:-8p_gemm,12p_rmsnorm,1p_flash_attention,2p_gqa_attention,9p_swiglu_mlp,13p_cross_entropy,19k_matmul_subtract_multiply_relu,50k_matmul_gelu_softmax}"
"$PY" scripts/gpu_check.py --out "$OUT/gpu_check.json" --tasks "$TASKS" --timeout 300 \
  --cheats "${CHEATS:-}" ${DRY_RUN:+--dry-run} 2>&1 | tee "$OUT/gpu_check.log"
# The GPU race rule's cheats run directly on the chip (trusted test kernels, no evaluator): how
# wrong the racy kernels the rule rejects really are there.
"$PY" - <<'PY' 2>&1 | tee "$OUT/gpu_races.txt"
import jax, jax.numpy as jnp, numpy as np
from jaxbench.tasks import get_task
task = get_task("8p_gemm")
for name in ("gpu_reduction_race", "gpu_full_block_race"):
    ns = {}
    exec(open(f"tests/adversarial/kernels/{name}.py").read(), ns)
    for seed in (0, 1):
        a, b = task.make_inputs(jax.random.key(seed), "small")
        got = np.asarray(jax.jit(ns["kernel"])(a, b), np.float32)
        want = np.asarray(task.reference(a, b), np.float32)
        bad = np.abs(got - want) > task.atol + task.rtol * np.abs(want)
        print(f"{name} seed {seed}: {bad.mean():.1%} of elements wrong on {jax.devices()[0].device_kind}, max err {np.abs(got - want).max():.3g}")
PY
"$PY" - <<'PY' 2>&1 | tee "$OUT/mosaic_passes.txt"
import jax
from jax._src.interpreters import mlir
from jax._src.lib import tpu
from jaxlib.mlir.passmanager import PassManager
ctx = mlir.make_ir_context(); tpu.register_dialect(ctx)
with ctx:
    for name in ("tpu-infer-memref-layout", "tpu-infer-vector-layout", "tpu-apply-vector-layout"):
        try:
            PassManager.parse(f"builtin.module(func.func({name}))"); print(jax.__version__, name, "registered")
        except Exception as e:
            print(jax.__version__, name, "not registered")
PY
