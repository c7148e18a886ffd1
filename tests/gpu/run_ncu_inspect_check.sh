#!/usr/bin/env bash
# On the GPU machine: `rankscope inspect ncu` on a report ncu makes there from real counters.
# Builds tests/gpu/ncu_kernels.cu (three kernels of known bound), profiles them with
# `ncu --set full`, reads the .ncu-rep through ncu (the path users take) and the raw CSV, and
# checks each kernel's verdict: tiny_update latency-bound, stream_triad memory-bound, fma_chain
# compute-bound. The report, CSV and JSON land in $OUT for new fixtures.
# Run through the device tool with carry ["device-prefix"] (scripts/device-bundle.sh first).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/ncu-check}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/device-prefix/lib:${LD_LIBRARY_PATH:-}
rankscope=$PWD/device-prefix/bin/rankscope
nvcc -O2 -arch=sm_90 -o "$out/ncu_kernels" tests/gpu/ncu_kernels.cu
ncu --version | tail -1
ncu --set full --clock-control none -f -o "$out/kernels" "$out/ncu_kernels" >"$out/ncu.log" 2>&1 ||
  { tail -20 "$out/ncu.log"; exit 1; }
ncu --import "$out/kernels.ncu-rep" --csv --page raw >"$out/kernels.raw.csv"
"$rankscope" inspect ncu "$out/kernels.ncu-rep" | tee "$out/inspect.txt"
"$rankscope" inspect ncu --json "$out/kernels.raw.csv" >"$out/inspect.json"
python3 - "$out/inspect.json" <<'PY'
import json, sys
kernels = json.load(open(sys.argv[1]))["kernels"]
want = {"tiny_update": "latency-bound", "stream_triad": "memory-bound", "fma_chain": "compute-bound"}
seen = {}
for k in kernels:
    name = k["kernel"].split("(")[0].split()[-1]
    seen[name] = k["bound"]
    print(f"{name}: {k['bound']} ({k['why']})")
bad = {n: (seen.get(n), b) for n, b in want.items() if seen.get(n) != b}
print("ncu inspect check:", "OK" if not bad else f"FAILED {bad}")
sys.exit(1 if bad else 0)
PY
