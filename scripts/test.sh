#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, runs every unit and integration test
# (real mpirun, gRPC, time namespaces), then the unit tests again under ASan + UBSan, then each
# libFuzzer target for 20 s.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/check-format.sh
scripts/build.sh
rm -rf build/reliability  # the fault tests' rows: docs/reliability.md is this run's
(cd build && ctest --output-on-failure --timeout 300)
python3 scripts/reliability-table.py build docs/reliability.md

# Sanitizer pass over the pure logic and the agent's parsers (no MPI processes under ASan).
BUILD_DIR=build-asan scripts/build.sh -DRANKSCOPE_SANITIZE=ON -DRANKSCOPE_BUILD_BENCH=OFF
(cd build-asan && ctest --output-on-failure --timeout 300 -L unit)

# Fuzzing: the parsers, the wire decoder, the RPC decoding and the session loader (fuzz/).
FUZZ_SECONDS=${FUZZ_SECONDS:-20} scripts/fuzz.sh
