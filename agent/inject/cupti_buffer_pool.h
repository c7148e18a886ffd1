// The memory CUPTI writes its activity records into. CUPTI asks for a buffer whenever it needs
// one (its "buffer requested" callback) and hands it back full (its "buffer completed"
// callback); this pool bounds how much memory that can take: at most `count` buffers of `bytes`
// each, allocated on first need and reused after. When all are out, Acquire returns nullptr and
// the caller declines CUPTI's request, which CUPTI documents as allowed (it drops records and
// counts them in cuptiActivityGetNumDroppedRecords).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace rankscope::inject {

class CuptiBufferPool {
 public:
  // `count` >= 1 buffers of `bytes` each (a multiple of 8). Allocates nothing yet.
  CuptiBufferPool(size_t count, size_t bytes);
  // Frees every buffer the pool allocated; none may still be in use.
  ~CuptiBufferPool();

  CuptiBufferPool(const CuptiBufferPool&) = delete;
  CuptiBufferPool& operator=(const CuptiBufferPool&) = delete;

  // A free buffer of buffer_bytes(), aligned to 64 bytes (CUPTI needs 8), or nullptr when
  // `count` buffers are already out or memory is short. Thread-safe.
  uint8_t* Acquire();

  // Returns a buffer obtained from Acquire. Thread-safe.
  void Release(uint8_t* buffer);

  size_t buffer_bytes() const { return bytes_; }
  // How many times Acquire returned nullptr.
  uint64_t refusals() const;

 private:
  const size_t count_;
  const size_t bytes_;
  mutable std::mutex mu_;
  std::vector<uint8_t*> all_;   // every buffer allocated so far (<= count_)
  std::vector<uint8_t*> free_;  // the ones not out
  uint64_t refusals_ = 0;
};

}  // namespace rankscope::inject
