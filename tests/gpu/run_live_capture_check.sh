#!/usr/bin/env bash
# A live finding asks the flight recorder for the raw records around it (issue #16): 4 ranks of
# mpi_gpu_steps share the GPU, rank 1 runs ~10 ms of heavy_stencil a step, under `rankscope run
# --live --raw-gpu-records 2000` (each agent sends 250 compute records whole, then only sums,
# keeping its last 250 in a flight recorder). The live check names rank 1 while the job runs;
# the agents of ranks 1, 0 and 2 then send their flight recorder and the next 250 records whole.
# check_live_capture.py says whether those ranks, and only those, hold raw kernels mid-run.
# Usage (repo root there): tests/gpu/run_live_capture_check.sh device-prefix [STEPS]
set -uo pipefail
source "$(dirname "$0")/device_env.sh" "${1:-device-prefix}"
steps=${2:-2500}
s=$(mktemp -d)
build_mpi_gpu_steps "$s" || exit 1
(cd "$s" && timeout 300 "$prefix/bin/rankscope" run --live --raw-gpu-records 2000 -o live -- \
  mpirun --oversubscribe -np 4 ./mpi_gpu_steps --steps "$steps" --heavy-rank 1 --heavy-ms 10) \
  > "$out/live-run.txt" 2>&1
echo "rankscope run exit $?"
grep -E "live:|straggler|heavy_stencil" "$out/live-run.txt" | head -8
python3 "$here/check_live_capture.py" "$s/live"
rc=$?
cp "$s/live/report.txt" "$out/live-report.txt" 2>/dev/null
cp "$s/live/report.json" "$s/live/session.sqlite" "$out/" 2>/dev/null
rm -rf "$s"
exit $rc
