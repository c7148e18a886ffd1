#!/usr/bin/env bash
# NCCL typed on the wire (protocol v3) against a real NCCL, on one H200: a one-process torchrun
# all-reduce under `rankscope run`; check_nccl_typed.py asks report.json and session.sqlite for
# the communicator and the calls as NCCL's own log names them (AllReduce, ncclFloat32, the
# tuning line's algorithm and protocol), read by the agent and sent as enums. Connections and
# their net devices need two GPUs (issue #19).
# Usage (repo root there): tests/gpu/run_nccl_typed_check.sh device-prefix
set -uo pipefail
source "$(dirname "$0")/device_env.sh" "${1:-device-prefix}"
s=$(mktemp -d)
(cd "$s" && timeout 300 "$prefix/bin/rankscope" run -o typed -- torchrun --nproc_per_node=1 \
  "$here/torch_allreduce.py" --steps 10 --mib 64) > "$out/nccl-typed.txt" 2>&1
echo "rankscope run exit $?" >> "$out/nccl-typed.txt"
python3 "$here/check_nccl_typed.py" "$s/typed" >> "$out/nccl-typed.txt" 2>&1
echo "check_nccl_typed exit $?" >> "$out/nccl-typed.txt"
cp "$s/typed/report.json" "$out/nccl-typed-report.json" 2>/dev/null
cat "$out/nccl-typed.txt"
