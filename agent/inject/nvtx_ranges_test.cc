#include "agent/inject/nvtx_ranges.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace rankscope::inject {
namespace {

TEST(PushPopStack, NestsPerDomain) {
  auto stack = std::make_unique<PushPopStack>();
  nvtxDomainRegistration_st other{};
  EXPECT_EQ(stack->Push(nullptr, "a", 1), 0);
  EXPECT_EQ(stack->Push(&other, "x", 2), 0);
  EXPECT_EQ(stack->Push(nullptr, "b", 3), 1);
  OpenRange r;
  bool overflowed = true;
  EXPECT_EQ(stack->Pop(&other, &r, &overflowed), 0);  // closes x under b
  EXPECT_FALSE(overflowed);
  EXPECT_EQ(r.name.view(), "x");
  EXPECT_EQ(r.start, 2);
  EXPECT_EQ(stack->Pop(nullptr, &r, &overflowed), 1);
  EXPECT_EQ(r.name.view(), "b");
  EXPECT_EQ(stack->Pop(nullptr, &r, &overflowed), 0);
  EXPECT_EQ(r.name.view(), "a");
  EXPECT_EQ(stack->Pop(nullptr, &r, &overflowed), -1);
}

TEST(PushPopStack, CountsOverflowAndRecovers) {
  auto stack = std::make_unique<PushPopStack>();
  for (int i = 0; i < PushPopStack::kMaxDepth + 3; ++i) {
    EXPECT_EQ(stack->Push(nullptr, "n", i), i);
  }
  OpenRange r;
  bool overflowed = false;
  for (int i = 0; i < 3; ++i) {
    stack->Pop(nullptr, &r, &overflowed);
    EXPECT_TRUE(overflowed);
  }
  EXPECT_EQ(stack->Pop(nullptr, &r, &overflowed), PushPopStack::kMaxDepth - 1);
  EXPECT_FALSE(overflowed);
}

TEST(PushPopStack, ClipsLongNames) {
  auto stack = std::make_unique<PushPopStack>();
  std::string long_name(1000, 'x');
  stack->Push(nullptr, long_name, 0);
  OpenRange r;
  bool overflowed = false;
  stack->Pop(nullptr, &r, &overflowed);
  EXPECT_EQ(r.name.view().size(), wire::kMaxNameBytes);
}

TEST(StartEndTable, EndsOnceById) {
  auto table = std::make_unique<StartEndTable>();
  uint64_t a = table->Start(nullptr, "a", 10, 7);
  uint64_t b = table->Start(nullptr, "b", 11, 8);
  ASSERT_NE(a, 0u);
  ASSERT_NE(b, 0u);
  EXPECT_NE(a, b);
  OpenRange r;
  EXPECT_TRUE(table->End(b, &r));
  EXPECT_EQ(r.name.view(), "b");
  EXPECT_EQ(r.tid, 8u);
  EXPECT_FALSE(table->End(b, &r));
  EXPECT_FALSE(table->End(0, &r));
  EXPECT_TRUE(table->End(a, &r));
  EXPECT_EQ(r.start, 10);
}

TEST(StartEndTable, FullTableReturnsZero) {
  auto table = std::make_unique<StartEndTable>();
  for (uint32_t i = 0; i < StartEndTable::kSlots; ++i) {
    ASSERT_NE(table->Start(nullptr, "r", 0, 0), 0u);
  }
  EXPECT_EQ(table->Start(nullptr, "r", 0, 0), 0u);
}

}  // namespace
}  // namespace rankscope::inject
