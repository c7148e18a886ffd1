#!/usr/bin/env bash
# run_inject_ab.sh: two builds of librankscope_inject.so side by side, each loaded by the real
# agent under `rankscope run` (so the control page, the live check's open-call slots and the
# uplink are all there, unlike run_inject_overhead.sh's sink), on bench_mpi's benchmarks.
#
# Rounds alternate A and B (A first in odd rounds, B first in even ones) so the drift of a busy
# machine hits both alike. Prints each round's median ns per call and, per benchmark, the median
# over rounds and B - A.
#
# usage: bench/run_inject_ab.sh --lib-a A.so --lib-b B.so [--build DIR] [--rounds N] [--reps N]
#                               [--iterations N] [--np N] [--filter REGEX]
# Build first: ninja -C DIR rankscope bench_mpi rankscope_inject (the agent and bench_mpi come
# from DIR; only the library loaded into the ranks differs, through RANKSCOPE_INJECT_LIB).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$REPO/build
LIB_A=
LIB_B=
ROUNDS=4
REPS=3
ITERATIONS=20000
NP=2
FILTER='BM_Mpi(AllreduceInt|TestPending)'

while [[ $# -gt 0 ]]; do
  case $1 in
    --lib-a) LIB_A=$(realpath "$2"); shift 2 ;;
    --lib-b) LIB_B=$(realpath "$2"); shift 2 ;;
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --iterations) ITERATIONS=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    --filter) FILTER=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_inject_ab.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for lib in "$LIB_A" "$LIB_B"; do
  [[ -n $lib && -f $lib ]] || { echo "run_inject_ab.sh: --lib-a and --lib-b must name" \
    "built libraries (got '$lib')" >&2; exit 2; }
done
for exe in rankscope bench_mpi; do
  [[ -x $BUILD/bin/$exe ]] || { echo "run_inject_ab.sh: $BUILD/bin/$exe missing; build it:" \
    "ninja -C $BUILD $exe" >&2; exit 1; }
done

# shellcheck source=open_mpi_env.sh
source "$REPO/bench/open_mpi_env.sh"

WORK=$(mktemp -d /tmp/rankscope-inject-ab.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# run_one LABEL LIB ROUND: one `rankscope run` of bench_mpi with LIB in the ranks.
run_one() {
  local label=$1 lib=$2 round=$3
  RANKSCOPE_INJECT_LIB=$lib "$BUILD/bin/rankscope" run --quiet -o "$WORK/session-$label-$round" \
    -- "${MPIRUN[@]}" -np "$NP" "$BUILD/bin/bench_mpi" --iterations="$ITERATIONS" \
    --benchmark_filter="$FILTER" --benchmark_repetitions="$REPS" \
    --benchmark_out="$WORK/$label-$round.json" --benchmark_out_format=json >/dev/null
}

for ((round = 1; round <= ROUNDS; round++)); do
  if ((round % 2)); then order=(A B); else order=(B A); fi
  for label in "${order[@]}"; do
    if [[ $label == A ]]; then run_one A "$LIB_A" "$round"; else run_one B "$LIB_B" "$round"; fi
  done
done

python3 - "$WORK" "$ROUNDS" "$LIB_A" "$LIB_B" <<'EOF'
import json, statistics, sys
work, rounds, lib_a, lib_b = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def medians(label, r):
    """benchmark name -> median real ns per iteration over the run's repetitions."""
    with open(f"{work}/{label}-{r}.json") as f:
        runs = json.load(f)["benchmarks"]
    by = {}
    for b in runs:
        if b.get("run_type") == "iteration":
            by.setdefault(b["run_name"], []).append(b["real_time"])
    return {k: statistics.median(v) for k, v in by.items()}
print(f"A = {lib_a}\nB = {lib_b}")
per = {"A": [medians("A", r) for r in range(1, rounds + 1)],
       "B": [medians("B", r) for r in range(1, rounds + 1)]}
for name in sorted(per["A"][0]):
    a = [m[name] for m in per["A"]]
    b = [m[name] for m in per["B"]]
    print(f"{name}: A " + " ".join(f"{x:.1f}" for x in a) + " ns, B " +
          " ".join(f"{x:.1f}" for x in b) + " ns (each round's median of its repetitions)")
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{name}: median A {ma:.1f} ns, B {mb:.1f} ns, B - A {mb - ma:+.1f} ns ({mb / ma:.3f}x)")
EOF
