#!/usr/bin/env bash
# One prepared check for a TPU host (JAX with libtpu preinstalled, no network needed), through
# the project's own commands, resumable across calls:
#     bash scripts/tpu_check.sh OUT_DIR [STEP ...]
# Steps (default: all, in this order):
#   doctor   versions and `jaxbench doctor` (what the probe sees, the host's limits)
#   one      one evaluation in device mode at full size (12p_rmsnorm's seed), its result JSON
#   seed     `jaxbench run --suite jaxbench --kernels seed --target tpu --mode device
#            --size full` into runs/tpu-seed (an existing run there is resumed)
#   expert   the same for the expert kernels, into runs/tpu-expert
#   optimize `jaxbench optimize --method best_of_n --budget 8` on OPT_TASKS (10 tasks) in device
#            mode at full size, offline: a scripted model answers each task with 8 copies of
#            its seed (a distinct comment each), so every sample is a full device evaluation;
#            into runs/tpu-optimize (the optimize throughput on the chip)
#   seal     the host attacks of tests/adversarial/host_profiles in device mode
#            (scripts/seal_check.py: nothing read, written or connected to) and the cheats of
#            tests/adversarial against their CPU verdicts (scripts/chip_vs_cpu.py), into
#            OUT_DIR/seal
# Each run step stops at BUDGET_S seconds (default 420) and is resumed by the next call; its
# run directory is packed as OUT_DIR/<name>.tgz after every call. Environment: PYTHON (default
# python3), WORKERS (default 3), BUDGET_S, RUNS (default runs), EXTRA (more `run` options),
# MODE and SIZE (default device and full; interpret and small try the script on a CPU).
set -uo pipefail
if [ $# -lt 1 ]; then
  echo "tpu_check: error: give the output directory: bash scripts/tpu_check.sh OUT_DIR [STEP ...]" >&2
  exit 2
fi
OUT="$1"; shift
STEPS="${*:-doctor one seed expert optimize}"
MODE="${MODE:-device}"
SIZE="${SIZE:-full}"
OPT_TASKS="${OPT_TASKS:-8p_gemm 12p_rmsnorm 13p_cross_entropy 14p_ragged_dot 15p_retnet_retention 19k_matmul_subtract_multiply_relu 20k_gemm_multiply_leakyrelu 29k_matmul_swish_sum_groupnorm 35k_gemm_scaling_hardtanh_gelu 37k_matmul_swish_scaling}"
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
RUNS="${RUNS:-runs}"
export PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT" "$RUNS"
log="$OUT/tpu_check.log"
say() { echo "tpu_check: $*" | tee -a "$log"; }
started=$(date +%s)
for step in $STEPS; do
  t0=$(date +%s)
  case "$step" in
    doctor)
      { "$PY" -c 'import platform, sys, jax, jaxlib; print(sys.version.split()[0], platform.libc_ver(), "jax", jax.__version__, "jaxlib", jaxlib.__version__)'
        uname -r; nproc; free -g | head -2
        "$PY" -m jaxbench.cli doctor; } 2>&1 | tee -a "$log"
      ;;
    one)
      timeout 180 "$PY" -m jaxbench.cli eval --task 12p_rmsnorm --mode "$MODE" --size "$SIZE" --json \
        src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_tpu.py >"$OUT/one.json" 2>>"$log"
      say "one: exit $? in $(( $(date +%s) - t0 )) s"
      ;;
    seed|expert)
      timeout --signal=INT --kill-after=30 "${BUDGET_S:-420}" "$PY" -m jaxbench.cli run \
        --suite jaxbench --kernels "$step" --target tpu --mode "$MODE" --size "$SIZE" \
        --workers "${WORKERS:-3}" --out "$RUNS/tpu-$step" ${EXTRA:-} 2>&1 | tail -n 80 | tee -a "$log"
      say "$step: exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s"
      tar -czf "$OUT/tpu-$step.tgz" -C "$RUNS" "tpu-$step"
      ;;
    optimize)
      answers="$RUNS/scripted"
      rm -rf "$answers"
      for t in $OPT_TASKS; do
        mkdir -p "$answers/$t"
        for i in 1 2 3 4 5 6 7 8; do
          { echo '```python'; cat "src/jaxbench/tasks/jaxbench/$t/seed_tpu.py"; echo "# copy $i"
            echo '```'; } >"$answers/$t/$i.md"
        done
      done
      timeout --signal=INT --kill-after=30 "${BUDGET_S:-420}" "$PY" -m jaxbench.cli optimize \
        --method best_of_n --model "scripted:$answers" --tasks "$(echo $OPT_TASKS | tr ' ' ,)" \
        --budget 8 --target tpu --mode "$MODE" --size "$SIZE" --workers "${WORKERS:-3}" \
        --out "$RUNS/tpu-optimize" 2>&1 | tail -n 40 | tee -a "$log"
      say "optimize: exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s"
      tar -czf "$OUT/tpu-optimize.tgz" -C "$RUNS" tpu-optimize
      ;;
    seal)
      "$PY" scripts/seal_check.py "$OUT/seal" --mode "$MODE" --size small 2>&1 | tee -a "$log"
      say "seal_check: exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s"
      "$PY" scripts/chip_vs_cpu.py "$OUT/seal" --budget-s "${BUDGET_S:-420}" 2>&1 \
        | tail -n 90 | tee -a "$log"
      say "chip_vs_cpu: exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s"
      ;;
    *) say "unknown step $step (doctor, one, seed, expert, optimize, seal)"; exit 2 ;;
  esac
done
say "done in $(( $(date +%s) - started )) s"
