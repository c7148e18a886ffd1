#!/usr/bin/env bash
# The agent's GPU summaries on a live MPI + CUDA job (one GPU, ranks sharing it): builds
# mpi_gpu_steps.cu, runs it under `rankscope run` clean and with rank 1 running ~10 ms of
# heavy_stencil a step, and checks each session with check_gpu_stats.py (per-window sums, launch
# latency, and every collective gap's kernel time per name from the agent's pieces against the
# records), then says whether the straggler finding names rank 1 and heavy_stencil (read from
# the pieces: report.json's evidence) and that the clean run has none. A third run, heavy with
# --raw-gpu-records 2000, has its agents send compute kernels only summed after their 500
# records (model/gpu/compute_thinning.h): the same finding from the summaries alone.
# Usage (repo root there): tests/gpu/run_pieces_check.sh device-prefix [STEPS]
set -uo pipefail
source "$(dirname "$0")/device_env.sh" "${1:-device-prefix}"
steps=${2:-300}
s=$(mktemp -d)
build_mpi_gpu_steps "$s" || exit 1
for variant in clean heavy heavy-thinned; do
  extra=()
  options=()
  [ "$variant" != clean ] && extra=(--heavy-rank 1 --heavy-ms 10)
  [ "$variant" = heavy-thinned ] && options=(--raw-gpu-records 2000)
  (cd "$s" && timeout 300 "$prefix/bin/rankscope" run -q "${options[@]}" -o "$variant" -- \
    mpirun --oversubscribe -np 4 ./mpi_gpu_steps --steps "$steps" "${extra[@]}") \
    > "$out/$variant-run.txt" 2>&1
  echo "$variant: rankscope run exit $?"
  if [ "$variant" = heavy-thinned ]; then
    python3 -c 'import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); q = lambda s: db.execute(s).fetchone()[0]; print("gpu_activity rows", q("SELECT COUNT(*) FROM gpu_activity"), "of", q("SELECT SUM(count) FROM gpu_stats WHERE kind IN (1, 5)"), "kernels and runtime calls; ranks summed", q("SELECT COUNT(*) FROM rank_gpu_summary WHERE compute_kernels_summed"))' \
      "$s/$variant/session.sqlite" 2>&1 | sed "s/^/  $variant: /"
  else
    python3 "$here/check_gpu_stats.py" "$s/$variant" 2>&1 | grep -v "^launch latency rank" \
      | tail -8 | sed "s/^/  $variant: /"
  fi
  python3 - "$s/$variant/report.json" "$variant" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
found = [f for f in r.get("findings", []) if "straggler" in f.get("kind", "")]
for f in found:
    text = json.dumps(f)
    print(f"  {sys.argv[2]}: finding {f['kind']} ranks {f.get('ranks')} confidence "
          f"{f.get('confidence')}; names heavy_stencil: {'heavy_stencil' in text}")
if not found:
    print(f"  {sys.argv[2]}: no straggler finding")
PY
  grep -m3 -iE "straggler|heavy_stencil|No problems" "$s/$variant/report.txt" | sed "s/^/  $variant: /"
  cp "$s/$variant/report.txt" "$out/$variant-report.txt" 2>/dev/null
  cp "$s/$variant/session.sqlite" "$out/$variant-session.sqlite" 2>/dev/null
done
rm -rf "$s"
