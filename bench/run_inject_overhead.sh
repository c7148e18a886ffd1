#!/usr/bin/env bash
# run_inject_overhead.sh: what librankscope_inject.so costs the programs it is loaded into.
#
# Runs each benchmark in three modes, rotating their order round by round so the drift of a
# busy machine hits all alike, and prints ns per call (median of every repetition of every
# round), with - without as delta, and with / without as ratio:
#   without  plain program
#   inert    LD_PRELOAD + NVTX_INJECTION64_PATH = the library, RANKSCOPE_IPC_SOCKET unset
#   with     as inert, plus RANKSCOPE_IPC_SOCKET served by bench_ipc_sink, which drains and
#            decodes every batch as the agent would (what the agent sets for a profiled rank)
# Then the job wall time of examples/mpi_train under mpirun in the same modes (median of runs).
#
# usage: bench/run_inject_overhead.sh [--build DIR] [--rounds N] [--reps N] [--mpi-iterations N]
#                                     [--train-runs N] [--train-steps N] [--train-np N]
# Build first: ninja -C DIR bench_nvtx bench_mpi bench_ipc_sink mpi_train rankscope_inject
# Without DIR/lib/librankscope_inject.so only the "without" mode runs.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$REPO/build
ROUNDS=3           # runs of every mode per benchmark
REPS=5             # Google Benchmark repetitions per run
MPI_ITERATIONS=20000
TRAIN_RUNS=5       # mpi_train runs per mode
TRAIN_STEPS=200
TRAIN_NP=4

while [[ $# -gt 0 ]]; do
  case $1 in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --mpi-iterations) MPI_ITERATIONS=$2; shift 2 ;;
    --train-runs) TRAIN_RUNS=$2; shift 2 ;;
    --train-steps) TRAIN_STEPS=$2; shift 2 ;;
    --train-np) TRAIN_NP=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_inject_overhead.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

BIN=$BUILD/bin
LIB=$BUILD/lib/librankscope_inject.so
for exe in bench_nvtx bench_mpi bench_ipc_sink mpi_train; do
  [[ -x $BIN/$exe ]] || { echo "run_inject_overhead.sh: $BIN/$exe missing; build it:" \
    "ninja -C $BUILD bench_nvtx bench_mpi bench_ipc_sink mpi_train" >&2; exit 1; }
done
MODES=(without inert with)
if [[ ! -f $LIB ]]; then
  echo "NOTE: $LIB not built (ninja -C $BUILD rankscope_inject): measuring 'without' only."
  MODES=(without)
fi

# Only the modes decide who carries the library: nothing may leak in from the caller's shell.
unset LD_PRELOAD NVTX_INJECTION64_PATH RANKSCOPE_IPC_SOCKET

# shellcheck source=open_mpi_env.sh
source "$REPO/bench/open_mpi_env.sh"

