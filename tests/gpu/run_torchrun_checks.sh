#!/usr/bin/env bash
# torchrun forms on 2xH200 (issue 5): `rankscope run -- torchrun ... script.py` in the implicit
# form (rankscope adds --no-python and torchrun's own python), `python3 -m torch.distributed.run`,
# and an elastic restart: rank 1 fails at step 5 of the first attempt, torchrun --max-restarts 1
# restarts both workers, and check_attempts.py requires report.json to keep attempt 0 apart
# (rank 1 exit code 3) with the last attempt analysed (2 ranks, restart_count 1, collectives).
# Usage (repo root there): tests/gpu/run_torchrun_checks.sh device-prefix
set -uo pipefail
source "$(dirname "$0")/device_env.sh" "${1:-device-prefix}"
s=$(mktemp -d)
run() {  # NAME COMMAND...
  local name=$1
  shift
  (cd "$s" && timeout 300 "$prefix/bin/rankscope" run -o "$name" -- "$@") > "$out/$name.txt" 2>&1
  echo "rankscope run exit $?" >> "$out/$name.txt"
}
run implicit torchrun --nproc_per_node=2 "$here/torch_allreduce.py" --steps 30
run module python3 -m torch.distributed.run --nproc_per_node 2 "$here/torch_allreduce.py" \
  --steps 30
run restart torchrun --nproc_per_node=2 --max-restarts 1 "$here/torch_allreduce.py" --steps 30 \
  --fail-rank 1 --fail-step 5
for name in implicit module restart; do
  python3 "$here/check_attempts.py" "$s/$name/report.json" "$name" >> "$out/$name.txt" 2>&1
  echo "check_attempts exit $?" >> "$out/$name.txt"
done
tar -C "$s" -czf "$out/torchrun-sessions.tar.gz" --exclude=trace.json .
