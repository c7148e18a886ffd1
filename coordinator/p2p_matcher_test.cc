#include "coordinator/p2p_matcher.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/comm_id.h"

namespace rankscope {
namespace {

constexpr int kSender = 0;
constexpr int kReceiver = 1;

// Two aligned ranks; records are added per test.
Session TwoRanks() {
  Session s;
  s.world_size = 2;
  s.aligned = true;
  s.ranks.resize(2);
  for (int r = 0; r < 2; ++r) {
    s.ranks[static_cast<size_t>(r)].id.rank = r;
    s.ranks[static_cast<size_t>(r)].id.world_size = 2;
  }
  return s;
}

P2PRecord Record(P2PKind kind, int peer, TimeNs enter, TimeNs exit, int tag = 7,
                 uint64_t comm = WorldCommId(2)) {
  P2PRecord p;
  p.kind = kind;
  p.completed = kind;
  p.peer = peer;
  p.tag = tag;
  p.comm_id = comm;
  p.bytes = 4;
  p.enter = enter;
  p.exit = exit;
  p.world_peer = comm == WorldCommId(2) ? peer : kUnknownWorldPeer;
  return p;
}

P2PRecord WaitFor(P2PKind posted, int peer, TimeNs enter, TimeNs exit) {
  P2PRecord p = Record(P2PKind::kWait, peer, enter, exit);
  p.completed = posted;
  return p;
}

std::vector<P2PMessage> Match(const Session& s, P2PMatchStats* stats = nullptr) {
  return MatchMessages(s, stats);
}

// The receive is posted at 100; the sender blocked from 10. The send's end at 95 (before the
// receive's post, as clock error makes it look) rules out a standard send's wait, but a
// synchronous send cannot finish before its receive starts: it waited.
TEST(P2PMatcher, SynchronousSendAlwaysWaitsForALateReceiver) {
  for (P2PKind kind : {P2PKind::kSend, P2PKind::kSsend, P2PKind::kBsend}) {
    SCOPED_TRACE(std::string(P2PKindName(kind)));
    Session s = TwoRanks();
    s.ranks[kSender].p2p.push_back(Record(kind, kReceiver, 10, 95));
    s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kRecv, kSender, 100, 110));
    std::vector<P2PMessage> m = Match(s);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].send_wait, kind == P2PKind::kSsend ? 85 : 0);
  }
}

// A send still going when the receive is posted: a standard send waited, a buffered one never
// does (its time is the copy into the attached buffer).
TEST(P2PMatcher, BufferedSendNeverWaits) {
  for (P2PKind kind : {P2PKind::kSend, P2PKind::kBsend}) {
    SCOPED_TRACE(std::string(P2PKindName(kind)));
    Session s = TwoRanks();
    s.ranks[kSender].p2p.push_back(Record(kind, kReceiver, 10, 120));
    s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kRecv, kSender, 100, 130));
    std::vector<P2PMessage> m = Match(s);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].send_wait, kind == P2PKind::kSend ? 90 : 0);
  }
}

// Posted sends of each mode pair with the Waits that completed them; the mode decides.
TEST(P2PMatcher, PostedSendModesPairWithTheirWaits) {
  for (P2PKind kind : {P2PKind::kIsend, P2PKind::kIssend, P2PKind::kIbsend}) {
    SCOPED_TRACE(std::string(P2PKindName(kind)));
    Session s = TwoRanks();
    s.ranks[kSender].p2p.push_back(Record(kind, kReceiver, 5, 6));
    s.ranks[kSender].p2p.push_back(WaitFor(kind, kReceiver, 10, 95));
    s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kRecv, kSender, 100, 110));
    P2PMatchStats stats;
    std::vector<P2PMessage> m = Match(s, &stats);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(stats.sends, 1);
    EXPECT_EQ(m[0].posted, 5);
    EXPECT_EQ(m[0].send_blocked, 10);
    EXPECT_EQ(m[0].send_wait, kind == P2PKind::kIssend ? 85 : 0);
  }
}

