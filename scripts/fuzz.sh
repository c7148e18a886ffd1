#!/usr/bin/env bash
# The libFuzzer targets of fuzz/ (clang, ASan + UBSan), built into build-fuzz/ and each run over a
# corpus seeded from tests/fixtures. A crash, a leak or an abort fails the script with the input
# libFuzzer saved (build-fuzz/fuzz/crash-*).
#   scripts/fuzz.sh                  each target for FUZZ_SECONDS seconds (default 20; CI)
#   FUZZ_RUNS=1000000 scripts/fuzz.sh --docs docs/fuzzing.md
#                                    each target for that many executions; the counts go to docs
#   FUZZ_PARALLEL=1                  all targets at once;  FUZZ_TARGETS="a b": only these
#   FUZZ_NO_RUN=1 scripts/fuzz.sh --docs F   the table from each target's last run, running none
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FUZZ_BUILD_DIR:-build-fuzz}
docs=""
if [ "${1:-}" = "--docs" ]; then docs=$2; fi
all_targets=(fuzz_nccl_log fuzz_topology fuzz_inject_wire fuzz_rpc fuzz_session_store fuzz_spool
             fuzz_ncu)
# FUZZ_TARGETS="a b": run only these (the docs table still lists every target's last run).
read -r -a targets <<<"${FUZZ_TARGETS:-${all_targets[*]}}"

