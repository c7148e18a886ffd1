#include "agent/inject/cupti_buffer_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace rankscope::inject {
namespace {

TEST(CuptiBufferPool, HandsOutAtMostCountAlignedBuffers) {
  CuptiBufferPool pool(3, 4096);
  std::vector<uint8_t*> out;
  for (int i = 0; i < 3; ++i) {
    uint8_t* b = pool.Acquire();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 8, 0u);
    std::memset(b, 0xab, pool.buffer_bytes());  // the whole size is usable (ASan checks)
    out.push_back(b);
  }
  EXPECT_EQ(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.refusals(), 2u);
  for (uint8_t* b : out) pool.Release(b);
}

TEST(CuptiBufferPool, ReusesReleasedBuffersInsteadOfAllocating) {
  CuptiBufferPool pool(2, 1024);
  uint8_t* a = pool.Acquire();
  uint8_t* b = pool.Acquire();
  pool.Release(a);
  EXPECT_EQ(pool.Acquire(), a);
  pool.Release(b);
  pool.Release(a);
  std::set<uint8_t*> seen;
  for (int i = 0; i < 100; ++i) {
    uint8_t* x = pool.Acquire();
    ASSERT_NE(x, nullptr);
    seen.insert(x);
    pool.Release(x);
  }
  EXPECT_LE(seen.size(), 2u);
  EXPECT_EQ(pool.refusals(), 0u);
}

TEST(CuptiBufferPool, ConcurrentRequestsAndCompletions) {
  CuptiBufferPool pool(4, 256);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&pool] {
      for (int i = 0; i < 2000; ++i) {
        if (uint8_t* b = pool.Acquire()) {
          b[0] = 1;
          pool.Release(b);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<uint8_t*> all;
  for (int i = 0; i < 4; ++i) all.push_back(pool.Acquire());
  for (uint8_t* b : all) EXPECT_NE(b, nullptr);  // nothing leaked out of the pool
  EXPECT_EQ(pool.Acquire(), nullptr);
  for (uint8_t* b : all) pool.Release(b);
}

}  // namespace
}  // namespace rankscope::inject
