// The page through which an agent tells its rank's inject library whether to record: a small
// file the agent creates and maps, named to the program by RANKSCOPE_CONTROL_FILE, which the
// library maps too. `rankscope run --dormant` starts with capturing = 0; the coordinator's
// START_CAPTURE / STOP_CAPTURE (from `rankscope capture`) flip it. The library reads it with one
// relaxed load per record, and its CUPTI flush thread turns activity kinds on and off to follow.
// The library also records the program's exit() on it, for an agent that runs beside the
// program rather than as its parent (agent/agent.h), and the blocking MPI call its main thread
// is inside (OpenCallSlot).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <optional>

namespace rankscope {

inline constexpr uint32_t kControlPageMagic = 0x52534331;  // "RSC1"
inline constexpr size_t kControlPageSize = 4096;

// The blocking MPI call or polling loop (MPI_Test*, MPI_Iprobe failing again and again) the
// program's main thread is inside now, for the coordinator's stall check
// (coordinator/stall_check.h): written by the inject library when the call or loop begins and
// ends, read by the agent each second. `enter_ns` is written last on entry (release) and zeroed
// first on exit, so a reader that sees the same nonzero enter_ns before and after reading the
// other fields read one call's fields (ReadOpenCall).
enum class OpenCallKind : uint32_t { kNone = 0, kCollective = 1, kPointToPoint = 2 };
struct OpenCallSlot {
  std::atomic<uint64_t> enter_ns;  // MonotonicNow clock; 0: outside blocking calls and loops
  std::atomic<uint32_t> kind;      // OpenCallKind
  std::atomic<uint32_t> op;        // CollectiveOp, or P2PKind (kWait for a Wait on a request)
  std::atomic<uint64_t> comm_id;   // the communicator's id as records carry it; 0 unknown
  std::atomic<uint64_t> seq;       // collectives: the instance's sequence number on comm_id
  std::atomic<int32_t> comm_size;  // collectives: members of comm_id
  std::atomic<int32_t> peer;       // point-to-point: the peer's world rank; -1 any or unknown
  // A polling loop: the latest failed poll's exit, enter_ns being the loop's first poll (polls
  // less than kPollStaleNs apart for the same request or source, no MPI record between, are one
  // loop); 0 for a blocking call. A loop the thread left for
  // its own work without a call that ends it leaves the slot set: the reader tells by this.
  std::atomic<uint64_t> poll_ns;
};

// A polling call whose latest poll is older than this is one the thread has left.
inline constexpr uint64_t kPollStaleNs = 1'000'000'000;

// One consistent reading of an OpenCallSlot.
struct OpenCall {
  uint64_t enter_ns = 0;
  OpenCallKind kind = OpenCallKind::kNone;
  uint32_t op = 0;
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  int32_t comm_size = 0;
  int32_t peer = -1;
  uint64_t poll_ns = 0;  // a polling loop's latest poll (OpenCallSlot::poll_ns); 0 blocking
};

// The call `slot` holds at `now` (MonotonicNow); nullopt outside blocking MPI calls and polling
// loops, for a loop whose latest poll is kPollStaleNs old, or when the call changed during every
// one of a few tries (a rank calling MPI in a tight loop is not stalled in one). A zero entry is
// read again too: the writer zeroes it for the few stores that describe a new call.
inline std::optional<OpenCall> ReadOpenCall(const OpenCallSlot& slot, uint64_t now) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    OpenCall c;
    c.enter_ns = slot.enter_ns.load(std::memory_order_acquire);
    if (c.enter_ns == 0) continue;
    c.kind = static_cast<OpenCallKind>(slot.kind.load(std::memory_order_relaxed));
    c.op = slot.op.load(std::memory_order_relaxed);
    c.comm_id = slot.comm_id.load(std::memory_order_relaxed);
    c.seq = slot.seq.load(std::memory_order_relaxed);
    c.comm_size = slot.comm_size.load(std::memory_order_relaxed);
    c.peer = slot.peer.load(std::memory_order_relaxed);
    c.poll_ns = slot.poll_ns.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.enter_ns.load(std::memory_order_relaxed) != c.enter_ns) continue;
    if (c.poll_ns != 0 && now > c.poll_ns && now - c.poll_ns >= kPollStaleNs) return std::nullopt;
    return c;
  }
  return std::nullopt;
}

struct ControlPage {
  uint32_t magic;
  std::atomic<uint32_t> capturing;   // 0: dormant, 1: recording
  std::atomic<int32_t> program_pid;  // set by the agent: the rank's process; 0 until known
  std::atomic<uint32_t> exited;      // 1 (the library): program_pid called exit(); 2 (the
                                     // agent): it ended without
  std::atomic<int32_t> exit_code;    // exit()'s status (& 0xff), written before `exited`
  std::atomic<uint32_t> sampled;     // set by the agent: 1 once it read the program's last
                                     // figures after `exited` (the library waits for it)
  OpenCallSlot open_call;            // written by the library (its main thread)
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "shared between processes");
static_assert(std::atomic<int32_t>::is_always_lock_free, "shared between processes");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared between processes");
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