WORK=$(mktemp -d /tmp/rankscope-inject-bench.XXXXXX)
SOCK=$WORK/ipc.sock
SINK_PID=
cleanup() {
  if [[ -n $SINK_PID ]]; then kill -TERM "$SINK_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# start_sink LABEL / stop_sink: bench_ipc_sink on $SOCK around one "with" run; its summary line
# (records received, dropped, notices) is appended to $WORK/sink.txt under LABEL.
start_sink() {
  SINK_LABEL=$1
  "$BIN/bench_ipc_sink" "$SOCK" > "$WORK/sink.log" 2>&1 &
  SINK_PID=$!
  for _ in $(seq 100); do
    grep -q listening "$WORK/sink.log" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "run_inject_overhead.sh: bench_ipc_sink did not start:" >&2
  cat "$WORK/sink.log" >&2
  exit 1
}
stop_sink() {
  kill -TERM "$SINK_PID"
  wait "$SINK_PID" || true
  SINK_PID=
  grep -v listening "$WORK/sink.log" | sed "s/^/$SINK_LABEL: /" >> "$WORK/sink.txt"
}

# rotated R MODE...: the modes starting at index R mod count, so round by round each mode is
# run first in turn (start-up and drift effects hit all modes alike).
rotated() {
  local start=$1; shift
  local modes=("$@") i
  for (( i = 0; i < ${#modes[@]}; i++ )); do echo "${modes[(start + i) % ${#modes[@]}]}"; done
}

# logged LOG CMD...: runs CMD with stdout and stderr into LOG and its wall time in ms into
# LOGGED_MS; on failure shows LOG and stops.
logged() {
  local log=$1 start; shift
  start=$(date +%s%N)
  if ! "$@" > "$log" 2>&1; then
    echo "run_inject_overhead.sh: failed: $*" >&2
    cat "$log" >&2
    exit 1
  fi
  LOGGED_MS=$(( ($(date +%s%N) - start) / 1000000 ))
}

# mode_env MODE: the environment a rank gets in MODE, one NAME=VALUE per line.
#   without  nothing
#   inert    the library loaded, no socket: what a rank pays while rankscope is not capturing
#   with     the library loaded and sending to bench_ipc_sink: what a profiled rank pays
mode_env() {
  case $1 in
    inert) printf '%s\n' "LD_PRELOAD=$LIB" "NVTX_INJECTION64_PATH=$LIB" ;;
    with) printf '%s\n' "LD_PRELOAD=$LIB" "NVTX_INJECTION64_PATH=$LIB" "RANKSCOPE_IPC_SOCKET=$SOCK" ;;
  esac
}

# run_in_mode MODE LABEL LOG [mpirun -np N | plain] CMD...: runs CMD in MODE's environment (set
# through `mpirun -x` for MPI jobs), with a sink around it in mode "with"; output into LOG.
run_in_mode() {
  local mode=$1 label=$2 log=$3 launcher=$4; shift 4
  local env_vars x_flags=() var
  mapfile -t env_vars < <(mode_env "$mode")
  for var in "${env_vars[@]}"; do x_flags+=(-x "$var"); done
  if [[ $mode == with ]]; then start_sink "$label"; fi
  if [[ $launcher == plain ]]; then
    logged "$log" env "${env_vars[@]}" "$@"
  else
    logged "$log" "${MPIRUN[@]}" -np "$launcher" "${x_flags[@]}" "$@"
  fi
  if [[ $mode == with ]]; then stop_sink; fi
}

# run_bench NAME MODE ROUND: one Google Benchmark run, JSON into $WORK/NAME.MODE.ROUND.json.
run_bench() {
  local name=$1 mode=$2 round=$3
  local base=$WORK/$name.$mode.$round
  local flags=(--benchmark_repetitions="$REPS" --benchmark_out="$base.json"
               --benchmark_out_format=json)
  local label="bench_$name round $((round + 1))"
  case $name in
    nvtx) run_in_mode "$mode" "$label" "$base.log" plain "$BIN/bench_nvtx" "${flags[@]}" ;;
    mpi) run_in_mode "$mode" "$label" "$base.log" 2 \
           "$BIN/bench_mpi" --iterations="$MPI_ITERATIONS" "${flags[@]}" ;;
  esac
}

# run_train MODE RUN: one mpi_train job; appends "MODE job_ms loop_seconds checksum" to
# $WORK/train.tsv. Job time is mpirun start to exit (launch + MPI_Init + loop + teardown).
run_train() {
  local mode=$1 run=$2
  local out=$WORK/train.out loop checksum
  run_in_mode "$mode" "mpi_train run $((run + 1))" "$out" "$TRAIN_NP" \
    "$BIN/mpi_train" --steps "$TRAIN_STEPS" --quiet
  cat "$out" >> "$WORK/train.$mode.log"
  loop=$(sed -n 's/^mpi_train: .*wall \([0-9.]*\) s$/\1/p' "$out")
  checksum=$(sed -n 's/^mpi_train: .*checksum \([0-9a-f]*\),.*/\1/p' "$out")
  echo "$mode $LOGGED_MS ${loop:-nan} ${checksum:-none}" >> "$WORK/train.tsv"
}

# ---------------------------------------------------------------------------------------------
# End to end: the whole product around the same job, `rankscope run -o DIR -- mpirun ...`
# (embedded coordinator, an agent per rank, clock sync, analyses and all five output files).
# JOB_MS therefore includes writing the report; LOOP_S is the program's own timed loop.
run_train_with_rankscope() {
  local run=$1
  local out=$WORK/train.out loop checksum
  logged "$out" "$BIN/rankscope" run -q -o "$WORK/session" -- \
    "${MPIRUN[@]}" -np "$TRAIN_NP" "$BIN/mpi_train" --steps "$TRAIN_STEPS" --quiet
  cat "$out" >> "$WORK/train.rankscope.log"
  loop=$(sed -n 's/^mpi_train: .*wall \([0-9.]*\) s$/\1/p' "$out")
  checksum=$(sed -n 's/^mpi_train: .*checksum \([0-9a-f]*\),.*/\1/p' "$out")
  echo "rankscope $LOGGED_MS ${loop:-nan} ${checksum:-none}" >> "$WORK/train.tsv"
}
TRAIN_MODES=("${MODES[@]}")
[[ -x $BIN/rankscope ]] && TRAIN_MODES+=(rankscope)
# ---------------------------------------------------------------------------------------------

