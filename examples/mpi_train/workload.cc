#include "workload.h"

#include <time.h>

#include <algorithm>
#include <array>
#include <random>

namespace mpi_train {
namespace {

constexpr int kScratchFloats = 4096;  // 16 KiB: stays in L1, so a pass costs the same everywhere.

double ThreadCpuMs() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

}  // namespace

void LoadBatch(int rank, int step, std::vector<float>* batch) {
  const uint64_t base = static_cast<uint64_t>(rank) * 7919 + static_cast<uint64_t>(step) * 104729;
  for (size_t i = 0; i < batch->size(); ++i) {
    (*batch)[i] = static_cast<float>((base + i) % 1024);
  }
  std::mt19937_64 generator(base);
  std::shuffle(batch->begin(), batch->end(), generator);
}

float BusyCompute(int64_t passes) {
  std::array<float, kScratchFloats> scratch;
  for (int i = 0; i < kScratchFloats; ++i) scratch[i] = static_cast<float>(i % 17);
  for (int64_t pass = 0; pass < passes; ++pass) {
    const float scale = 0.999f + 1e-7f * static_cast<float>(pass % 13);
    for (float& x : scratch) x = x * scale + 0.001f;
  }
  float sum = 0.0f;
  for (float x : scratch) sum += x;
  return sum;
}

double MeasurePassesPerMs() {
  volatile float sink = 0.0f;
  double best = 0.0;
  for (int trial = 0; trial < 3; ++trial) {
    // Double the passes until one trial runs for at least 20 ms of CPU.
    for (int64_t passes = 64;; passes *= 2) {
      const double start = ThreadCpuMs();
      sink = sink + BusyCompute(passes);
      const double ms = ThreadCpuMs() - start;
      if (ms >= 20.0) {
        best = std::max(best, static_cast<double>(passes) / ms);
        break;
      }
    }
  }
  return best;
}

}  // namespace mpi_train
