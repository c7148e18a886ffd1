#!/usr/bin/env bash
# rankscope sweep's GPU checks on the GPU machine (issue 6). There is no SLURM there, so the
# sweep runs through --hostfile (one mpirun for this host), at the standard level; then
# check_sweep.py holds every GPU's figures against what the part can do (H200: device-to-device
# copy about 4 TB/s counting read and write, PCIe gen 5 x16, FP32 about 60 TFLOP/s, NVLink
# all-reduce). nvidia-smi's view of the same GPUs goes beside it for comparison.
# Usage (repo root there): tests/gpu/run_sweep_checks.sh device-prefix
set -uo pipefail
source "$(dirname "$0")/device_env.sh" "${1:-device-prefix}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo localhost > "$out/hosts"
nvidia-smi --query-gpu=index,name,pci.bus_id,pcie.link.gen.max,pcie.link.width.max,temperature.gpu,power.draw,power.limit,ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total,clocks_event_reasons.active --format=csv > "$out/nvidia-smi.csv" 2>&1
nvidia-smi nvlink -s > "$out/nvlink.txt" 2>&1
nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT > "$out/remap.txt" 2>&1
for level in quick standard; do
  start=$(date +%s.%N)
  timeout 300 "$prefix/bin/rankscope" sweep --hostfile "$out/hosts" --level "$level" \
    --no-history -o "$out/sweep-$level" > "$out/sweep-$level.txt" 2>&1
  echo "sweep exit $? after $(python3 -c "import time; print(round(time.time() - $start, 1))") s" >> "$out/sweep-$level.txt"
  python3 "$here/check_sweep.py" "$out/sweep-$level/report.json" >> "$out/sweep-$level.txt" 2>&1
  echo "check_sweep exit $?" >> "$out/sweep-$level.txt"
done
# NCCL between a pair of nodes: rankscope-pingpong as the sweep starts it, here two processes of
# this host with one GPU each (as two one-GPU nodes would be).
OMPI_MCA_btl=self,vader,tcp timeout 120 mpirun --allow-run-as-root -np 2 sh -c \
  'CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_RANK exec "$0" --batches 20 --nccl-bytes 268435456' \
  "$prefix/bin/rankscope-pingpong" > "$out/pingpong-nccl.txt" 2>&1
echo "pingpong exit $?" >> "$out/pingpong-nccl.txt"
# Both processes seeing both GPUs: NCCL refuses a GPU twice in one communicator; the pair must
# end with an nccl_error line, not hang.
OMPI_MCA_btl=self,vader,tcp timeout 120 mpirun --allow-run-as-root -np 2 \
  "$prefix/bin/rankscope-pingpong" --batches 5 > "$out/pingpong-nccl-duplicate.txt" 2>&1
echo "pingpong exit $?" >> "$out/pingpong-nccl-duplicate.txt"
