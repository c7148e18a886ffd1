#include "core/control_page.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

constexpr uint64_t kS = 1'000'000'000;

// A point-to-point call with peer 3, entered at `enter`, its latest poll `poll` (0: blocking),
// read at `now`.
std::optional<OpenCall> Read(uint64_t enter, uint64_t poll, uint64_t now) {
  OpenCallSlot slot{};
  slot.kind.store(static_cast<uint32_t>(OpenCallKind::kPointToPoint));
  slot.peer.store(3);
  slot.poll_ns.store(poll);
  slot.enter_ns.store(enter);
  return ReadOpenCall(slot, now);
}

// A blocking call is open however long it lasts; none is open when enter_ns is 0.
TEST(ControlPage, ABlockingCallIsOpenUntilItEnds) {
  const std::optional<OpenCall> c = Read(5 * kS, 0, 500 * kS);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->enter_ns, 5 * kS);
  EXPECT_EQ(c->peer, 3);
  EXPECT_EQ(c->poll_ns, 0u);
  EXPECT_FALSE(Read(0, 0, 500 * kS));
}

// A polling loop is open while its latest poll is recent; one whose latest poll is a second old
// is a loop the thread left for its own work (or was stopped in).
TEST(ControlPage, APollingLoopIsOpenWhileItPolls) {
  const std::optional<OpenCall> c = Read(5 * kS, 30 * kS, 30 * kS + kS / 2);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->enter_ns, 5 * kS);
  EXPECT_EQ(c->poll_ns, 30 * kS);
  EXPECT_FALSE(Read(5 * kS, 30 * kS, 31 * kS));
  // A reader whose clock reads a little behind the writer's: open.
  EXPECT_TRUE(Read(5 * kS, 30 * kS, 29 * kS));
}

}  // namespace
}  // namespace rankscope
