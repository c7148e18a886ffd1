// Durations as people read them: "850 ns", "12.3 us", "1.23 ms", "4.56 s", "3m 07s".
#pragma once

#include <string>

#include "core/time.h"

namespace rankscope {

std::string FormatDuration(DurationNs d);

}  // namespace rankscope
