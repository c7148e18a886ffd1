#!/usr/bin/env bash
# Second step of diag_cupti_torch.sh: which of the agent's settings hangs torchrun + NCCL +
# CUPTI. Each variant bounded; Python stacks dumped after 45 s. Usage: PREFIX
set -uo pipefail
prefix=$(cd "${1:-device-prefix}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 NO_COLOR=1
lib=$prefix/lib/librankscope_inject.so
d=$(mktemp -d)
run_variant() {
  local name=$1; shift
  local sock=$d/$name.sock
  "$prefix/bin/bench_ipc_sink" "$sock" > "$d/sink.$name" 2>&1 &
  local sink=$!
  sleep 0.3
  SECONDS=0
  env RANKSCOPE_IPC_SOCKET="$sock" "$@" timeout 75 torchrun --nproc_per_node=2 \
    "$here/torch_allreduce.py" --steps 20 --hang-dump-s 45 > "$d/run.$name" 2>&1
  echo "== $name: exit $? after ${SECONDS}s"
  kill -TERM $sink; wait $sink
  grep -E "torch_allreduce:|File \"|Thread|Error" "$d/run.$name" | grep -v "elastic\|run.py" | head -24
  tail -1 "$d/sink.$name"
}
nccl_env=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL,GRAPH,TUNING,ENV NCCL_DEBUG_FILE=$d/nccl.%p.log)
run_variant cuda_nvtx_nccl CUDA_INJECTION64_PATH=$lib NVTX_INJECTION64_PATH=$lib "${nccl_env[@]}"
run_variant all_preload CUDA_INJECTION64_PATH=$lib NVTX_INJECTION64_PATH=$lib LD_PRELOAD=$lib "${nccl_env[@]}"
echo "== rankscope run"
( cd "$d" && SECONDS=0 && timeout 90 "$prefix/bin/rankscope" run -o full -- torchrun \
    --nproc_per_node=2 --no-python -- python3 "$here/torch_allreduce.py" --steps 20 \
    --hang-dump-s 45 > "$d/full.txt" 2>&1; echo "exit $? after ${SECONDS}s" )
grep -E "torch_allreduce:|File \"|Thread|Error|rankscope" "$d/full.txt" | grep -v "elastic\|run.py" | head -40
