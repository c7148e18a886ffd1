// Open NVTX ranges. Push/pop ranges live on a per-thread stack (one stack shared by all
// domains, each entry remembering its domain and its depth within it); start/end ranges live in
// a process-wide table because nvtxRangeEnd may run on another thread. Both are fixed-size and
// copy names inline, so opening and closing a range never allocates.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "agent/inject/nvtx_strings.h"
#include "core/time.h"

namespace rankscope::inject {

struct OpenRange {
  nvtxDomainHandle_t domain = nullptr;
  TimeNs start = 0;
  uint32_t tid = 0;    // thread that opened it
  uint32_t depth = 0;  // nesting depth within its domain on its thread; 0 for start/end ranges
  Name name;
};

// One thread's push/pop ranges. Not thread-safe: one per thread.
class PushPopStack {
 public:
  static constexpr int kMaxDepth = 64;

  // Opens a range; returns its depth within `domain` (0 = outermost). Beyond kMaxDepth open
  // ranges the push is only counted: the matching pop then closes nothing.
  int Push(nvtxDomainHandle_t domain, std::string_view name, TimeNs start);

  // Closes the innermost open range of `domain`, copying it to *closed. Returns its depth, or
  // -1 if `domain` has no open range. *overflowed is set when the pop matched a counted-only
  // push (nothing copied).
  int Pop(nvtxDomainHandle_t domain, OpenRange* closed, bool* overflowed);

 private:
  OpenRange entries_[kMaxDepth];
  int size_ = 0;
  int overflow_ = 0;  // pushes beyond kMaxDepth not yet popped
};

// Start/end ranges of the whole process, keyed by the id nvtxRangeStart returns.
class StartEndTable {
 public:
  static constexpr uint32_t kSlots = 1024;

  constexpr StartEndTable() = default;
  StartEndTable(const StartEndTable&) = delete;
  StartEndTable& operator=(const StartEndTable&) = delete;

  // Opens a range and returns its id (never 0), or 0 when all slots are in use.
  // Thread-safe and lock-free.
  uint64_t Start(nvtxDomainHandle_t domain, std::string_view name, TimeNs start, uint32_t tid);

  // Closes range `id`, copying it to *closed. False for 0, an unknown id, or one already ended.
  // Thread-safe and lock-free.
  bool End(uint64_t id, OpenRange* closed);

 private:
  static constexpr uint64_t kFree = 0;
  static constexpr uint64_t kClaimed = ~uint64_t{0};
  struct Slot {
    std::atomic<uint64_t> id{kFree};  // the open range's id, kFree, or kClaimed while written
    OpenRange range{};                // value-initialised so the table can be constinit
  };

  Slot slots_[kSlots];
  std::atomic<uint64_t> next_{0};
};

}  // namespace rankscope::inject
