#include "agent/sweep/nccl_allreduce.h"

#include <dlfcn.h>

#include <algorithm>

namespace rankscope {

Status NcclLibrary::Load(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = dlerror();
    return Status::Error("cannot load " + path + ": " + (why != nullptr ? why : "unknown error"));
  }
  auto resolve = [h](const char* symbol, auto* fn) {
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(h, symbol));
    return *fn != nullptr;
  };
  const std::pair<const char*, bool> entries[] = {
      {"ncclGetUniqueId", resolve("ncclGetUniqueId", &get_unique_id)},
      {"ncclCommInitRank", resolve("ncclCommInitRank", &comm_init_rank)},
      {"ncclCommInitAll", resolve("ncclCommInitAll", &comm_init_all)},
      {"ncclAllReduce", resolve("ncclAllReduce", &all_reduce)},
      {"ncclGroupStart", resolve("ncclGroupStart", &group_start)},
      {"ncclGroupEnd", resolve("ncclGroupEnd", &group_end)},
      {"ncclGetErrorString", resolve("ncclGetErrorString", &error_string)},
  };
  for (const auto& [symbol, ok] : entries) {
    if (!ok) return Status::Error(path + " has no " + symbol);
  }
  return Status();
}

std::string NcclLibrary::Error(const char* call, int r) const {
  return std::string(call) + ": " + (error_string != nullptr ? error_string(r) : "error") +
         " (NCCL result " + std::to_string(r) + ")";
}

Result<double> TimeAllReduce(
    const CudaDriver& cu, const NcclLibrary& nccl, std::vector<AllReduceGpu>* gpus, size_t bytes,
    DurationNs budget, const std::function<void(int* reps, bool* more, bool* failed)>& agree) {
  Status local;  // this process's first failure
  for (AllReduceGpu& g : *gpus) {
    cu.ctx_set_current(g.context);
    CudaDriver::Result r = cu.mem_alloc(&g.buffer, bytes);
    if (r == 0) r = cu.memset_d8(g.buffer, 0, bytes);
    if (r != 0) {
      local = Status::Error("allocating " + std::to_string(bytes) + " B: " + cu.Error(r));
      break;
    }
  }
  // `reps` all-reduces back to back, then every stream drained: the seconds it took.
  auto round = [&](int reps, double* seconds) -> Status {
    const TimeNs t0 = MonotonicNow();
    for (int rep = 0; rep < reps; ++rep) {
      nccl.group_start();
      for (AllReduceGpu& g : *gpus) {
        void* p = reinterpret_cast<void*>(g.buffer);
        if (int r = nccl.all_reduce(p, p, bytes / sizeof(float), /*ncclFloat32=*/7,
                                    /*ncclSum=*/0, g.comm, g.stream);
            r != 0) {
          nccl.group_end();
          return Status::Error(nccl.Error("ncclAllReduce", r));
        }
      }
      if (int r = nccl.group_end(); r != 0) return Status::Error(nccl.Error("ncclGroupEnd", r));
    }
    for (const AllReduceGpu& g : *gpus) {
      cu.ctx_set_current(g.context);
      if (CudaDriver::Result r = cu.stream_synchronize(g.stream); r != 0) {
        return Status::Error(cu.Error(r));
      }
    }
    *seconds = static_cast<double>(MonotonicNow() - t0) / 1e9;
    return Status();
  };
  // Every process learns whether any failed before it starts a round.
  auto go_on = [&](int* reps, bool* more) {
    bool failed = !local.ok();
    agree(reps, more, &failed);
    return !failed;
  };
  auto failure = [&local] {
    return local.ok() ? Status::Error("another process of the all-reduce failed") : local;
  };
  double seconds = 0;
  int reps = 2;
  bool more = true;
  if (!go_on(&reps, &more)) return failure();
  local = round(reps, &seconds);  // warm-up: connections, buffers
  const TimeNs deadline = MonotonicNow() + budget;
  double best = 0;
  reps = 1;
  for (;;) {
    if (!go_on(&reps, &more)) return failure();
    if (!more) break;
    local = round(reps, &seconds);
    if (!local.ok()) continue;  // said to the others at the next agreement
    if (seconds > 0) best = std::max(best, reps * static_cast<double>(bytes) / seconds);
    if (seconds < 0.05 && reps < (1 << 16)) reps *= 2;
    more = MonotonicNow() < deadline || best == 0;
  }
  return best;
}

}  // namespace rankscope
