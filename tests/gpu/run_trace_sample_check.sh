#!/usr/bin/env bash
# trace.json's default budget on a real CUPTI-heavy session (one H200 is enough): a one-rank
# PyTorch loop of 300 steps with 2,000 small kernels each (over 1.2 M kernels and launch records)
# under `rankscope run`, then check_trace_sample.py: the trace keeps whole steps under the budget,
# says which, parses as JSON, and its bytes per event; `rankscope report --full-trace` of the same
# session for the whole count. Results land in $OUT.
# Usage (repo root there): tests/gpu/run_trace_sample_check.sh device-prefix
set -uo pipefail
source "$(dirname "$0")/device_env.sh" "${1:-device-prefix}"
s=$(mktemp -d)
(cd "$s" && timeout 400 "$prefix/bin/rankscope" run -o sampled -- torchrun --nproc_per_node=1 \
  --no-python -- python3 "$here/torch_allreduce.py" --steps 300 --small-ops 2000 --mib 16) \
  > "$out/run.txt" 2>&1
echo "rankscope run exit $?" >> "$out/run.txt"
timeout 200 "$prefix/bin/rankscope" report "$s/sampled" -o "$s/full" --full-trace -q \
  >> "$out/run.txt" 2>&1
echo "rankscope report --full-trace exit $?" >> "$out/run.txt"
python3 "$here/check_trace_sample.py" "$s/sampled" "$s/full" > "$out/check.txt" 2>&1
echo "check_trace_sample exit $?" >> "$out/check.txt"
cp "$s/sampled/report.txt" "$out/report.txt" 2>/dev/null
ls -l "$s/sampled" "$s/full" >> "$out/check.txt" 2>&1
