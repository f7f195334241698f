#!/usr/bin/env bash
# The prepared GPU check, for a session that is lent a machine with CUDA (see CONTRIBUTING.md, "On a GPU"):
#   bash tests/gpu_check.sh OUTDIR [CHAPTER ...]
# 1. every chapter's cells on CUDA (python -m tests.gpu_book, GPU_BOOK_JOBS=6 chapters at a time) -> OUTDIR/gpu_book.json/.log
# 2. at the same time, the library's GPU suite (pytest -m gpu tests/test_gpu.py) and the doctor
#    (also with MEMCAP_DEVICE=cuda:0) -> OUTDIR/gpu_suite.log, OUTDIR/doctor.log
# Needs only torch, numpy, sympy, matplotlib and pytest (the GPU image has them; no jupytext, no Jupyter).
# Exit status 1 if any part failed. Chapter timings are taken with the suite running beside them.
set -uo pipefail
out="${1:?usage: bash tests/gpu_check.sh OUTDIR [CHAPTER ...]}"; shift
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" 2>&1 || true
python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])" >> "$out/gpu.txt"
cat "$out/gpu.txt"

( timeout "${GPU_SUITE_TIMEOUT:-420}" python3 -m pytest -m gpu tests/test_gpu.py -q -p no:cacheprovider > "$out/gpu_suite.log" 2>&1; echo "exit $?" >> "$out/gpu_suite.log"
  { timeout 120 python3 -m memcap doctor; echo "exit $?"; MEMCAP_DEVICE=cuda:0 timeout 120 python3 -m memcap doctor; echo "exit $?"; } > "$out/doctor.log" 2>&1 ) &
suite=$!

python3 -m tests.gpu_book --jobs "${GPU_BOOK_JOBS:-6}" --threads 2 --timeout "${GPU_BOOK_TIMEOUT:-420}" --json "$out/gpu_book.json" "$@" 2>&1 | tee "$out/gpu_book.log"
book=${PIPESTATUS[0]}
wait $suite
python3 - "$out" <<'PY'
import json, pathlib, re, sys
out = pathlib.Path(sys.argv[1]); path = out / "gpu_book.json"
record = json.loads(path.read_text()) if path.exists() else {}
suite = (out / "gpu_suite.log").read_text().strip().splitlines()
doctor = (out / "doctor.log").read_text()
record["gpu_suite"] = {"command": "python -m pytest -m gpu tests/test_gpu.py",
                       "summary": next((l.strip("= ") for l in reversed(suite) if re.search(r"passed|failed|error", l)), ""),
                       "exit": int(suite[-1].split()[-1]) if suite and suite[-1].startswith("exit") else None}
record["doctor"] = {"commands": ["python -m memcap doctor", "MEMCAP_DEVICE=cuda:0 python -m memcap doctor"],
                    "exits": [int(x) for x in re.findall(r"^exit (\d+)", doctor, re.M)]}
record["gpu"] = (out / "gpu.txt").read_text().strip()
path.write_text(json.dumps(record, indent=1))
PY
echo "--- GPU suite:"; tail -3 "$out/gpu_suite.log"
echo "--- doctor:"; grep -iE "exit|fail|pass|ok" "$out/doctor.log" | tail -8
grep -q "^exit 0" "$out/gpu_suite.log" && [ "$(grep -c '^exit 0' "$out/doctor.log")" = 2 ] && [ "$book" = 0 ]
