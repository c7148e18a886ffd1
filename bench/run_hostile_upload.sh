#!/usr/bin/env bash
# Peak resident memory of a stand-alone coordinator before and after CLIENTS unauthenticated
# uploads of MIB each (bench_hostile_upload). Usage: bench/run_hostile_upload.sh [CLIENTS] [MIB]
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-16}
mib=${2:-60}
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
build/bin/rankscope coordinator --token-file "$dir/token" --timeout 120 -o "$dir/out" \
  >"$dir/coord.out" 2>"$dir/coord.err" &
pid=$!
for _ in $(seq 50); do grep -q listening "$dir/coord.out" 2>/dev/null && break; sleep 0.1; done
address=$(sed -n 's/.* listening on \(.*\)$/\1/p' "$dir/coord.out")
hwm() { sed -n 's/^VmHWM: *//p' "/proc/$pid/status"; }
echo "coordinator at $address: peak resident before: $(hwm)"
build/bin/bench_hostile_upload "$address" "$clients" "$mib"
echo "peak resident after $clients x $mib MiB unauthenticated: $(hwm)"
