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
import subprocess, sys, json
from jaxbench.evaluator.sandbox import isolation
print("landlock", isolation.landlock_abi())
code = ("import json; from jaxbench.evaluator.sandbox import isolation as i; "
        "ns = i.enter_namespaces(); r = i.restrict(i.python_read_roots(), ['/tmp']); "
        "print(json.dumps({'namespaces': ns, 'describe': i.describe(r, ns)}))")
out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                     env={"OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin",
                          "PYTHONPATH": sys.path[0] if sys.path[0] else ""})
print(out.stdout.strip() or out.stderr.strip()[-500:])
PY
TASKS="${TASKS:-8p_gemm,12p_rmsnorm,1p_flash_attention,2p_gqa_attention,9p_swiglu_mlp,13p_cross_entropy,19k_matmul_subtract_multiply_relu,50k_matmul_gelu_softmax}"
"$PY" scripts/gpu_check.py --out "$OUT/gpu_check.json" --tasks "$TASKS" --timeout 300 \
  --cheats "${CHEATS:-}" ${DRY_RUN:+--dry-run} 2>&1 | tee "$OUT/gpu_check.log"