echo "build: $BUILD   rounds: $ROUNDS x $REPS repetitions   host: $(nproc) cores"
for bench in nvtx mpi; do
  for (( round = 0; round < ROUNDS; round++ )); do
    for mode in $(rotated "$round" "${MODES[@]}"); do
      echo "  bench_$bench $mode (round $((round + 1))/$ROUNDS)"
      run_bench "$bench" "$mode" "$round"
    done
  done
done
for (( run = 0; run < TRAIN_RUNS; run++ )); do
  for mode in $(rotated "$run" "${TRAIN_MODES[@]}"); do
    echo "  mpi_train $mode (run $((run + 1))/$TRAIN_RUNS)"
    if [[ $mode == rankscope ]]; then run_train_with_rankscope "$run"; else run_train "$mode" "$run"; fi
  done
done

python3 - "$WORK" "$TRAIN_NP" "$TRAIN_STEPS" <<'PY'
import glob, json, os, statistics, sys

work, train_np, train_steps = sys.argv[1], sys.argv[2], sys.argv[3]

def table(title, rows, fmt):
    """rows: (label, {mode: [values]}); prints medians per mode, then with - without and ratio."""
    print(f"\n== {title} ==")
    print(f"{'':<22}{'without':>11}{'inert':>11}{'with':>11}{'delta':>11}{'ratio':>8}")
    for label, by_mode in rows:
        med = {m: statistics.median(v) for m, v in by_mode.items() if v}
        cells = [fmt.format(med[m]) if m in med else "-" for m in ("without", "inert", "with")]
        delta = ratio = "-"
        if "with" in med and "without" in med:
            delta = fmt.format(med["with"] - med["without"])
            ratio = f"{med['with'] / med['without']:.2f}x" if med["without"] > 0 else "inf"
        print(f"{label:<22}" + "".join(f"{c:>11}" for c in cells) + f"{delta:>11}{ratio:>8}")
        for mode in sorted(set(med) - {"without", "inert", "with"}):  # e.g. "rankscope"
            print(f"{'  ' + mode:<22}{fmt.format(med[mode]):>11}")

# Per-call cost: every repetition of every round (the JSON's "iteration" runs).
times = {}
for path in sorted(glob.glob(os.path.join(work, "*.json"))):
    mode = os.path.basename(path).split(".")[1]
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "iteration":
            scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
            times.setdefault(b["name"].split("/")[0], {}).setdefault(mode, []).append(
                b["real_time"] * scale)
table("ns per call, median of every repetition", times.items(), "{:.2f}")

# mpi_train wall time.
job, loop, checksums = {}, {}, set()
for line in open(os.path.join(work, "train.tsv")):
    mode, job_ms, loop_s, checksum = line.split()
    job.setdefault(mode, []).append(int(job_ms) / 1000)
    loop.setdefault(mode, []).append(float(loop_s))
    checksums.add(checksum)
table(f"mpi_train -np {train_np} --steps {train_steps}: seconds, median of "
      f"{len(job['without'])} runs per mode",
      [("job wall (mpirun)", job), ("loop wall (rank 0)", loop)], "{:.3f}")
print("checksums:", "identical" if len(checksums) == 1 else "DIFFER " + " ".join(sorted(checksums)))

sink = os.path.join(work, "sink.txt")
if os.path.exists(sink):
    print("\n== what bench_ipc_sink received during the 'with' runs ==")
    lines = open(sink).read().splitlines()
    print("\n".join(lines))
    if all(" 0 records" in l for l in lines if "records" in l):
        print("WARNING: the library sent no records: the 'with' column measured it inert.")
PY

# Anything the library itself printed in the "with" runs (it should say why if it disabled itself).
if compgen -G "$WORK/*.with*.log" > /dev/null; then
  grep -ih rankscope "$WORK"/*.with*.log | sort | uniq -c | head -20 | sed 's/^/  stderr: /' || true
fi
