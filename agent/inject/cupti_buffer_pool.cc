#include "agent/inject/cupti_buffer_pool.h"

#include <cstdlib>

namespace rankscope::inject {

CuptiBufferPool::CuptiBufferPool(size_t count, size_t bytes) : count_(count), bytes_(bytes) {
  // Reserved up front so Acquire/Release never allocate vector storage (they can run inside
  // CUPTI's callbacks, where an exception must not escape).
  all_.reserve(count_);
  free_.reserve(count_);
}

CuptiBufferPool::~CuptiBufferPool() {
  for (uint8_t* b : all_) std::free(b);
}

uint8_t* CuptiBufferPool::Acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!free_.empty()) {
    uint8_t* b = free_.back();
    free_.pop_back();
    return b;
  }
  if (all_.size() < count_) {
    // aligned_alloc wants the size to be a multiple of the alignment.
    size_t rounded = (bytes_ + 63) / 64 * 64;
    auto* b = static_cast<uint8_t*>(std::aligned_alloc(64, rounded));
    if (b != nullptr) {
      all_.push_back(b);
      return b;
    }
  }
  ++refusals_;
  return nullptr;
}

void CuptiBufferPool::Release(uint8_t* buffer) {
  if (buffer == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(buffer);  // capacity reserved: count_ >= buffers out
}

uint64_t CuptiBufferPool::refusals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refusals_;
}

}  // namespace rankscope::inject
