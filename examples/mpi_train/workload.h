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

// Measures how many BusyCompute passes this core runs per millisecond (best of a few ~20 ms
// trials, so a descheduled trial does not count).
double MeasurePassesPerMs();

}  // namespace mpi_train
