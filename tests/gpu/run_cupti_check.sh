#!/usr/bin/env bash
# run_cupti_check.sh: proves librankscope_inject.so's CUPTI activity capture on a GPU machine.
#
# Builds tests/gpu/cupti_probe.cu with nvcc, runs it under the library (CUDA_INJECTION64_PATH and
# NVTX_INJECTION64_PATH) with bench_ipc_sink playing the agent, and checks what arrived against
# what the probe did:
#   - kernel, memcpy, memset, synchronization and runtime records all arrive, none dropped,
#     no notices (nothing disabled itself)
#   - every probe kernel arrives (4 per step + 1 final, which only the exit flush can deliver),
#     named probe_axpy / probe_scale, with the probe's grid and block
#   - memcpy directions and byte counts match (2 x H2D, 1 x D2H, 1 memset, 16 MiB each)
#   - every GPU time lies inside the probe's host window on CLOCK_MONOTONIC, and every kernel of
#     step i inside step i's host window: proof that CUPTI's timestamp callback put GPU times on
#     the host clock (CUPTI's default, CLOCK_REALTIME, would be off by decades)
#   - each kernel's correlation id matches a cudaLaunchKernel runtime record (launch latency)
#   - a run that ends in exit() from a second thread still delivers the last kernel and copy
# and measures overhead: the probe's launch-bound step loop bare, under capture (mode all), under
# capture in kernels-only mode, and with NVTX injection alone, interleaved, median of RUNS each.
#
# The checks themselves are in cupti_check.py (next to this script), which writes summary.txt and
# summary.json.
#
# Needs only bash, python3, nvcc and the two prebuilt binaries (no gRPC, no network):
#   BUILD_DIR/lib/librankscope_inject.so   BUILD_DIR/bin/bench_ipc_sink
# Build them where the toolchain is (ninja -C BUILD_DIR rankscope_inject bench_ipc_sink), carry
# BUILD_DIR to the GPU machine, then:
#
#   tests/gpu/run_cupti_check.sh BUILD_DIR [OUT_DIR]
#
# OUT_DIR defaults to $OUT/cupti_check when $OUT is set (the device tool), else ./cupti-check-out.
# Environment: STEPS (default 2000), RUNS (default 3), NVCC (default nvcc on PATH, else
# /usr/local/cuda/bin/nvcc), NVCC_ARCH (default sm_90, H100/H200).
# Exit status: 0 when every check passes, 1 when one fails, 2 on a usage or setup error.
set -euo pipefail

usage() { echo "usage: $0 BUILD_DIR [OUT_DIR]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=$(cd "$1" && pwd) || usage
if [[ $# -eq 2 ]]; then
  RESULTS=$2
elif [[ -n "${OUT:-}" ]]; then
  RESULTS=$OUT/cupti_check
else
  RESULTS=./cupti-check-out
fi
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
STEPS=${STEPS:-2000}
RUNS=${RUNS:-3}
NVCC_ARCH=${NVCC_ARCH:-sm_90}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}

LIB=$BUILD/lib/librankscope_inject.so
SINK=$BUILD/bin/bench_ipc_sink
for f in "$LIB" "$SINK" "$NVCC"; do
  [[ -x "$f" || -f "$f" ]] || { echo "$0: missing $f" >&2; exit 2; }
done

WORK=$(mktemp -d /tmp/rs-cupti.XXXXXX)
SINK_PID=""
cleanup() {
  if [[ -n "$SINK_PID" ]]; then kill "$SINK_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

log() { echo "run_cupti_check: $*" | tee -a "$RESULTS/log.txt" >&2; }
: > "$RESULTS/log.txt"

log "building the probe: $NVCC -arch=$NVCC_ARCH"
"$NVCC" -O2 -std=c++17 -arch="$NVCC_ARCH" -o "$WORK/cupti_probe" "$HERE/cupti_probe.cu" -ldl \
  2>&1 | tee -a "$RESULTS/log.txt"
[[ -x "$WORK/cupti_probe" ]] || { log "nvcc failed"; exit 2; }

{
  echo "host: $(hostname)  kernel: $(uname -r)"
  nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null || true
  "$NVCC" --version | tail -1
} > "$RESULTS/machine.txt"

# start_sink TSV: bench_ipc_sink on a fresh socket, writing GPU records to TSV.
start_sink() {
  SOCK=$WORK/agent.sock
  rm -f "$SOCK" "$WORK/sink.log"
  "$SINK" "$SOCK" --gpu-tsv "$1" > "$WORK/sink.log" 2>&1 &
  SINK_PID=$!
  for _ in $(seq 100); do
    grep -q "listening" "$WORK/sink.log" 2>/dev/null && return 0
    sleep 0.05
  done
  log "bench_ipc_sink did not start: $(cat "$WORK/sink.log")"
  exit 2
}
stop_sink() {
  kill -TERM "$SINK_PID"
  wait "$SINK_PID" || true
  SINK_PID=""
}

# probe LABEL [ENV...]: one probe run; stdout to $WORK/LABEL.out, wall ns appended to it.
probe() {
  local label=$1
  shift
  local t0 t1
  t0=$(date +%s%N)
  env "$@" "$WORK/cupti_probe" --steps "$STEPS" --steps-file "$WORK/$label.steps" \
    --exit-from-thread "${EXIT_FROM_THREAD:-0}" > "$WORK/$label.out" 2> "$WORK/$label.err" || {
    log "probe run $label failed: $(cat "$WORK/$label.err")"
    exit 1
  }
  t1=$(date +%s%N)
  echo "probe: wall_ns=$((t1 - t0))" >> "$WORK/$label.out"
}

# captured LABEL MODE: one probe run under the library with the sink; keeps the sink's output.
# MODE is a RANKSCOPE_CUPTI_MODE, or "nvtx" for NVTX injection alone (no CUPTI).
captured() {
  local label=$1 mode=$2
  local cuda=(CUDA_INJECTION64_PATH="$LIB" RANKSCOPE_CUPTI_MODE="$mode")
  [[ $mode == nvtx ]] && cuda=()
  start_sink "$WORK/$label.tsv"
  probe "$label" "${cuda[@]}" NVTX_INJECTION64_PATH="$LIB" RANKSCOPE_IPC_SOCKET="$SOCK"
  stop_sink
  cp "$WORK/sink.log" "$WORK/$label.sink"
}

# Warm-up (JIT caches, driver load) so the first measured run is not an outlier.
probe warmup
for i in $(seq "$RUNS"); do
  log "round $i of $RUNS: bare, captured (all), captured (kernels), NVTX only"
  probe "bare$i"
  captured "all$i" all
  captured "kernels$i" kernels
  captured "nvtx$i" nvtx
done
# The last records must also arrive when the program calls exit() from another thread.
log "one more captured run (all) ending in exit() from a second thread"
EXIT_FROM_THREAD=1 captured "threadexit1" all

grep -h "rankscope" "$WORK"/*.err > "$RESULTS/library_stderr.txt" 2>/dev/null || true

status=0
python3 "$HERE/cupti_check.py" "$WORK" "$RESULTS" "$RUNS" || status=$?
gzip -c "$WORK/all1.tsv" > "$RESULTS/gpu_records_all1.tsv.gz"
cp "$WORK/all1.out" "$WORK/all1.sink" "$RESULTS/" 2>/dev/null || true
exit $status
