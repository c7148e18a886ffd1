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

#include "core/records.h"
#include "core/time.h"

namespace rankscope::inject {

struct ConvertOptions {
  // Added to every CUPTI timestamp. 0 when CUPTI's timestamp callback returns CLOCK_MONOTONIC;
  // otherwise the measured (CLOCK_MONOTONIC - CLOCK_REALTIME), since CUPTI's default clock on
  // Linux is CLOCK_REALTIME.
  DurationNs clock_offset = 0;
  // Names a CUDA runtime API callback id, as cuptiGetCallbackName does ("cudaMemcpy_v3020");
  // nullptr, or a nullptr result, names the call "cbid:<id>".
  const char* (*runtime_name)(uint32_t cbid) = nullptr;
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

}  // namespace rankscope::inject
