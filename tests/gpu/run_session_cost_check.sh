#!/usr/bin/env bash
# Issue #16's GPU acceptance figures on one GPU: one rank of the launch-bound PyTorch loop
# (tests/gpu/torch_allreduce.py, 250 small kernels a step) for STEPS (default 2000,10000) steps,
# bare and under `rankscope run` with default options, through bench/run_session_cost.py --torch.
# Prints, per length: dropped records, the coordinator's peak resident memory (`rankscope run`'s
# VmHWM), the session folder and its parts, bytes per step, the loop's median step time bare and
# under rankscope; then each figure against the issue's target (no drops, <= 500 MB resident,
# <= 100 MB folder). Figures, not a pass/fail test: results land in $OUT. First a 300-step run
# whose per-window GPU sums (gpu_stats) are checked against its records (check_gpu_stats.py).
# Usage (repo root there): tests/gpu/run_session_cost_check.sh device-prefix [STEPS]
set -uo pipefail
source "$(dirname "$0")/device_env.sh" "${1:-device-prefix}"
steps=${2:-2000,10000}
s=$(mktemp -d)
(cd "$s" && timeout 300 "$prefix/bin/rankscope" run -q -o short -- torchrun --nproc_per_node=1 \
  --no-python -- python3 "$here/torch_allreduce.py" --steps 300 --small-ops 250 --mib 1 --dim 1024) \
  > "$out/short_run.txt" 2>&1
echo "rankscope run exit $?" >> "$out/short_run.txt"
python3 "$here/check_gpu_stats.py" "$s/short" 2>&1 | tail -40 | tee "$out/gpu_stats_check.txt"
cp "$s/short/session.sqlite" "$out/short-session.sqlite" 2>/dev/null
rm -rf "$s"
python3 "$here/../../bench/run_session_cost.py" --torch --steps "$steps" --build "$prefix" \
  --json "$out/session_cost.json" 2>&1 | tee "$out/session_cost.txt"
python3 - "$out/session_cost.json" <<'PY' 2>&1 | tee -a "$out/session_cost.txt"
import json, sys
for r in json.load(open(sys.argv[1])):
    print(f"{r['steps']} steps: dropped {r['dropped_records']} (target 0), peak resident "
          f"{r['peak_resident_mib']:.0f} MiB (target <= 500 MB), folder "
          f"{r['folder_bytes'] / 1e6:.1f} MB (target <= 100 MB), report {r['status']}")
PY
