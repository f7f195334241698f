#!/usr/bin/env bash
# The prepared GPU-scale run (issue 31), for a session lent a machine with CUDA:
#   bash tests/gpu_scale.sh OUTDIR SECONDS [EXPERIMENT ...]
# 1. the engine's GPU tests: the compiled step and the CUDA-graph step against the eager one, steps that never
#    wait for the GPU
#    -> OUTDIR/gpu_scale_tests.log
# 2. the bench on every workload (mahdavi_fig2c, the largest paper job, included) -> OUTDIR/bench.json; then
#    the stacked step alone on dana_fig1a and mahdavi_fig2c: eager, recorded as CUDA graphs (cuda_graphs),
#    and compiled (Inductor + CUDA graphs),
#    timed as (400 steps - 100 steps) / 300 -> OUTDIR/stacked_modes.json
# 3. the paper profiles of the EXPERIMENTs (default: Dana et al.'s six, then Mahdavi et al.'s six), one after
#    the other, into the cache OUTDIR/results, until SECONDS have passed since the start: the sweep running
#    then is stopped with SIGINT and keeps every finished job and the checkpoint of the running one. Carry
#    results/ back (copy OUTDIR/results into ./results) and the next lease goes on from there.
#    MEMCAP_COMPILE (default never) and MEMCAP_CUDA_GRAPHS (default never) choose the step of the sweeps: set
#    them from what step 2 measured. -> OUTDIR/sweeps.log
# 4. a record (memcap.experiments.recorded) of every experiment whose paper jobs are all finished in the cache,
#    at one commit, with the GPU's name as its machine -> OUTDIR/recorded/<experiment>_paper.json; copy them into
#    memcap/experiments/recorded/ (or first look at the chapters with MEMCAP_RECORDED=that folder) and commit.
# Needs torch, numpy, sympy, matplotlib and pytest only. Keep SECONDS a few minutes under the lease.
set -uo pipefail
out="${1:?usage: bash tests/gpu_scale.sh OUTDIR SECONDS [EXPERIMENT ...]}"; budget="${2:?SECONDS}"; shift 2
mkdir -p "$out"
cd "$(dirname "$0")/.."
start=$(date +%s)
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg MEMCAP_COMPILE="${MEMCAP_COMPILE:-never}"
left() { echo $(( budget - ($(date +%s) - start) )); }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" 2>&1 || true
python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])" >> "$out/gpu.txt"
echo "commit ${MEMCAP_COMMIT:-unknown}" >> "$out/gpu.txt"
cat "$out/gpu.txt"

timeout 240 python3 -m pytest -m gpu tests/test_gpu.py -q -p no:cacheprovider -k "compiled_step or do_not_wait or cuda_graphs" \
  > "$out/gpu_scale_tests.log" 2>&1; echo "exit $?" >> "$out/gpu_scale_tests.log"
tail -3 "$out/gpu_scale_tests.log"

timeout 300 python3 -m memcap --threads 1 bench --device cuda --workload all --steps 100 --authors-steps 10 \
  --repeats 1 --compile never --json > "$out/bench.json" 2> "$out/bench.err"
echo "bench (eager): exit $?"
# the stacked step alone, eager and compiled (CUDA graphs), on the two workloads the issue's bar names
timeout 420 python3 - "$out/stacked_modes.json" <<'PY'
import json, sys, time
import torch
from memcap.experiments import bench
from memcap.train import TrainConfig, train_models
cuda = torch.device("cuda")
peak = bench.peak_gflops(cuda)
rows = []
try:
    bench_json = json.load(open(sys.argv[1].replace("stacked_modes", "bench")))
    for name, w in bench_json["workloads"].items():
        print(f"  bench {name:14s} stacked {w['stacked_model_steps_per_s']:8.0f} model-steps/s  speedup "
              f"{w['speedup']:5.1f}  vs authors {w['speedup_vs_authors']:5.0f}  fraction_of_peak {w['fraction_of_peak']:.3f}")
