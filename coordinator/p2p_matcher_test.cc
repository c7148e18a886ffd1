#include "coordinator/p2p_matcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
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

// The session's records fed to a MessageFold window by window, each in the first window whose
// cut is at or after its exit; the messages each window's close gave, and Finish's last.
std::vector<std::vector<P2PMessage>> FoldAt(const Session& s, const std::vector<TimeNs>& cuts,
                                            std::vector<size_t>* held = nullptr) {
  MessageFold fold(s.world_size, WorldCommId(s.world_size));
  std::vector<std::vector<P2PMessage>> out;
  for (size_t w = 0; w <= cuts.size(); ++w) {
    const TimeNs from = w == 0 ? std::numeric_limits<TimeNs>::min() : cuts[w - 1];
    const TimeNs to = w < cuts.size() ? cuts[w] : std::numeric_limits<TimeNs>::max();
    for (const RankData& r : s.ranks) {
      for (size_t i = 0; i < r.p2p.size(); ++i) {
        if (r.p2p[i].exit > from && r.p2p[i].exit <= to) fold.Add(r.id.rank, i, r.p2p[i]);
      }
    }
    out.push_back(w < cuts.size() ? fold.TakeMatched() : fold.Finish());
    if (held != nullptr) held->push_back(fold.held());
  }
  return out;
}

// An Isend posted before the cut and waited for after it, against an Irecv waited for across
// the cut too: nothing closes with the first window; the second gives the message the whole run
// does, records and times.
TEST(MessageFold, AMessageAcrossACutClosesWithItsLastWait) {
  Session s = TwoRanks();
  s.ranks[kSender].p2p.push_back(Record(P2PKind::kIsend, kReceiver, 10, 12));
  s.ranks[kSender].p2p.push_back(WaitFor(P2PKind::kIsend, kReceiver, 50, 60));
  s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kIrecv, kSender, 5, 6));
  s.ranks[kReceiver].p2p.push_back(WaitFor(P2PKind::kIrecv, kSender, 7, 70));
  std::vector<size_t> held;
  const auto windows = FoldAt(s, {30}, &held);
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_TRUE(windows[0].empty());
  EXPECT_GT(held[0], 0u);
  ASSERT_EQ(windows[1].size(), 1u);
  const P2PMessage& m = windows[1][0];
  EXPECT_EQ(m.posted, 10);
  EXPECT_EQ(m.receive_posted, 5);
  EXPECT_EQ(m.blocked, 7);
  EXPECT_EQ(m.wait, 3);
  EXPECT_EQ(m.send_blocked, 50);
  EXPECT_EQ(m.send_record, 0u);
  EXPECT_EQ(m.send_blocked_record, 1u);
  EXPECT_EQ(m.receive_record, 1u);
  EXPECT_EQ(m.receive_posted_record, 0u);
  const std::vector<P2PMessage> whole = Match(s);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].send_blocked, m.send_blocked);
  EXPECT_EQ(whole[0].blocked, m.blocked);
}

// An Isend never waited for (its request freed) holds the later sends of its channel, which MPI
// orders behind it, until the end; there it counts as its own blocking. The receives match in
// order.
TEST(MessageFold, APostNeverWaitedForIsReleasedAtTheEnd) {
  Session s = TwoRanks();
  s.ranks[kSender].p2p.push_back(Record(P2PKind::kIsend, kReceiver, 10, 11));
  s.ranks[kSender].p2p.push_back(Record(P2PKind::kSend, kReceiver, 20, 21));
  s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kRecv, kSender, 5, 30));
  s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kRecv, kSender, 31, 40));
  const auto windows = FoldAt(s, {50, 100});
  EXPECT_TRUE(windows[0].empty());
  EXPECT_TRUE(windows[1].empty());
  ASSERT_EQ(windows[2].size(), 2u);
  std::vector<P2PMessage> last = windows[2];
  OrderMessages(&last);
  EXPECT_EQ(last[0].posted, 10);
  EXPECT_EQ(last[0].send_blocked, 10);
  EXPECT_EQ(last[0].wait, 5);  // blocked at 5, sent at 10
  EXPECT_EQ(last[1].posted, 20);
  EXPECT_EQ(Match(s).size(), 2u);
}

