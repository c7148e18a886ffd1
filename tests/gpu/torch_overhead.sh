#!/usr/bin/env bash
# Steady-state step time of tests/gpu/torch_allreduce.py on 2 GPUs: bare, under rankscope, and
# under torch.profiler (CUDA activities), alternating, in one run. Prints the medians and ratios.
# Modes (MODES, run in this order in each round, rounds alternate): bare; rankscope (whole-run
# CUPTI, default "all"); rankscope_gpu / rankscope_kernels / rankscope_api (--gpu-activity); rankscope_runtime (all, but
# the whole RUNTIME kind instead of the launch calls);
# rankscope_sampled (GPU activity in one step of 10: --capture-every 10); rankscope_nocupti
# (no CUPTI: NVTX, NCCL logs and the agent only); rankscope_nosync (all without the
# SYNCHRONIZATION kind); rankscope_discard (all, but buffers go back to CUPTI unread: CUPTI's own
# cost without ours); torch_profiler (CUDA activities). A mode may repeat in MODES (e.g. bare
# twice, to see the run-to-run noise). PIN=CPUS runs everything under `taskset -c CPUS`.
# Usage: torch_overhead.sh PREFIX [REPEATS] [LOOP ARGS...]   (default loop args: --steps 200
#        --mib 16; add e.g. --small-ops 200 for a launch-bound loop)
set -uo pipefail
prefix=$(cd "${1:-device-prefix}" && pwd)
repeats=${2:-3}
shift 2 2>/dev/null || shift $#
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 NO_COLOR=1
d=$(mktemp -d)
args=(--steps 200 --mib 16 "$@")
modes=(${MODES:-bare rankscope rankscope_sampled torch_profiler})
pin=()
[ -n "${PIN:-}" ] && pin=(taskset -c "$PIN")
rs() {  # rankscope run OPTIONS... -- the loop
  local opts=()
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  (cd "$d" && "${pin[@]}" "$prefix/bin/rankscope" run -q -o "s$i-$mode" "${opts[@]}" -- torchrun \
    --nproc_per_node=2 --no-python -- python3 "$here/torch_allreduce.py" "${args[@]}")
}
for ((i = 0; i < repeats; i++)); do
  for mode in "${modes[@]}"; do
    case $mode in
      bare) "${pin[@]}" torchrun --nproc_per_node=2 "$here/torch_allreduce.py" "${args[@]}" ;;
      rankscope) rs -- ;;
      rankscope_gpu) rs --gpu-activity gpu -- ;;
      rankscope_kernels) rs --gpu-activity kernels -- ;;
      rankscope_api) rs --gpu-activity api -- ;;
      rankscope_runtime) RANKSCOPE_CUPTI_PICK_CALLS=0 rs -- ;;
      rankscope_sampled) rs --capture-every 10 -- ;;
      rankscope_nocupti) RANKSCOPE_CUPTI_PATH=/nonexistent/libcupti.so rs -- ;;
      rankscope_nosync) RANKSCOPE_CUPTI_SYNC=0 rs -- ;;
      rankscope_discard) RANKSCOPE_CUPTI_DISCARD=1 rs -- ;;
      torch_profiler) "${pin[@]}" torchrun --nproc_per_node=2 "$here/torch_allreduce.py" "${args[@]}" \
          --torch-profiler ;;
    esac 2>/dev/null | sed -un "s/^torch_allreduce: .*median step \([0-9.]*\) ms/$mode \1/p" \
      | tee -a "$d/steps.txt"
    rm -rf "$d/s$i-$mode"
  done
done
python3 - "$d/steps.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for mode, ms in rows:
    by.setdefault(mode, []).append(float(ms))
bare = statistics.median(by.get("bare", [float("nan")]))
for mode in by:
    v = by[mode]
    if v:
        m = statistics.median(v)
        print(f"{mode:15s} median step {m:8.3f} ms  x{m / bare:.3f}  runs {v}")
PY