// The receiver probed from 10 to 50 for a message sent at 45, then received it at 60: it was
// waiting from 10. Without the probe its receive came after the send and waited for nothing.
TEST(P2PMatcher, ProbeBeforeReceiveCountsAsBlocked) {
  for (bool probed : {false, true}) {
    SCOPED_TRACE(probed ? "probed" : "not probed");
    Session s = TwoRanks();
    s.ranks[kSender].p2p.push_back(Record(P2PKind::kSend, kReceiver, 45, 46));
    if (probed) s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kProbe, kSender, 10, 50));
    s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kRecv, kSender, 60, 61));
    P2PMatchStats stats;
    std::vector<P2PMessage> m = Match(s, &stats);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(stats.receives, 1);  // a probe is not a receive
    EXPECT_EQ(m[0].blocked, probed ? 10 : 60);
    EXPECT_EQ(m[0].wait, probed ? 35 : 0);
    EXPECT_EQ(m[0].receive_posted, 60);
  }
}

// A probe counts only for the next receive of its channel, and only for its own channel.
TEST(P2PMatcher, ProbeBlocksOnlyTheNextReceiveOfItsChannel) {
  Session s = TwoRanks();
  s.ranks[kSender].p2p.push_back(Record(P2PKind::kSend, kReceiver, 45, 46));
  s.ranks[kSender].p2p.push_back(Record(P2PKind::kSend, kReceiver, 200, 201));
  s.ranks[kSender].p2p.push_back(Record(P2PKind::kSend, kReceiver, 300, 301, /*tag=*/8));
  s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kProbe, kSender, 10, 50));
  s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kRecv, kSender, 60, 61));
  s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kRecv, kSender, 150, 210));
  s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kProbe, kSender, 250, 310, /*tag=*/8));
  s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kRecv, kSender, 320, 321, /*tag=*/8));
  std::vector<P2PMessage> m = Match(s);
  ASSERT_EQ(m.size(), 3u);  // in receiver block order
  EXPECT_EQ(m[0].blocked, 10);
  EXPECT_EQ(m[0].wait, 35);
  EXPECT_EQ(m[1].blocked, 150);  // its own blocking receive, not the earlier probe
  EXPECT_EQ(m[1].wait, 50);
  EXPECT_EQ(m[2].blocked, 250);
  EXPECT_EQ(m[2].wait, 50);
}

// A probe loop before an Irecv + Wait: the receive is the Irecv's post.
TEST(P2PMatcher, ProbeBeforeNonBlockingReceive) {
  Session s = TwoRanks();
  s.ranks[kSender].p2p.push_back(Record(P2PKind::kSend, kReceiver, 45, 46));
  s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kProbe, kSender, 20, 50));
  s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kIrecv, kSender, 55, 56));
  s.ranks[kReceiver].p2p.push_back(WaitFor(P2PKind::kIrecv, kSender, 57, 58));
  std::vector<P2PMessage> m = Match(s);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].blocked, 20);
  EXPECT_EQ(m[0].wait, 25);
}

// A communicator that carries no collective (a cartesian ring used for a halo exchange), over
// the world in reverse order: communicator rank 0 is world rank 1. The world ranks the records
// carry place the peers; records made before they did cannot be placed.
TEST(P2PMatcher, WorldPeersPlaceCommunicatorsWithoutCollectives) {
  constexpr uint64_t kRing = 0xc0ffee;
  for (bool recorded : {true, false}) {
    SCOPED_TRACE(recorded ? "world peers recorded" : "old session");
    Session s = TwoRanks();
    P2PRecord send = Record(P2PKind::kSend, /*peer=*/0, 45, 46, 7, kRing);  // world 1 is ring 0
    P2PRecord recv = Record(P2PKind::kRecv, /*peer=*/1, 10, 50, 7, kRing);  // world 0 is ring 1
    if (recorded) {
      send.world_peer = kReceiver;
      recv.world_peer = kSender;
    }
    s.ranks[kSender].p2p.push_back(send);
    s.ranks[kReceiver].p2p.push_back(recv);
    P2PMatchStats stats;
    std::vector<P2PMessage> m = Match(s, &stats);
    if (recorded) {
      ASSERT_EQ(m.size(), 1u);
      EXPECT_EQ(m[0].sender, kSender);
      EXPECT_EQ(m[0].receiver, kReceiver);
      EXPECT_EQ(m[0].wait, 35);
      EXPECT_EQ(stats.unmapped, 0);
    } else {
      EXPECT_TRUE(m.empty());
      EXPECT_EQ(stats.unmapped, 2);
    }
  }
}

}  // namespace
}  // namespace rankscope