except Exception as err:   # the bench did not finish: the timings below still count
    print("  bench: no result:", err)
for name in ("dana_fig1a", "mahdavi_fig2c"):
    specs, config = bench.workload(name)
    flops = sum(bench.flops_per_model_step(s, config.batch_size) for s in specs)
    for mode, compile, graphs in (("eager", "never", "never"), ("graphs", "never", "always"),
                                  ("compiled", "always", "never")):
        def run(steps):
            cfg = TrainConfig(**{**config.to_dict(), "steps": steps, "betas": config.betas, "device": "cuda",
                                 "eval_every": 10 ** 6})
            torch.cuda.synchronize(); t = time.perf_counter()
            train_models(specs, cfg, compile=compile, cuda_graphs=graphs)
            torch.cuda.synchronize(); return time.perf_counter() - t
        try:
            warm = run(20)
            short, long = run(100), run(400)
        except Exception as err:
            print(f"  {name} {mode}: failed: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
            rows.append({"workload": name, "compile": mode, "error": repr(err)[:500]}); continue
        per_step = (long - short) / 300
        row = {"workload": name, "compile": mode, "models": len(specs), "seconds_per_step": per_step,
               "model_steps_per_s": len(specs) / per_step, "fraction_of_peak": flops / per_step / 1e9 / peak,
               "warmup_seconds": warm, "peak_gflops": peak}
        rows.append(row)
        print(f"  {name:14s} {mode:8s} {per_step * 1e3:7.2f} ms/step  {row['model_steps_per_s']:8.0f} model-steps/s  "
              f"fraction_of_peak {row['fraction_of_peak']:.3f}  (first run {warm:.0f} s)")
json.dump({"command": "tests/gpu_scale.sh (stacked step, 400 minus 100 steps)", "rows": rows},
          open(sys.argv[1], "w"), indent=1)
PY
echo "stacked modes: exit $?"

names=("$@")
[ ${#names[@]} -eq 0 ] && names=(dana_fig1a dana_fig1b dana_fig2a dana_fig2b dana_fig3 dana_fig4
                                  mahdavi_fig2a mahdavi_fig2b mahdavi_fig3 mahdavi_fig5 mahdavi_fig4 mahdavi_fig2c)
for name in "${names[@]}"; do
  t=$(left)
  [ "$t" -le 20 ] && { echo "$name: not started (budget spent)" | tee -a "$out/sweeps.log"; continue; }
  s0=$(date +%s)
  timeout -s INT -k 30 "$t" python3 -m memcap sweep "$name" --profile paper --cache "$out/results" \
    --executor inprocess --no-progress >> "$out/sweeps.log" 2>&1
  echo "$name: exit $? after $(( $(date +%s) - s0 )) s" | tee -a "$out/sweeps.log"
done
python3 -m memcap cache --cache "$out/results" > "$out/cache.txt" 2>&1; cat "$out/cache.txt"
python3 - "$out" <<'PY'
import sys
from pathlib import Path

import torch

from memcap import experiments
from memcap.experiments import recorded

out = Path(sys.argv[1])
folder = out / "recorded"
folder.mkdir(exist_ok=True)
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
for name in experiments.EXPERIMENTS:
    module = experiments.get(name)
    if not hasattr(module, "finding") or hasattr(module, "recorded_finding"):
        continue            # Part III's experiments, and mahdavi_fig3's record of its own kind
    try:
        data = recorded.from_cache(name, out / "results", machine=f"one {gpu} (a lent device machine, tests/gpu_scale.sh)",
                                   command=f"python -m memcap sweep {name} --profile paper --executor inprocess")
    except ValueError as e:
        print(f"{name}: no record yet ({e})")
        continue
    print(f"{name}: recorded {len(data['records'])} models in {recorded.save(data, folder)}")
PY
echo "records: exit $?"
