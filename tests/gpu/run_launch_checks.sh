#!/usr/bin/env bash
# Launch records on 2xH200: tests/gpu/run_cupti_check.sh (the probe: API records are launch calls
# only, each kernel with its call), then `rankscope run -- torchrun` on torch_allreduce.py, clean
# and with a 20 ms sleep on rank 1, and check_launch_records.py on both sessions (NCCL kernels
# joined with their cuLaunchKernelEx). Session stores and reports land in $OUT.
# Usage (repo root there): tests/gpu/run_launch_checks.sh device-prefix
set -uo pipefail
source "$(dirname "$0")/device_env.sh" "${1:-device-prefix}"
RUNS=${RUNS:-3} bash "$here/run_cupti_check.sh" "$prefix" "$out/cupti_check" > "$out/cupti.txt" 2>&1
echo "cupti check exit $?" >> "$out/cupti.txt"
s=$(mktemp -d)
for variant in clean sleep; do
  extra=()
  [ "$variant" = sleep ] && extra=(--sleep-rank 1 --sleep-ms 20)
  (cd "$s" && timeout 300 "$prefix/bin/rankscope" run -o "$variant" -- torchrun \
    --nproc_per_node=2 --no-python -- python3 "$here/torch_allreduce.py" --steps 40 \
    "${extra[@]}") > "$out/run-$variant.txt" 2>&1
  echo "rankscope run exit $?" >> "$out/run-$variant.txt"
  python3 "$here/check_launch_records.py" "$s/$variant/session.sqlite" >> "$out/run-$variant.txt" 2>&1
  echo "check_launch_records exit $?" >> "$out/run-$variant.txt"
done
tar -C "$s" -czf "$out/sessions.tar.gz" --exclude=trace.json .
