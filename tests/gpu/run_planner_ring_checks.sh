#!/usr/bin/env bash
# Issue 4 on 2xH200, live: (1) a GPU-side straggler (torch_allreduce.py, 8 extra matmuls on
# rank 1) is found with its kernels, and the planner's next steps name a real kernel for ncu and
# a chain that `rankscope advise ... --rank 1` answers; (2) nccl_allreduce over NVLink (P2P) and
# (3) over SHM (NCCL_P2P_DISABLE=1) against their link ceilings: check_planner_ring.py prints
# every communicator's busbw per size against the ceiling and says whether a ring finding came.
# Usage (repo root there): tests/gpu/run_planner_ring_checks.sh device-prefix
set -uo pipefail
source "$(dirname "$0")/device_env.sh" "${1:-device-prefix}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
s=$(mktemp -d)
(cd "$s" && timeout 300 "$prefix/bin/rankscope" run -o straggler -- torchrun --nproc_per_node=2 \
  --no-python -- python3 "$here/torch_allreduce.py" --steps 60 --slow-gpu-rank 1 \
  --extra-matmuls 8) > "$out/straggler.txt" 2>&1
echo "rankscope run exit $?" >> "$out/straggler.txt"
for variant in p2p shm; do
  env=()
  [ "$variant" = shm ] && env=(-x NCCL_P2P_DISABLE=1)
  (cd "$s" && timeout 300 "$prefix/bin/rankscope" run -o "$variant" -- mpirun --bind-to none \
    -np 2 "${env[@]}" "$prefix/bin/nccl_allreduce" --min-bytes 1M --max-bytes 512M --iters 20 \
    --warmup 5 --json "$variant.json") > "$out/$variant.txt" 2>&1
  echo "rankscope run exit $?" >> "$out/$variant.txt"
done
python3 "$here/check_planner_ring.py" "$prefix/bin/rankscope" "$s" > "$out/check.txt" 2>&1
echo "check_planner_ring exit $?" >> "$out/check.txt"
tar -C "$s" -czf "$out/sessions.tar.gz" --exclude=trace.json --exclude=session.sqlite .
