#!/usr/bin/env bash
# `rankscope run --ncu-rank` with the real ncu on the GPU machine: mpi_gpu_steps on 4 ranks
# sharing the GPU, rank 1 running ~10 ms of heavy_stencil a step.
#   heavy          no ncu: the straggler (rank 1, heavy_stencil) and its planned next step
#   heavy-ncu      --ncu-rank 1 --ncu-kernel heavy_stencil --ncu-skip 10: the report in the
#                  session folder, the straggler's chain ending with heavy_stencil's verdict
#   clean-ncu      no heavy rank, --ncu-rank 0 (any kernel): what ncu's replay of one launch
#                  does to a clean run's findings
# Prints each run's wall time and exit code, and what check_ncu_rank.py finds; the reports come
# back in $OUT. Usage (repo root there): tests/gpu/run_ncu_rank_check.sh device-prefix [STEPS]
set -uo pipefail
source "$(dirname "$0")/device_env.sh" "${1:-device-prefix}"
steps=${2:-200}
s=$(mktemp -d)
build_mpi_gpu_steps "$s" || exit 1
ncu --version | tail -1
status=0
for variant in heavy heavy-ncu clean-ncu; do
  options=()
  extra=(--heavy-rank 1 --heavy-ms 10)
  case $variant in
    heavy-ncu) options=(--ncu-rank 1 --ncu-kernel heavy_stencil --ncu-skip 10) ;;
    clean-ncu) options=(--ncu-rank 0 --ncu-skip 10); extra=() ;;
  esac
  start=$(date +%s%N)
  (cd "$s" && timeout 400 "$prefix/bin/rankscope" run -q "${options[@]}" -o "$variant" -- \
    mpirun --oversubscribe -np 4 ./mpi_gpu_steps --steps "$steps" "${extra[@]}") \
    > "$out/$variant-run.txt" 2>&1
  rc=$?
  echo "$variant: rankscope run exit $rc in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  ls "$s/$variant" | tr '\n' ' '; echo
  python3 "$here/check_ncu_rank.py" "$s/$variant" "$variant" || status=1
  cp "$s/$variant/report.txt" "$out/$variant-report.txt" 2>/dev/null
  cp "$s/$variant/report.json" "$out/$variant-report.json" 2>/dev/null
done
cp "$s/heavy-ncu/session.sqlite" "$out/heavy-ncu-session.sqlite" 2>/dev/null
cp "$s/heavy-ncu/rank1_kernel.ncu-rep" "$out/" 2>/dev/null
rm -rf "$s"
exit $status
