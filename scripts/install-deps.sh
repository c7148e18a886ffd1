#!/usr/bin/env bash
# Installs every Debian 12 package rankscope needs to build, test and run its example.
# Idempotent: when everything is present it only checks (about a second).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git clang-format
  clang libclang-rt-14-dev  # libFuzzer for the fuzz targets (scripts/fuzz.sh)
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin libsqlite3-dev libpugixml-dev nlohmann-json3-dev
  slurm-wlm libslurm-dev munge iproute2 util-linux procps python3 python3-jsonschema
  chromium  # renders report.html in a test (headless: screenshot and console errors)
  lammps hpcc ltrace  # real MPI apps of the scenario matrix (scripts/scenario-matrix.py); ltrace: their MPI call profile
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing ${missing[*]}; run this script as root" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
