#!/usr/bin/env bash
# The main job on a real example: installs dependencies, builds, and profiles a 4-rank MPI
# training loop with a slow rank 2 through `rankscope run -- mpirun ...`. Writes ./out/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
# Open MPI as root on one machine, over loopback (see docs/testbed.md).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_mpi_yield_when_idle=1
exec build/bin/rankscope run -o out -- \
  mpirun --oversubscribe -np 4 build/bin/mpi_train --steps 50 --slow-rank 2
