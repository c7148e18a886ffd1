// Durations and sizes as people read them.
#pragma once

#include <string>

#include "core/time.h"

namespace rankscope {

// "850 ns", "12.3 us", "1.23 ms", "4.56 s", "3m 07s"; negative values get a leading '-'.
std::string FormatDuration(DurationNs d);

// "512 B", "64.0 KiB", "256.0 MiB" (binary units, as NCCL and nccl-tests sizes are).
std::string FormatBytes(Bytes b);

}  // namespace rankscope
