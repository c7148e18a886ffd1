#!/usr/bin/env bash
# Narrows down a hang of torchrun + NCCL with the inject library as CUDA_INJECTION64_PATH:
# the library alone (no agent; bench_ipc_sink plays the agent) in each CUPTI mode, each run
# bounded, with Python stacks dumped if it hangs. Usage: diag_cupti_torch.sh PREFIX
set -uo pipefail
prefix=$(cd "${1:-device-prefix}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
for mode in ${MODES:-kernels gpu all}; do
  sock=$(mktemp -u /tmp/rs-diag.XXXXXX.sock)
  "$prefix/bin/bench_ipc_sink" "$sock" > "/tmp/sink.$mode.txt" 2>&1 &
  sink=$!
  sleep 0.3
  start=$(date +%s.%N)
  CUDA_INJECTION64_PATH="$prefix/lib/librankscope_inject.so" RANKSCOPE_IPC_SOCKET="$sock" \
    RANKSCOPE_CUPTI_MODE=$mode timeout 75 torchrun --nproc_per_node=2 "$here/torch_allreduce.py" \
    --steps 20 --hang-dump-s 45 > "/tmp/run.$mode.txt" 2>&1
  rc=$?
  kill -TERM $sink; wait $sink
  echo "== mode $mode: exit $rc after $(echo "$(date +%s.%N) - $start" | bc) s"
  grep -v "^W1130\|OMP_NUM_THREADS\|\*\*\*\*" "/tmp/run.$mode.txt" | grep -E "torch_allreduce|File|Thread|rankscope|Error|line" | head -30
  tail -3 "/tmp/sink.$mode.txt"
done
