// The NVTX hooks' view of the GPU capture window (capture_window.h): every range that opens or
// closes is shown to it, and CUPTI's activity kinds follow. Implemented by cupti_injection.cc
// (and as no-ops by cupti_injection_none.cc). Cheap when no window is configured: one branch.
#pragma once

#include <string_view>

namespace rankscope::inject {

void GpuWindowRangeOpened(std::string_view name);
void GpuWindowRangeClosed(std::string_view name);

}  // namespace rankscope::inject
