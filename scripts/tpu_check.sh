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
# Steps for issue 55 (not in the default list; name them), each under 9 minutes a call:
#   cache-seed-cold  the `seed` run with an empty compile cache (RUNS/xla-seed, made afresh
#                    when the run starts, kept while it is resumed) into runs/tpu-seed-cold
#   cache-seed-warm  the same run again with the cache the cold one filled, into
#                    runs/tpu-seed-warm (resumed like it; start it after cache-seed-cold ends)
#   eval-cold        one `jaxbench eval --mode device --size full` (EVAL_TASK, default
#                    12p_rmsnorm) with an empty compile cache (RUNS/xla-eval), its JSON
#   eval-warm        the same evaluation again with that cache, its JSON
#   hold-eval        the lone evaluation with a held chip (`jaxbench hold`, its compile cache
#                    RUNS/xla-eval made afresh): `eval` cold (a new hold, an empty cache), again
#                    on the same hold, then on a new hold with the cache filled; each command's
#                    seconds and each hold's until it answers, JSONs hold-eval-<round>.json
#   drawing          benchmarks/drawing_compile.py: what each task's input drawing takes to
#                    compile on the chip, small and full (OUT_DIR/drawing.txt); DRAW_ARGS: its
#                    arguments (tasks, --sizes)
#   beside           benchmarks/compile_beside_timing.py: a timing alone and with XLA compiles
#                    beside it (OUT_DIR/beside.txt)
#   optimize16       `optimize` as above with --budget 16 (16 scripted copies of each seed) on
#                    OPT_TASKS, into runs/tpu-optimize16, resumed like the runs
#   seed-old         the warm `seed` run again, timed by the previous method (20 calls a side
#                    in one device trace, the reference timed beside every kernel:
#                    --timing device_reps=20 min_reps=20 max_reps=20 reuse_reference=0) into
#                    runs/tpu-seed-old, with the cache of cache-seed-cold; it replays the warm
#                    run's inputs (--replay runs/tpu-seed-warm: that run must have ended in one
#                    segment), so a data-dependent kernel's time differs by the method alone
#   agreement        `jaxbench compare` of runs/tpu-seed-old and runs/tpu-seed-warm at 2 %
#                    (OUT_DIR/agreement.json, the counts on the log): the two methods on one
#                    machine, on the same inputs
#   startup          where a lone command's first seconds go on this host (and its last: a
#                    chip holder killed until reaped): Python importing
#                    JAX and jaxbench's CLI, the accelerator probe, a process opening the chip
#                    (OUT_DIR/startup.txt)
# Steps for issue 54 and the timing's profiler (name them):
#   moe              MaxText's MoE layer with Tokamax's TPU ragged dot
#                    (tests/legit/kernels/tpu_tokamax_moe_10p.py on 10p_sparse_moe) in device
#                    mode at size small and full, its JSON (moe-small.json, moe-full.json): its
#                    routing is counted on the chip's floats. Needs Tokamax (install it from
#                    wheels/tokamax, fetched by `bash scripts/offline_wheels.sh wheels tokamax`)
#   profiler         benchmarks/profiler_overhead.py alone and with 2 threads compiling beside
#                    (OUT_DIR/profiler.txt): a timing round's cost by profiler options
# A run step's calls each print "<step>: exit E in S s"; a run's wall is the sum over its calls
# (the log says where each call started and ended). OWNER_DEPTH sets JAXBENCH_OWNER_DEPTH (the
# requests a chip's owner takes at once; 1 is the old one-at-a-time owner, for a comparison).
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
if [ -n "${OWNER_DEPTH:-}" ]; then export JAXBENCH_OWNER_DEPTH="$OWNER_DEPTH"; fi
# a seed run resumed in later calls, with the compile cache in $2 (made afresh with $3=fresh
# when the run has not started yet); the packed run directory goes to OUT_DIR
cached_run() {
  local name="$1" cache="$2" fresh="${3:-}"
  if [ "$fresh" = fresh ] && [ ! -e "$RUNS/$name/manifest.json" ]; then rm -rf "$cache"; fi
  JAXBENCH_XLA_CACHE="$cache" timeout --signal=INT --kill-after=30 "${BUDGET_S:-420}" "$PY" -m \
    jaxbench.cli run --suite jaxbench --kernels seed --target tpu --mode "$MODE" --size "$SIZE" \
    --workers "${WORKERS:-3}" --out "$RUNS/$name" ${EXTRA:-} 2>&1 | tail -n 80 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  say "$name: exit $rc in $(( $(date +%s) - t0 )) s (cache $cache: $(ls "$cache" 2>/dev/null | wc -l) entries)"
  tar -czf "$OUT/$name.tgz" -C "$RUNS" "$name"
}
scripted_answers() {  # $1 copies of each seed of OPT_TASKS, each with a distinct comment
  answers="$RUNS/scripted$1"
  rm -rf "$answers"
  for t in $OPT_TASKS; do
    mkdir -p "$answers/$t"
    for i in $(seq 1 "$1"); do
      { echo '```python'; cat "src/jaxbench/tasks/jaxbench/$t/seed_tpu.py"; echo "# copy $i"
        echo '```'; } >"$answers/$t/$i.md"
    done
  done
}
# `optimize` (best_of_n) on OPT_TASKS with $1 scripted answers a task into runs/$2, resumed
# like the runs (the answers written when the run has not started yet)
optimize_run() {
  local budget="$1" name="$2"
  [ -e "$RUNS/$name/manifest.json" ] || scripted_answers "$budget"
  timeout --signal=INT --kill-after=30 "${BUDGET_S:-420}" "$PY" -m jaxbench.cli optimize \
    --method best_of_n --model "scripted:$RUNS/scripted$budget" \
    --tasks "$(echo $OPT_TASKS | tr ' ' ,)" --budget "$budget" --target tpu --mode "$MODE" \
    --size "$SIZE" --workers "${WORKERS:-3}" --out "$RUNS/$name" 2>&1 | tail -n 40 | tee -a "$log"
  say "$name: exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s"
  tar -czf "$OUT/$name.tgz" -C "$RUNS" "$name"
}
log="$OUT/tpu_check.log"
say() { echo "tpu_check: $*" | tee -a "$log"; }
# The host's memory, every 2 s while the steps run (OUT_DIR/memory.log: MemAvailable and the
# largest processes); below MEM_FLOOR_MB (default 3072) available, it stops jaxbench's
# processes (SIGINT, then SIGKILL), so the call returns with its logs and the run resumes later.
watch_memory() {
  while sleep 2; do
    local avail
    avail=$(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)
    { echo "$(date -u +%T) available ${avail} MB"
      ps -eo rss=,args= --sort=-rss | head -n 4 | awk '{printf "  %6d MB %s\n", $1 / 1024, substr($0, index($0, $2), 100)}'
    } >>"$OUT/memory.log"
    if [ "$avail" -lt "${MEM_FLOOR_MB:-3072}" ]; then
      say "memory: ${avail} MB available, below ${MEM_FLOOR_MB:-3072} MB: stopping jaxbench's processes"
      pkill -INT -f "jaxbench[.]cli"; sleep 5; pkill -KILL -f "^[^ ]*python"
    fi
  done
}
watch_memory &
watcher=$!
trap 'kill $watcher 2>/dev/null' EXIT
started=$(date +%s)
for step in $STEPS; do
  t0=$(date +%s)
  say "$step: start $(date -u +%FT%TZ)"
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
    optimize) optimize_run 8 tpu-optimize ;;
    seal)
      "$PY" scripts/seal_check.py "$OUT/seal" --mode "$MODE" --size small 2>&1 | tee -a "$log"
      say "seal_check: exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s"
      "$PY" scripts/chip_vs_cpu.py "$OUT/seal" --budget-s "${BUDGET_S:-420}" 2>&1 \
        | tail -n 90 | tee -a "$log"
      say "chip_vs_cpu: exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s"
      ;;
    cache-seed-cold) cached_run tpu-seed-cold "$RUNS/xla-seed" fresh ;;
    cache-seed-warm) cached_run tpu-seed-warm "$RUNS/xla-seed" ;;
    eval-cold|eval-warm)
      [ "$step" = eval-cold ] && rm -rf "$RUNS/xla-eval"
      task="${EVAL_TASK:-12p_rmsnorm}"
      JAXBENCH_XLA_CACHE="$RUNS/xla-eval" timeout 480 "$PY" -m jaxbench.cli eval --task "$task" \
        --mode "$MODE" --size "$SIZE" --json "src/jaxbench/tasks/jaxbench/$task/seed_tpu.py" \
        >"$OUT/$step.json" 2>>"$log"
      say "$step: exit $? in $(( $(date +%s) - t0 )) s"
      ;;
    hold-eval)
      rm -rf "$RUNS/xla-eval"
      task="${EVAL_TASK:-12p_rmsnorm}"
      for round in cold same-hold new-hold; do
        if [ "$round" != same-hold ]; then
          t1=$(date +%s%N)
          JAXBENCH_XLA_CACHE="$RUNS/xla-eval" "$PY" -m jaxbench.cli hold --idle 300 2>>"$log" &
          hold_pid=$!
          until "$PY" -m jaxbench.cli hold --status >>"$log" 2>&1; do
            kill -0 "$hold_pid" 2>/dev/null || break; sleep 0.5
          done
          if kill -0 "$hold_pid" 2>/dev/null; then
            say "hold for $round: answering after $(( ($(date +%s%N) - t1) / 1000000 )) ms"
          else
            say "hold for $round: did not start (its error is on the log); eval without it"
          fi
        fi
        t1=$(date +%s%N)
        JAXBENCH_XLA_CACHE="$RUNS/xla-eval" timeout 480 "$PY" -m jaxbench.cli eval --task "$task" \
          --mode "$MODE" --size "$SIZE" --json "src/jaxbench/tasks/jaxbench/$task/seed_tpu.py" \
          >"$OUT/hold-eval-$round.json" 2>>"$log"
        say "hold-eval $round: exit $? in $(( ($(date +%s%N) - t1) / 1000000 )) ms"
        if [ "$round" != cold ]; then
          "$PY" -m jaxbench.cli hold --stop 2>&1 | tee -a "$log"; wait "$hold_pid"
        fi
      done
      ;;
    drawing)
      # shellcheck disable=SC2086  # DRAW_ARGS: tasks and --sizes, word-split on purpose
      timeout 480 "$PY" benchmarks/drawing_compile.py ${DRAW_ARGS:-} 2>&1 | tee "$OUT/drawing.txt" | tee -a "$log"
      say "drawing: exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s"
      ;;
    beside)
      timeout 480 "$PY" benchmarks/compile_beside_timing.py 2>&1 | tee "$OUT/beside.txt" | tee -a "$log"
      say "beside: exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s"
      ;;
    optimize16) optimize_run 16 tpu-optimize16 ;;
    seed-old)
      EXTRA="${EXTRA:-} --timing device_reps=20 --timing min_reps=20 --timing max_reps=20 --timing reuse_reference=0 --replay $RUNS/tpu-seed-warm" \
        cached_run tpu-seed-old "$RUNS/xla-seed" ;;
    agreement)
      "$PY" -m jaxbench.cli compare "$RUNS/tpu-seed-old" "$RUNS/tpu-seed-warm" --threshold 0.02 \
        --json >"$OUT/agreement.json" 2>>"$log"
      "$PY" -c 'import json, sys; c = json.load(open(sys.argv[1])); print("agreement at 2 %:", c["counts"])' \
        "$OUT/agreement.json" 2>&1 | tee -a "$log"
      ;;
    startup)
      "$PY" - "$PY" <<'PYEOF' 2>&1 | tee "$OUT/startup.txt" | tee -a "$log"
