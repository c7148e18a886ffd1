#include "agent/inject/pending_requests.h"

namespace rankscope::inject {

size_t PendingTable::Home(uint64_t key) {
  // Request handles are pointers (Open MPI) or small integers (MPICH): spread both.
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> 32) % kSlots;
}

bool PendingTable::Insert(uint64_t key, const PendingOp& op) {
  size_t home = Home(key);
  // First replace a stale entry for the same key, so Take never finds two.
  for (size_t i = 0; i < kProbe; ++i) {
    Slot& s = slots_[(home + i) % kSlots];
    uint32_t expected = kReady;
    if (s.state.load(std::memory_order_acquire) != kReady ||
        s.key.load(std::memory_order_relaxed) != key)
      continue;
    if (!s.state.compare_exchange_strong(expected, kBusy, std::memory_order_acquire)) continue;
    if (s.key.load(std::memory_order_relaxed) == key) {
      s.op = op;
      s.state.store(kReady, std::memory_order_release);
      return true;
    }
    s.state.store(kReady, std::memory_order_release);
  }
  for (size_t i = 0; i < kProbe; ++i) {
    Slot& s = slots_[(home + i) % kSlots];
    uint32_t expected = kFree;
    if (!s.state.compare_exchange_strong(expected, kBusy, std::memory_order_acquire)) continue;
    s.key.store(key, std::memory_order_relaxed);
    s.op = op;
    s.state.store(kReady, std::memory_order_release);
    size_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

bool PendingTable::Take(uint64_t key, PendingOp* op) {
  size_t home = Home(key);
  for (size_t i = 0; i < kProbe; ++i) {
    Slot& s = slots_[(home + i) % kSlots];
    if (s.state.load(std::memory_order_acquire) != kReady ||
        s.key.load(std::memory_order_relaxed) != key)
      continue;
    uint32_t expected = kReady;
    if (!s.state.compare_exchange_strong(expected, kBusy, std::memory_order_acquire)) continue;
    if (s.key.load(std::memory_order_relaxed) !=
        key) {  // taken and reused between our look and our claim
      s.state.store(kReady, std::memory_order_release);
      continue;
    }
    *op = s.op;
    s.state.store(kFree, std::memory_order_release);
    size_.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

}  // namespace rankscope::inject
