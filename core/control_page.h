// The page through which an agent tells its rank's inject library whether to record: a small
// file the agent creates and maps, named to the program by RANKSCOPE_CONTROL_FILE, which the
// library maps read-only. `rankscope run --dormant` starts with capturing = 0; the coordinator's
// START_CAPTURE / STOP_CAPTURE (from `rankscope capture`) flip it. The library reads it with one
// relaxed load per record, and its CUPTI flush thread turns activity kinds on and off to follow.
#pragma once

#include <atomic>
#include <cstdint>

namespace rankscope {

inline constexpr uint32_t kControlPageMagic = 0x52534331;  // "RSC1"
inline constexpr size_t kControlPageSize = 4096;

struct ControlPage {
  uint32_t magic;
  std::atomic<uint32_t> capturing;  // 0: dormant, 1: recording
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "shared between processes");
static_assert(sizeof(ControlPage) <= kControlPageSize);

}  // namespace rankscope
