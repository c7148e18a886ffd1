// Turns CUPTI activity records into rankscope's GpuActivityRecord. Pure: no CUPTI calls, so the
// tests feed it hand-built records.
//
// CUPTI hands out a newer struct version for a kind with each major release (kernels:
// CUpti_ActivityKernel9 in CUDA 12, CUpti_ActivityKernel10 in CUDA 13; copies: Memcpy5/Memcpy6;
// memsets: Memset4; syncs: Synchronization/Synchronization2), always growing at the end. We read
// each record through the oldest struct that has every field we need and check at compile time
// that those fields sit at the same offsets in the newest struct, so one build reads what
// CUPTI 12 and CUPTI 13 write.
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/records.h"
#include "core/time.h"

namespace rankscope::inject {

struct ConvertOptions {
  // Added to every CUPTI timestamp. 0 when CUPTI's timestamp callback returns CLOCK_MONOTONIC;
  // otherwise the measured (CLOCK_MONOTONIC - CLOCK_REALTIME), since CUPTI's default clock on
  // Linux is CLOCK_REALTIME.
  DurationNs clock_offset = 0;
  // Names a CUDA runtime or driver API callback id, as cuptiGetCallbackName does
  // ("cudaMemcpy_v3020", "cuLaunchKernelEx"); nullptr, or a nullptr result, names the call
  // "cbid:<id>" (runtime) or "driver cbid:<id>".
  const char* (*api_name)(CUpti_CallbackDomain domain, uint32_t cbid) = nullptr;
};

enum class Conversion {
  kRecord,   // *out holds the activity
  kIgnored,  // a kind this capture does not report
  kUntimed,  // a kind we report, but CUPTI could not time it (start and end 0): a lost record
};

// Converts `activity` (a record from cuptiActivityGetNextRecord) into *out. *out is overwritten
// whole; its name's storage is reused, so converting a stream of records into one scratch record
// allocates only when a longer name comes along.
Conversion ConvertActivity(const CUpti_Activity& activity, const ConvertOptions& options,
                           GpuActivityRecord* out);

// CUPTI names runtime callbacks with the API version that introduced them
// ("cudaLaunchKernel_v7000"); returns the function's own name ("cudaLaunchKernel").
std::string_view StripCallbackVersion(std::string_view name);

// The API calls mode `all` traces, as CUPTI callback ids: each that launches GPU work a kernel
// record can point back to (its correlation id). Runtime: kernel, cooperative and graph launches,
// cudaMemcpy/cudaMemset and their async forms (per-thread-stream variants too). Driver: the same
// launches, which is how NCCL (cuLaunchKernelEx), Triton and CUTLASS launch.
struct LaunchApiIds {
  std::vector<uint32_t> runtime;
  std::vector<uint32_t> driver;
};
const LaunchApiIds& LaunchApis();

}  // namespace rankscope::inject
