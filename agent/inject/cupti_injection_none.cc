// InitializeInjection for builds without the CUPTI headers (configured on a machine with no CUDA
// toolkit): the CUDA driver may still load this library through CUDA_INJECTION64_PATH, so the
// entry point exists, says once that GPU activity is not captured, and lets CUDA run on.
#include <atomic>

#include "agent/inject/gpu_window.h"
#include "agent/inject/record_sink.h"

namespace rankscope::inject {
void GpuWindowRangeOpened(std::string_view) {}
void GpuWindowRangeClosed(std::string_view) {}
}  // namespace rankscope::inject

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::atomic<bool> said{false};
  rankscope::inject::NoticeOnce(said,
                                "CUPTI unavailable: this librankscope_inject.so was built without "
                                "the CUPTI headers; continuing without GPU activity");
  return 1;
}
