// The page through which an agent tells its rank's inject library whether to record: a small
// file the agent creates and maps, named to the program by RANKSCOPE_CONTROL_FILE, which the
// library maps read-only. `rankscope run --dormant` starts with capturing = 0; the coordinator's
// START_CAPTURE / STOP_CAPTURE (from `rankscope capture`) flip it. The library reads it with one
// relaxed load per record, and its CUPTI flush thread turns activity kinds on and off to follow.
// The library also records the program's exit() on it, for an agent that runs beside the
// program rather than as its parent (agent/agent.h).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace rankscope {

inline constexpr uint32_t kControlPageMagic = 0x52534331;  // "RSC1"
inline constexpr size_t kControlPageSize = 4096;

struct ControlPage {
  uint32_t magic;
  std::atomic<uint32_t> capturing;   // 0: dormant, 1: recording
  std::atomic<int32_t> program_pid;  // set by the agent: the rank's process; 0 until known
  std::atomic<uint32_t> exited;      // 1 (the library): program_pid called exit(); 2 (the
                                     // agent): it ended without
  std::atomic<int32_t> exit_code;    // exit()'s status (& 0xff), written before `exited`
  std::atomic<uint32_t> sampled;     // set by the agent: 1 once it read the program's last
                                     // figures after `exited` (the library waits for it)
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "shared between processes");
static_assert(std::atomic<int32_t>::is_always_lock_free, "shared between processes");
static_assert(sizeof(ControlPage) <= kControlPageSize);

// Waits (futex, shared between processes) while `*word` is `value`, for `timeout_ns` at most
// (< 0: no limit); returns on a wake, a change, a signal or the timeout.
inline void WaitWhile(std::atomic<uint32_t>* word, uint32_t value, int64_t timeout_ns) {
  timespec t{static_cast<time_t>(timeout_ns / 1000000000),
             static_cast<long>(timeout_ns % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, value,
          timeout_ns < 0 ? nullptr : &t, nullptr, 0);
}
inline void WakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

}  // namespace rankscope