if [ -n "${FUZZ_NO_RUN:-}" ]; then targets=(); fi
if [ ${#targets[@]} -gt 0 ] && [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DRANKSCOPE_FUZZ=ON -DRANKSCOPE_SANITIZE=ON -DRANKSCOPE_BUILD_TESTS=OFF \
    -DRANKSCOPE_BUILD_BENCH=OFF
fi
[ ${#targets[@]} -eq 0 ] || cmake --build "$build" -j "$(nproc)" --target "${all_targets[@]}"

# Seeds: the real NCCL logs and topology dumps of the fixtures, and their smallest session.
corpus=$build/fuzz/corpus
for t in "${all_targets[@]}"; do mkdir -p "$corpus/$t"; done
# The logs in pieces of 25 lines: whole 20 kB logs run at 170 inputs a second, pieces at thousands.
for f in tests/fixtures/*/nccl*.log; do
  split -l 25 "$f" "$corpus/fuzz_nccl_log/$(basename "$(dirname "$f")")-$(basename "$f" .log)-"
done
cp model/topology/testdata/*.xml "$corpus/fuzz_topology/"
for f in tests/fixtures/*/topo.xml; do cp "$f" "$corpus/fuzz_topology/$(basename "$(dirname "$f")").xml"; done
cp tests/fixtures/h200x2-torchrun-sessions/clean.sqlite "$corpus/fuzz_session_store/"
# A rank's spool kept when `rankscope run` was killed (2 ranks, mpi_train, 150 steps).
cp tests/fixtures/spool/rank0.spool "$corpus/fuzz_spool/"
# Nsight Compute raw pages from one H200, each cut to the columns the analysis reads and a few
# more (a whole row is 60-90 kB).
for f in tests/fixtures/h200-ncu/*.raw.csv; do
  python3 - "$f" "$corpus/fuzz_ncu/$(basename "$f" .raw.csv).csv" <<'PY'
import csv, re, sys
rows = list(csv.reader(open(sys.argv[1])))
keep = [i for i, n in enumerate(rows[0]) if i < 12 or re.search(
    r"duration|dram__bytes|sm__throughput|compute_memory_throughput|warps_active|maximum_warps|"
    r"occupancy_limit|stalled_(long|wait|barrier)|op_f(add|mul|fma)|tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum|"
    r"cycles_elapsed.avg.per_second|lts__t_sectors.sum", n)]
with open(sys.argv[2], "w", newline="") as out:
    csv.writer(out, quoting=csv.QUOTE_ALL).writerows([[r[i] for i in keep] for r in rows])
PY
done

# One target: its log and how long it ran land in build-fuzz/fuzz/TARGET.{log,secs}.
fuzz_one() {
  local t=$1 max_len limit
  limit=(-max_total_time="${FUZZ_SECONDS:-20}")
  [ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
  # -max_len: as large as the seeds (topology dumps to 12 kB, a session 86 kB).
  case $t in
    fuzz_topology) max_len=16384 ;;
    fuzz_session_store) max_len=131072 ;;
    fuzz_spool) max_len=32768 ;;
    fuzz_ncu) max_len=16384 ;;
    *) max_len=4096 ;;
  esac
  local start=$SECONDS status=0
  (cd "$build/fuzz" && "./$t" "${limit[@]}" -max_len=$max_len -timeout=20 -rss_limit_mb=2048 \
     -print_final_stats=1 "corpus/$t" >"$t.log" 2>&1) || status=$?
  echo $((SECONDS - start)) >"$build/fuzz/$t.secs"
  return $status
}

# FUZZ_PARALLEL=1: all targets at once (the slow ones then share the cores).
failed=()
if [ -n "${FUZZ_PARALLEL:-}" ]; then
  pids=()
  for t in "${targets[@]}"; do fuzz_one "$t" & pids+=($!); done
  for i in "${!targets[@]}"; do wait "${pids[$i]}" || failed+=("${targets[$i]}"); done
else
  for t in "${targets[@]}"; do fuzz_one "$t" || failed+=("$t"); done
fi
for t in "${failed[@]}"; do
  tail -40 "$build/fuzz/$t.log" >&2
  echo "fuzz: $t found a problem (input saved in $build/fuzz; log $build/fuzz/$t.log)" >&2
done
[ ${#failed[@]} -eq 0 ] || exit 1

rows=()
for t in "${all_targets[@]}"; do
  [ -f "$build/fuzz/$t.log" ] || continue
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/fuzz/$t.log" | tail -1)
  secs=$(cat "$build/fuzz/$t.secs")
  echo "fuzz: $t: ${runs:-?} executions in ${secs} s, no finding"
  rows+=("| $t | ${runs:-?} | ${secs} | none |")
done

if [ -n "$docs" ]; then
  {
    echo "# Fuzzing"
    echo
    echo "Each target's last run of \`scripts/fuzz.sh\` (here \`FUZZ_RUNS=1000000\`; $(date -u +%Y-%m-%d), $(nproc) cores,"
    echo "$(clang --version | head -1)). Each target is built with libFuzzer, ASan and UBSan"
    echo "(fuzz/CMakeLists.txt) and starts from the seeds scripts/fuzz.sh copies from tests/fixtures."
    echo "CI runs each for 20 s (scripts/test.sh)."
    echo
    echo "| target | what it feeds | executions | seconds | findings |"
    echo "|---|---|---|---|---|"
    for r in "${rows[@]}"; do
      name=$(echo "$r" | cut -d'|' -f2 | tr -d ' ')
      case $name in
        fuzz_nccl_log) what="NCCL debug log parser + its JSON writer (\`inspect nccl-log --json\`)" ;;
        fuzz_topology) what="NCCL topology dump parser + its JSON writer (\`inspect topo --json\`)" ;;
        fuzz_inject_wire) what="inject channel datagram decoder (core/wire.h)" ;;
        fuzz_rpc) what="every gRPC request's decoding; an Upload ingested, assessed and aligned" ;;
        fuzz_session_store) what="session.sqlite loader (sessions and findings)" ;;
        fuzz_spool) what="agent spool reader + the session rebuilt from it (\`report --spools\`)" ;;
        fuzz_ncu) what="Nsight Compute raw-page CSV parser + kernel analysis, text and JSON (\`inspect ncu\`)" ;;
      esac
      echo "| $name | $what${r#"| $name "}"
    done
  } >"$docs"
fi
