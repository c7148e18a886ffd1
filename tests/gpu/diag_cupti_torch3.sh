#!/usr/bin/env bash
# Third step: `rankscope run -- torchrun ...` with one of the agent's additions taken away at a
# time (the user's own setting makes the agent leave that one alone). Usage: PREFIX
set -uo pipefail
prefix=$(cd "${1:-device-prefix}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 NO_COLOR=1
d=$(mktemp -d)
variant() {
  local name=$1; shift
  ( cd "$d" && SECONDS=0 && env "$@" timeout 60 "$prefix/bin/rankscope" run -q -o "$name" -- \
      torchrun --nproc_per_node=2 --no-python -- python3 "$here/torch_allreduce.py" --steps 20 \
      --hang-dump-s 40 > "$d/$name.txt" 2>&1; echo "== $name: exit $? after ${SECONDS}s" )
  grep -E "torch_allreduce:" "$d/$name.txt"
  python3 - "$d/$name/report.json" <<'PY' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))
print("  findings:", [(f["kind"], f["ranks"]) for f in r["findings"]])
print("  collectives:", r["collectives"], "nccl:", bool(r.get("nccl")))
print("  notes:", r["job"].get("notes"), [x["notices"][:3] for x in r["ranks"]])
PY
}
variant no_nccl_env NCCL_DEBUG=WARN
variant cupti_kernels RANKSCOPE_CUPTI_MODE=kernels
variant user_topo NCCL_TOPO_DUMP_FILE=$d/topo.xml
variant no_cupti CUDA_INJECTION64_PATH=$prefix/lib/libabsl_base.so.20220623
