#!/usr/bin/env bash
# GPU capture checks on the 2-GPU machine, in one call (issue 3):
#   1. run_nccl_busbw_check.sh: NCCL bus bandwidth per size vs nccl_allreduce's own timing;
#   2. capture windows: torch_allreduce.py (40 steps) under `rankscope run --capture-steps 10:5`
#      and `--capture-every 10`; check_capture_window.py checks which steps have kernels.
# Usage (repo root there): tests/gpu/run_capture_checks.sh device-prefix; results under $OUT.
set -uo pipefail
source "$(dirname "$0")/device_env.sh" "${1:-device-prefix}"
status=0

echo "== 1. NCCL bus bandwidth"
OUT=$out bash "$here/run_nccl_busbw_check.sh" "$prefix" || status=1

echo "== 2. capture windows"
work=$out/windows
mkdir -p "$work"
run_window() {  # NAME EXPECTED_STEPS RANKSCOPE_OPTIONS...
  local name=$1 expected=$2; shift 2
  ( cd "$work" && timeout 300 "$prefix/bin/rankscope" run -q -o "$name" "$@" -- \
      torchrun --nproc_per_node=2 --no-python -- python3 "$here/torch_allreduce.py" \
      --steps 40 --mib 16 ) > "$work/$name.log" 2>&1
  echo "rankscope run $* exit $?"
  grep -h "GPU capture window\|NCCL:" "$work/$name/report.txt" | head -5
  python3 "$here/check_capture_window.py" "$work/$name" "$expected" || status=1
}
run_window steps "10,11,12,13,14" --capture-steps 10:5
run_window every "0,10,20,30" --capture-every 10
exit $status