// A Wait whose Irecv named no source (MPI_ANY_SOURCE: its post could not be placed on the
// channel) finds no post pending: from there on the channel's receives are their Waits alone,
// and a later Irecv is not paired with a Wait it may not belong to.
TEST(MessageFold, AWaitWithoutAPostLeavesTheChannelUnpaired) {
  Session s = TwoRanks();
  s.ranks[kSender].p2p.push_back(Record(P2PKind::kSend, kReceiver, 25, 26));
  s.ranks[kSender].p2p.push_back(Record(P2PKind::kSend, kReceiver, 45, 46));
  P2PRecord any = Record(P2PKind::kIrecv, /*peer=*/-1, 5, 6);
  any.world_peer = kUnknownWorldPeer;
  s.ranks[kReceiver].p2p.push_back(any);
  s.ranks[kReceiver].p2p.push_back(WaitFor(P2PKind::kIrecv, kSender, 20, 30));
  s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kIrecv, kSender, 40, 41));
  s.ranks[kReceiver].p2p.push_back(WaitFor(P2PKind::kIrecv, kSender, 50, 60));
  for (const std::vector<TimeNs>& cuts : {std::vector<TimeNs>{}, std::vector<TimeNs>{35}}) {
    SCOPED_TRACE(cuts.empty() ? "one window" : "cut at 35");
    std::vector<P2PMessage> all;
    for (const auto& w : FoldAt(s, cuts)) all.insert(all.end(), w.begin(), w.end());
    OrderMessages(&all);
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].receive_posted, 0);  // not known
    EXPECT_EQ(all[0].blocked, 20);
    EXPECT_EQ(all[0].wait, 5);
    EXPECT_EQ(all[1].receive_posted, 0);  // the Irecv at 40 is not read as its post
    EXPECT_EQ(all[1].blocked, 50);
    EXPECT_EQ(all[1].receive_record, 3u);
  }
}

// A pipeline whose messages fall in different windows: the direct part of each wait weighs the
// two ranks' busy time since the previous message, whichever window it was in, as the whole run
// does; and a ping-pong over many windows holds the same small amount at every cut.
TEST(MessageFold, DirectDelaysReachBackOverTheCutAndMemoryStaysFlat) {
  Session s = TwoRanks();
  std::vector<TimeNs> cuts;
  for (int k = 0; k < 200; ++k) {
    const TimeNs t = 1000 * k;
    // The sender computes 600 (k even) or 300, then sends; the receiver computes 100, then
    // blocks in its receive until the send comes.
    const TimeNs send = t + (k % 2 == 0 ? 600 : 300);
    s.ranks[kSender].p2p.push_back(Record(P2PKind::kSend, kReceiver, send, send + 10));
    s.ranks[kReceiver].p2p.push_back(Record(P2PKind::kRecv, kSender, t + 100, send + 20));
    if (k % 3 == 2) cuts.push_back(t + 990);
  }
  std::vector<size_t> held;
  std::vector<P2PMessage> all;
  for (const auto& w : FoldAt(s, cuts, &held)) all.insert(all.end(), w.begin(), w.end());
  OrderMessages(&all);
  const std::vector<P2PMessage> whole = Match(s);
  ASSERT_EQ(all.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(all[i].wait, whole[i].wait) << i;
    EXPECT_EQ(all[i].direct, whole[i].direct) << i;
  }
  // Since the previous message (its receive ended at t-1000+send+20), the sender was busy up to
  // its send and the receiver only 100 before blocking.
  EXPECT_EQ(whole[1].wait, 200);
  EXPECT_GT(whole[1].direct, 0);
  EXPECT_LE(*std::max_element(held.begin(), held.end()), 8u);
}

}  // namespace
}  // namespace rankscope
