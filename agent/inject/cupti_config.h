// How the CUPTI activity capture is configured: one struct, built once from the environment the
// agent gives the rank, then passed to the capture (cupti_injection.cc). Pure: the environment
// is read through a lookup function, so tests pass their own.
//
//   RANKSCOPE_CUPTI_MODE     kernels | gpu | all | api (default all)
//       kernels: CONCURRENT_KERNEL only; gpu: + MEMCPY, MEMSET, SYNCHRONIZATION;
//       all: + the launch calls (runtime and driver kernel launches, graph launches, copies and
//       memsets; see LaunchApiIds) with correlation ids, for launch latency, NCCL's own launches
//       included (driver API); api: + every runtime API call, like nsys --trace=cuda.
//       CUPTI's per-kernel cost is the floor of all of them (TESTBED.md); tracing every runtime
//       call costs more on launch-bound loops, which is why `all` picks the launch calls only.
//   RANKSCOPE_CUPTI_PATH     the libcupti to dlopen; when set, nothing else is tried
//   RANKSCOPE_CUPTI_BUFFERS  activity buffers in the pool (default 8, 2..64)
//   RANKSCOPE_CUPTI_BUFFER_KB  size of one buffer (default 4096, 256..65536)
//   RANKSCOPE_CUPTI_FLUSH_MS period of the background flush (default 500, 10..60000)
//   RANKSCOPE_CUPTI_PICK_CALLS  1 (default): mode all traces the launch calls by call id;
//                            0: traces the whole RUNTIME kind instead, as on CUPTI before 12.6
//   RANKSCOPE_CUPTI_SYNC     1 (default): modes gpu and up trace SYNCHRONIZATION; 0: they do not
//   RANKSCOPE_CUPTI_DISCARD  0 (default); 1, for overhead benchmarks only: buffers go back to
//                            CUPTI unread, so a run measures CUPTI's cost apart from ours
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/time.h"

namespace rankscope::inject {

enum class CuptiMode { kKernels, kGpu, kAll, kApi };

struct CuptiConfig {
  CuptiMode mode = CuptiMode::kAll;
  std::string library_path;  // empty: search (see CuptiLibraryCandidates)
  size_t buffer_count = 8;
  size_t buffer_bytes = size_t{4} << 20;
  DurationNs flush_period = 500 * kNsPerMs;
  // Trace launch calls one call id at a time (CUPTI 12.6+); false: the whole RUNTIME kind.
  bool pick_launch_calls = true;
  bool synchronization = true;  // trace SYNCHRONIZATION in modes gpu, all and api
  bool discard = false;         // benchmarks only: release buffers unread
  // One line per variable that was set but unusable (its default was kept instead).
  std::vector<std::string> problems;
};

// Looks a variable up like std::getenv: nullptr when unset.
using EnvLookup = const char* (*)(const char* name);

// Reads the variables above. Never fails: a bad value keeps the default and adds a line to
// `problems` naming the variable, the value and what is accepted.
CuptiConfig CuptiConfigFromEnv(EnvLookup lookup);

// The libraries to try, in order: RANKSCOPE_CUPTI_PATH alone when set; otherwise the sonames
// libcupti.so.13, libcupti.so.12, libcupti.so (the loader's search path, and a libcupti the
// process already loaded, e.g. PyTorch's), then the same names under $CUDA_HOME and
// /usr/local/cuda (lib64, extras/CUPTI/lib64), where toolkits install it off the search path.
std::vector<std::string> CuptiLibraryCandidates(const CuptiConfig& config, EnvLookup lookup);

}  // namespace rankscope::inject
