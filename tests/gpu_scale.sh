#!/usr/bin/env bash
# The prepared GPU-scale run (issue 31), for a session lent a machine with CUDA:
#   bash tests/gpu_scale.sh OUTDIR SECONDS [EXPERIMENT ...]
# Its Python steps are tests/gpu_scale.py, tested on a CPU (tests/test_gpu_scale.py).
# 1. the engine's GPU tests: the CUDA-graph step and the compiled step against the eager one, recordings that
#    run out of memory, steps that never wait for the GPU -> OUTDIR/gpu_scale_tests.log (pytest -rA: a line per test)
# 2. the stacked step alone on dana_fig1a and mahdavi_fig2c (the bar's two workloads): eager (with a profile:
#    kernels per step, the GPU's busy time per step), recorded as CUDA graphs, compiled (Inductor + CUDA
#    graphs); timed as (400 steps - 100 steps) / 300 -> OUTDIR/stacked_modes.json
# 3. the sweeps' step: the fastest of those whose GPU tests passed in 1 (compiled only if it halves the step;
#    eager if nothing else qualifies) -> OUTDIR/step.txt. Set MEMCAP_CUDA_GRAPHS and MEMCAP_COMPILE to
#    choose it yourself (they then skip 1-3 unless GPU_SCALE_MEASURE=yes).
# 4. the bench on every workload with that step -> OUTDIR/bench.json (the issue's fraction_of_peak, speedup
#    and speedup_vs_authors)
# 5. the paper profiles of the EXPERIMENTs (default: Dana et al.'s six, then Mahdavi et al.'s six), one after
#    the other, into the cache OUTDIR/results, until SECONDS have passed since the start: the sweep running
#    then is stopped with SIGINT and keeps every finished job and the checkpoint of the running one. Up to
#    GPU_SCALE_MERGE (default 8) jobs of one training config train as one run (sweep --merge). Carry
#    results/ back (copy OUTDIR/results into ./results) and the next lease goes on from there. -> sweeps.log
# 6. a record (memcap.experiments.recorded) of every experiment whose paper jobs are all finished in the cache,
#    at one commit, with the GPU's name as its machine -> OUTDIR/recorded/<experiment>_paper.json; copy them into
#    memcap/experiments/recorded/ (or first look at the chapters with MEMCAP_RECORDED=that folder) and commit.
# GPU_SCALE_MEASURE=no skips 1-4 (a later lease that only goes on with the sweeps). Each step's time limit is
# also capped by what is left of SECONDS. Needs torch, numpy, sympy, matplotlib and pytest only. Keep SECONDS
# about a minute under the device call's limit (the sweep stopped at SECONDS, the cache listing and the
# records follow it).
set -uo pipefail
out="${1:?usage: bash tests/gpu_scale.sh OUTDIR SECONDS [EXPERIMENT ...]}"; budget="${2:?SECONDS}"; shift 2
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "$0")/.."
start=$(date +%s)
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
left() { echo $(( budget - ($(date +%s) - start) )); }
cap() { local t; t=$(left); [ "$t" -lt "$1" ] && echo $(( t > 1 ? t : 1 )) || echo "$1"; }   # a step's limit
chosen=no; [ -n "${MEMCAP_CUDA_GRAPHS:-}${MEMCAP_COMPILE:-}" ] && chosen=yes
measure="${GPU_SCALE_MEASURE:-$([ $chosen = yes ] && echo no || echo yes)}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" 2>&1 || true
python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])" >> "$out/gpu.txt"
echo "commit ${MEMCAP_COMMIT:-unknown}" >> "$out/gpu.txt"
cat "$out/gpu.txt"

if [ "$measure" = yes ]; then
  timeout "$(cap 180)" python3 -m pytest -m gpu tests/test_gpu.py -q -rA -p no:cacheprovider \
    -k "compiled_step or do_not_wait or cuda_graphs" > "$out/gpu_scale_tests.log" 2>&1
  echo "exit $?" >> "$out/gpu_scale_tests.log"
  grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|^exit" "$out/gpu_scale_tests.log"
  timeout "$(cap 200)" python3 -m tests.gpu_scale modes "$out" 2> "$out/modes.err"; echo "modes: exit $?"
fi
if [ $chosen = no ]; then
  read -r graphs compile < <(python3 -m tests.gpu_scale pick "$out" 2> "$out/step.txt")
  export MEMCAP_CUDA_GRAPHS="$graphs" MEMCAP_COMPILE="$compile"
fi
export MEMCAP_CUDA_GRAPHS="${MEMCAP_CUDA_GRAPHS:-never}" MEMCAP_COMPILE="${MEMCAP_COMPILE:-never}"
echo "step of the bench and sweeps: MEMCAP_CUDA_GRAPHS=$MEMCAP_CUDA_GRAPHS MEMCAP_COMPILE=$MEMCAP_COMPILE" >> "$out/step.txt"
cat "$out/step.txt"
if [ "$measure" = yes ]; then
  timeout "$(cap 240)" python3 -m memcap --threads 1 bench --device cuda --workload all --steps 100 --authors-steps 10 \
    --repeats 1 --compile "$MEMCAP_COMPILE" --cuda-graphs "$MEMCAP_CUDA_GRAPHS" --json > "$out/bench.json" 2> "$out/bench.err"
  echo "bench: exit $?"
  python3 -m tests.gpu_scale bench "$out/bench.json"
fi

names=("$@")
[ ${#names[@]} -eq 0 ] && names=(dana_fig1a dana_fig1b dana_fig2a dana_fig2b dana_fig3 dana_fig4
                                  mahdavi_fig2a mahdavi_fig2b mahdavi_fig3 mahdavi_fig5 mahdavi_fig4 mahdavi_fig2c)
for name in "${names[@]}"; do
  t=$(left)
  [ "$t" -le 20 ] && { echo "$name: not started (budget spent)" | tee -a "$out/sweeps.log"; continue; }
  s0=$(date +%s)
  timeout -s INT -k 30 "$t" python3 -m memcap sweep "$name" --profile paper --cache "$out/results" \
    --executor inprocess --merge "${GPU_SCALE_MERGE:-8}" --no-progress >> "$out/sweeps.log" 2>&1
  echo "$name: exit $? after $(( $(date +%s) - s0 )) s" | tee -a "$out/sweeps.log"
done
python3 -m memcap cache --cache "$out/results" > "$out/cache.txt" 2>&1; cat "$out/cache.txt"
python3 -m tests.gpu_scale records "$out"; echo "records: exit $?"