import subprocess, sys, time
for name, code in [("python alone", "pass"), ("import jax", "import jax"),
                   ("import jaxbench.cli", "import jaxbench.cli"),
                   ("the accelerator probe", "import runpy; runpy.run_path('src/jaxbench/backends/chip_probe.py', run_name='__main__')"),
                   ("import jax, open the chip", "import jax; jax.devices()"),
                   ("import jaxbench.evaluator", "import jaxbench.evaluator")]:
    for i in range(2):
        t = time.perf_counter()
        subprocess.run([sys.argv[1], "-c", code], capture_output=True, check=False)
        print(f"{name}: {time.perf_counter() - t:.2f} s (try {i + 1})", flush=True)
holder = "import jax, sys, time; jax.devices(); print('open', flush=True); time.sleep(120)"
for i in range(2):  # what a command waits for when it stops the chip's owner (SIGKILL, reaped)
    proc = subprocess.Popen([sys.argv[1], "-c", holder], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    proc.stdout.readline()
    t = time.perf_counter()
    proc.kill()
    proc.wait()
    print(f"a process holding the chip, killed until reaped: {time.perf_counter() - t:.2f} s "
          f"(try {i + 1})", flush=True)
PYEOF
      ;;
    moe)
      for size in small full; do
        timeout 240 "$PY" -m jaxbench.cli eval --task 10p_sparse_moe --mode "$MODE" --size "$size" \
          --json tests/legit/kernels/tpu_tokamax_moe_10p.py >"$OUT/moe-$size.json" 2>>"$log"
        say "moe $size: exit $? in $(( $(date +%s) - t0 )) s"
      done
      ;;
    profiler)
      for beside in 0 2; do
        timeout 240 "$PY" benchmarks/profiler_overhead.py --n 4096 --repeat 3 --beside "$beside" \
          2>&1 | tee -a "$OUT/profiler.txt" | tee -a "$log"
      done
      say "profiler: done in $(( $(date +%s) - t0 )) s"
      ;;
    *) say "unknown step $step (doctor, one, seed, expert, optimize, seal, cache-seed-cold, cache-seed-warm, eval-cold, eval-warm, drawing, beside, optimize16, seed-old, agreement, startup, moe, profiler)"; exit 2 ;;
  esac
done
say "done in $(( $(date +%s) - started )) s"
