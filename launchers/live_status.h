// `rankscope run`'s status line while the job runs (issue #16): ranks, steps, records per
// second, what is captured. Pure.
#pragma once

#include <string>

#include "coordinator/live_progress.h"
#include "core/time.h"

namespace rankscope {

// E.g. "rankscope: 4 ranks, step 1,234, 52.1 k records/s, 4 ranks sending GPU kernels summed,
// 12 s". `before` is the progress `interval` ago (records/s from the two), `elapsed` the time
// since the job started; `capturing` false while dormant.
std::string LiveStatusLine(const LiveProgress& now, const LiveProgress& before, DurationNs interval,
                           DurationNs elapsed, bool capturing);

}  // namespace rankscope
