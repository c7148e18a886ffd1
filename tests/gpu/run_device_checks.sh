#!/usr/bin/env bash
# Checks rankscope on the GPU machine (2xH200, see ../shared/TESTBED.md), in one call:
#   1. the job wall time of examples' mpi_train with and without rankscope (issue 2's < 2%),
#      on a quiet 32-core machine (bench/run_inject_overhead.sh);
#   2. `rankscope run -- torchrun --nproc_per_node=2 --no-python -- python3 torch_allreduce.py`
#      clean and with a 20 ms sleep on rank 1, keeping the session folders;
#   3. a capture of real NCCL logs + topology dump written where the user asked (agent reads
#      the user's files), kept as fixtures;
#   4. tests/gpu/run_cupti_check.sh if present.
# Usage (from the repo root there): tests/gpu/run_device_checks.sh device-prefix
# Binaries come from scripts/device-bundle.sh run here; results go to $OUT (or ./device-out).
set -uo pipefail
prefix=$(cd "${1:-device-prefix}" && pwd)
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 NO_COLOR=1
here=$(cd "$(dirname "$0")" && pwd)
log=$out/log.txt
: > "$log"
say() { echo "== $*" | tee -a "$log"; }

say "machine"
{ nvidia-smi -L; nproc; mpirun --version | head -1; python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.device_count(), "GPUs")'; } >> "$log" 2>&1

if [ "${SKIP_OVERHEAD:-0}" != 1 ]; then
  say "1. mpi_train with/without rankscope"
  bash "$here/../../bench/run_inject_overhead.sh" --build "$prefix" --rounds 2 --reps 3 \
    --train-runs 5 --train-steps 300 --train-np 4 > "$out/overhead.txt" 2>&1
  echo "overhead script exit $?" >> "$log"
fi

say "2. torchrun under rankscope"
sessions=$(mktemp -d)
for variant in clean sleep; do
  extra=()
  [ "$variant" = sleep ] && extra=(--sleep-rank 1 --sleep-ms 20)
  ( cd "$sessions" && timeout 300 "$prefix/bin/rankscope" run -o "$variant" -- \
      torchrun --nproc_per_node=2 --no-python -- python3 "$here/torch_allreduce.py" \
      --steps 40 "${extra[@]}" ) >> "$log" 2>&1
  echo "rankscope run ($variant) exit $?" >> "$log"
done

say "3. real NCCL logs where the user asked for them"
fixtures=$sessions/fixtures
mkdir -p "$fixtures"
( cd "$sessions" && NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL,GRAPH,TUNING,ENV \
    NCCL_DEBUG_FILE="$fixtures/nccl.%h.%p.log" NCCL_TOPO_DUMP_FILE="$fixtures/topo.xml" \
    timeout 300 "$prefix/bin/rankscope" run -o user-files -- \
    torchrun --nproc_per_node=2 --no-python -- python3 "$here/torch_allreduce.py" --steps 10 \
    --mib 16 ) >> "$log" 2>&1
echo "rankscope run (user files) exit $?" >> "$log"
tar -C "$sessions" -czf "$out/sessions.tar.gz" . 2>> "$log"

if [ -x "$here/run_cupti_check.sh" ]; then
  say "4. CUPTI"
  bash "$here/run_cupti_check.sh" "$prefix" > "$out/cupti.txt" 2>&1
  echo "cupti check exit $?" >> "$log"
fi
say "done"
