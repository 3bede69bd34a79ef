#!/usr/bin/env bash
# One prepared device check for an NVIDIA GPU host (JAX with CUDA preinstalled, no network
# needed), in under 8 minutes:
#     bash scripts/device_check.sh OUT_DIR            # on the GPU host
#     bash scripts/device_check.sh --dry-run OUT_DIR  # anywhere: the same steps, interpret mode
# 1. installs this project into the current Python (no dependencies fetched; falls back to
#    PYTHONPATH=src), 2. `jaxbench doctor`, 3. the timing-method comparison (wall clock vs
#    device time, tiny and large kernel), 4. every GPU kernel of every suite (Triton and Mosaic
#    GPU seeds, GPU experts) in device mode at full size, plus the GPU cheats, written as
#    OUT_DIR/gpu_check.json and OUT_DIR/gpu_check.md. On a host without a GPU it stops at once.
# Environment: PYTHON (default python3), TASKS (comma-separated IDs), BUDGET_S (default 360:
# no evaluation starts later), WORKERS (default 4), CHEATS (FILE:TASK pairs).
set -uo pipefail
DRY=""
if [ "${1:-}" = "--dry-run" ]; then DRY="--dry-run"; shift; fi
if [ $# -ne 1 ]; then
  echo "device_check: error: give the output directory: bash scripts/device_check.sh [--dry-run] OUT_DIR" >&2
  exit 2
fi
OUT="$1"
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
if [ -z "$DRY" ]; then
  if ! "$PY" -c "import jax, sys; sys.exit(0 if any(d.platform == 'gpu' for d in jax.devices()) else 1)" 2>/dev/null; then
    echo "device_check: error: no NVIDIA GPU is visible to JAX on this host; run it on a GPU host, or pass --dry-run" >&2
    exit 1
  fi
fi
mkdir -p "$OUT"
started=$(date +%s)
# 1. the project, without touching the installed JAX
if [ -z "$DRY" ]; then
  if ! "$PY" -m pip install --no-deps --no-build-isolation -q -e . >"$OUT/install.log" 2>&1; then
    echo "pip install failed (see install.log): using PYTHONPATH=src" | tee -a "$OUT/install.log"
  fi
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
{
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  uname -r
} >"$OUT/versions.txt" 2>&1
# 2. what this machine offers
"$PY" -m jaxbench.cli doctor 2>&1 | tee "$OUT/doctor.txt"
"$PY" -m jaxbench.cli doctor --json >"$OUT/doctor.json" 2>>"$OUT/doctor.txt"
# 3. wall clock vs device time
"$PY" benchmarks/timing_methods.py --json "$OUT/timing_methods.json" ${DRY:+--reps 4} 2>&1 \
  | tee "$OUT/timing_methods.txt"
# 4. every GPU kernel, then the cheats
CHEATS_DEFAULT="tests/adversarial/kernels/copy_matmul_in_xla_gpu.py:8p_gemm,tests/adversarial/kernels/gpu_reduction_race.py:8p_gemm,tests/adversarial/kernels/plain_jnp.py:8p_gemm"
"$PY" scripts/gpu_check.py "$OUT" ${TASKS:+--tasks "$TASKS"} --budget-s "${BUDGET_S:-360}" \
  --workers "${WORKERS:-4}" --cheats "${CHEATS-$CHEATS_DEFAULT}" $DRY 2>&1 | tee "$OUT/gpu_check.log"
status=${PIPESTATUS[0]}
echo "device_check: done in $(( $(date +%s) - started )) s; files in $OUT" | tee -a "$OUT/gpu_check.log"
exit "$status"
