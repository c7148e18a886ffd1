#include "agent/inject/nvtx_ranges.h"

#include <cstring>

namespace rankscope::inject {
namespace {

// Copies only the used part of the name: ranges are copied on every pop.
void CopyRange(const OpenRange& from, OpenRange* to) {
  to->domain = from.domain;
  to->start = from.start;
  to->tid = from.tid;
  to->depth = from.depth;
  to->name.size = from.name.size;
  std::memcpy(to->name.bytes, from.name.bytes, from.name.size);
}

}  // namespace

int PushPopStack::Push(nvtxDomainHandle_t domain, std::string_view name, TimeNs start) {
  int depth = 0;
  for (int i = size_ - 1; i >= 0; --i) {
    if (entries_[i].domain == domain) {
      depth = static_cast<int>(entries_[i].depth) + 1;
      break;
    }
  }
  if (size_ == kMaxDepth || overflow_ > 0) {
    ++overflow_;
    return depth + overflow_ - 1;
  }
  OpenRange& e = entries_[size_++];
  e.domain = domain;
  e.start = start;
  e.depth = static_cast<uint32_t>(depth);
  e.name.Assign(name);
  return depth;
}

int PushPopStack::Pop(nvtxDomainHandle_t domain, OpenRange* closed, bool* overflowed) {
  *overflowed = false;
  if (overflow_ > 0) {
    // Overflowed pushes are the innermost; they are matched first, whatever their domain.
    --overflow_;
    *overflowed = true;
    return size_ + overflow_;
  }
  for (int i = size_ - 1; i >= 0; --i) {
    if (entries_[i].domain != domain) continue;
    CopyRange(entries_[i], closed);
    // Ranges of other domains pushed later stay open; close the gap under them.
    for (int j = i + 1; j < size_; ++j) CopyRange(entries_[j], &entries_[j - 1]);
    --size_;
    return static_cast<int>(closed->depth);
  }
  return -1;
}

uint64_t StartEndTable::Start(nvtxDomainHandle_t domain, std::string_view name, TimeNs start,
                              uint32_t tid) {
  for (uint32_t attempt = 0; attempt < kSlots; ++attempt) {
    uint64_t ticket = next_.fetch_add(1, std::memory_order_relaxed);
    Slot& s = slots_[ticket % kSlots];
    uint64_t expected = kFree;
    if (!s.id.compare_exchange_strong(expected, kClaimed, std::memory_order_acquire)) continue;
    s.range.domain = domain;
    s.range.start = start;
    s.range.tid = tid;
    s.range.depth = 0;
    s.range.name.Assign(name);
    // id - 1 names the slot, and no two ranges get the same id (kClaimed would take 2^64).
    uint64_t id = ticket + 1;
    s.id.store(id, std::memory_order_release);
    return id;
  }
  return 0;
}

bool StartEndTable::End(uint64_t id, OpenRange* closed) {
  if (id == kFree || id == kClaimed) return false;
  Slot& s = slots_[(id - 1) % kSlots];
  uint64_t expected = id;
  if (!s.id.compare_exchange_strong(expected, kClaimed, std::memory_order_acquire)) return false;
  CopyRange(s.range, closed);
  s.id.store(kFree, std::memory_order_release);
  return true;
}

}  // namespace rankscope::inject
