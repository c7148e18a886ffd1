// NCCL all-reduce timing shared by the sweep's two NCCL checks: across the GPUs of one node
// (gpu_checks.h, one process) and across the GPUs of a pair of nodes (rankscope-pingpong, one
// MPI process per node). NCCL is loaded with dlopen, like the CUDA driver (cuda_driver.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "agent/sweep/cuda_driver.h"
#include "core/status.h"
#include "core/time.h"

namespace rankscope {

struct NcclLibrary {
  struct UniqueId {  // ncclUniqueId
    char internal[128];
  };
  int (*get_unique_id)(UniqueId*) = nullptr;
  int (*comm_init_rank)(void**, int, UniqueId, int) = nullptr;
  int (*comm_init_all)(void**, int, const int*) = nullptr;
  int (*all_reduce)(const void*, void*, size_t, int, int, void*, void*) = nullptr;
  int (*group_start)() = nullptr;
  int (*group_end)() = nullptr;
  const char* (*error_string)(int) = nullptr;

  // Loads `path` (libnccl.so.2); the error names it and the missing entry point.
  Status Load(const std::string& path);
  std::string Error(const char* call, int r) const;
};

// One GPU of an all-reduce: its primary context and stream (opened by the caller), the
// communicator, and the buffer TimeAllReduce allocates.
struct AllReduceGpu {
  CudaDriver::Context context = nullptr;
  CudaDriver::Stream stream = nullptr;
  void* comm = nullptr;
  CudaDriver::DevicePtr buffer = 0;
};

// Times in-place float-sum all-reduces of `bytes` on every GPU in `gpus` (one group call per
// all-reduce), in rounds until `budget` passes, and returns the best algorithm bandwidth
// (bytes per second per all-reduce). Rounds double their all-reduce count until one lasts 50 ms.
// With several processes every round must match: `agree(reps, more, failed)` is called after
// allocating and before each round with this process's choice and whether it failed so far, and
// must leave every process with the same reps and more (rank 0's) and failed if any failed, so
// a process whose allocation or enqueue failed stops the others before they start the next
// round. (A failure inside NCCL while a collective runs can still leave the peer waiting until
// the step's time limit ends it.)
Result<double> TimeAllReduce(const CudaDriver& cu, const NcclLibrary& nccl,
                             std::vector<AllReduceGpu>* gpus, size_t bytes, DurationNs budget,
                             const std::function<void(int* reps, bool* more, bool* failed)>& agree);

// nccl-tests' bus bandwidth of an all-reduce over `ranks` GPUs: algorithm bandwidth x 2(n-1)/n.
inline double AllReduceBusBandwidth(double algorithm_bandwidth, int ranks) {
  return ranks > 1 ? algorithm_bandwidth * 2.0 * (ranks - 1) / ranks : 0;
}

}  // namespace rankscope
