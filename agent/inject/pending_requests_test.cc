#include "agent/inject/pending_requests.h"

#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace rankscope::inject {
namespace {

PendingOp Op(uint64_t seq) {
  PendingOp op;
  op.collective.seq = seq;
  return op;
}

TEST(PendingTable, InsertTakeOnce) {
  auto table = std::make_unique<PendingTable>();
  EXPECT_TRUE(table->empty());
  ASSERT_TRUE(table->Insert(0x1000, Op(1)));
  ASSERT_TRUE(table->Insert(0x2000, Op(2)));
  EXPECT_FALSE(table->empty());
  PendingOp out;
  ASSERT_TRUE(table->Take(0x2000, &out));
  EXPECT_EQ(out.collective.seq, 2u);
  EXPECT_FALSE(table->Take(0x2000, &out));
  ASSERT_TRUE(table->Take(0x1000, &out));
  EXPECT_EQ(out.collective.seq, 1u);
  EXPECT_TRUE(table->empty());
}

TEST(PendingTable, SameKeyReplacesStaleEntry) {
  auto table = std::make_unique<PendingTable>();
  ASSERT_TRUE(table->Insert(0x1000, Op(1)));
  ASSERT_TRUE(table->Insert(0x1000, Op(2)));
  PendingOp out;
  ASSERT_TRUE(table->Take(0x1000, &out));
  EXPECT_EQ(out.collective.seq, 2u);
  EXPECT_FALSE(table->Take(0x1000, &out));
}

TEST(PendingTable, ManyThreadsPostAndComplete) {
  auto table = std::make_unique<PendingTable>();
  std::vector<std::thread> threads;
  std::atomic<int> lost{0};
  for (uint64_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 20000; ++i) {
        uint64_t key = ((t << 32) | (i % 64)) * 64 + 64;
        if (!table->Insert(key, Op(i))) {
          ++lost;
          continue;
        }
        PendingOp out;
        if (!table->Take(key, &out) || out.collective.seq != i) ++lost;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(lost.load(), 0);
  EXPECT_TRUE(table->empty());
}

}  // namespace
}  // namespace rankscope::inject
