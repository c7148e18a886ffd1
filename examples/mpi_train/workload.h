// The real CPU work done in the phases of one mpi_train step.
#pragma once

#include <cstdint>
#include <vector>

namespace mpi_train {

// "Data loading": fills *batch (its size is kept) with this rank's data for `step` and shuffles it
// with a generator seeded from (rank, step). Values are small integers stored as floats, so a sum
// over up to 16384 ranks is exact and the allreduced result does not depend on reduction order.
void LoadBatch(int rank, int step, std::vector<float>* batch);

// "Compute": busy CPU work whose duration is proportional to `passes` (one pass is a few
// thousand multiply-adds over a cache-resident buffer). Returns a value that depends on all of the
// work so the compiler cannot drop it.
float BusyCompute(int64_t passes);

// Measures how many BusyCompute passes this core runs per millisecond of the thread's own CPU
// time (best of a few ~20 ms trials). CPU time, not wall time: ranks calibrate together right
// after MPI_Init, and on shared cores a wall-clock trial read half the speed (4 ranks on 2
// cores), which halved every --compute-ms and --slow-ms without a word.
double MeasurePassesPerMs();

}  // namespace mpi_train
