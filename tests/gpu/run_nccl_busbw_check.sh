#!/usr/bin/env bash
# Issue 3, GPU acceptance 2: `rankscope run -- mpirun -np 2 nccl_allreduce` on 2 GPUs; the bus
# bandwidth rankscope derives per size (report.json nccl.communicators[].shapes[].busbw_gbps)
# must match the benchmark's own timing within 10% for sizes >= 1 MiB (compare_busbw.py).
# Usage (repo root on the GPU machine): tests/gpu/run_nccl_busbw_check.sh device-prefix
# Writes the session folder and the comparison under $OUT (or ./device-out).
set -uo pipefail
prefix=$(cd "${1:-device-prefix}" && pwd)
out=${OUT:-$PWD/device-out}/nccl-busbw
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 NO_COLOR=1
cd "$out"
rm -rf session
timeout 400 "$prefix/bin/rankscope" run -o session -- \
  mpirun --allow-run-as-root --bind-to none -np 2 "$prefix/bin/nccl_allreduce" \
  --min-bytes 8 --max-bytes 256M --iters 50 --warmup 5 --json bench.json > run.log 2>&1
rc=$?
echo "rankscope run exit $rc"
cat run.log | grep -v '^\[' | head -60
[ $rc -eq 0 ] || exit 1
python3 "$here/compare_busbw.py" session/report.json bench.json --min-bytes $((1 << 20)) \
  --tolerance 0.10 | tee compare.txt
exit "${PIPESTATUS[0]}"
