// End-to-end test of the PMPI wrappers: runs mpi_inject_program on 3 ranks under mpirun with
// librankscope_inject.so preloaded, collects what every rank sends on one SOCK_SEQPACKET
// listener, and checks the records against the program's known call sequence.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/inject/test_collector.h"
#include "gtest/gtest.h"

namespace rankscope::inject {
namespace {

using std::chrono::milliseconds;

constexpr int kRanks = 3;

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `command` through the shell; captures stdout, and stderr through a temporary file.
RunResult Shell(const std::string& command) {
  RunResult r;
  char err_path[] = "/tmp/rankscope-inject-stderr-XXXXXX";
  int fd = mkstemp(err_path);
  if (fd >= 0) close(fd);
  FILE* pipe = popen((command + " 2>" + err_path).c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (FILE* f = fopen(err_path, "r")) {
    while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.err.append(buf.data(), n);
    fclose(f);
  }
  unlink(err_path);
  return r;
}

// mpirun as root on a 2-core box with TCP over loopback only. One-sided windows need the pt2pt
// component there: Open MPI 4.1's default choice (rdma, sm) cannot create a window over tcp
// alone and MPI_Win_create fails.
std::string Mpirun(const std::string& exports) {
  return std::string(
             "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
             "OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_osc=pt2pt "
             "timeout 60 ") +
         RANKSCOPE_MPIEXEC + " --allow-run-as-root --oversubscribe -np " + std::to_string(kRanks) +
         " " + exports + " " + RANKSCOPE_MPI_PROGRAM;
}

std::string Preload(const std::string& socket) {
  return std::string("-x LD_PRELOAD=") + RANKSCOPE_INJECT_SO + " -x RANKSCOPE_IPC_SOCKET=" + socket;
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

// Everything one rank (one pid) reported.
struct Rank {
  int world_rank = -1;
  std::vector<CollectiveRecord> collectives;
  std::vector<P2PRecord> p2p;
  std::vector<MpiCallRecord> mpi_calls;
};

struct Expected {
  CollectiveOp op;
  Bytes bytes;
  int root;
  bool nonblocking;
};

// The world-communicator sequence of mpi_inject_program, seq 0..10.
const std::vector<Expected> kWorldSequence = {
    {CollectiveOp::kAllreduce, 16, -1, false},
    {CollectiveOp::kBcast, 64, 1, false},
    {CollectiveOp::kReduce, 16, 0, false},
    {CollectiveOp::kBarrier, 0, -1, false},
    {CollectiveOp::kAllgather, 4, -1, false},
    {CollectiveOp::kAlltoall, 12, -1, false},
    {CollectiveOp::kGather, 4, 2, false},
    {CollectiveOp::kScatter, 8, 0, false},
    {CollectiveOp::kAllreduce, 32, -1, true},
    {CollectiveOp::kBcast, 16, 0, true},
    {CollectiveOp::kReduceScatterBlock, 24, -1, false},
    {CollectiveOp::kScan, 4, -1, false},
    {CollectiveOp::kExscan, 4, -1, false},
    {CollectiveOp::kAlltoallw, 12, -1, false},
    {CollectiveOp::kScan, 4, -1, true},
    {CollectiveOp::kAlltoallw, 12, -1, true},
};

class MpiInjectTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    collector_ = new TestCollector;
    ASSERT_TRUE(collector_->Start());
    run_ = new RunResult(Shell(Mpirun(Preload(collector_->path()))));
    collector_->Drain(milliseconds(5000));
    for (const auto& b : collector_->batches()) {
      Rank& r = (*ranks_)[b.pid];
      r.collectives.insert(r.collectives.end(), b.collectives.begin(), b.collectives.end());
      r.p2p.insert(r.p2p.end(), b.p2p.begin(), b.p2p.end());
      r.mpi_calls.insert(r.mpi_calls.end(), b.mpi_calls.begin(), b.mpi_calls.end());
      dropped_ += b.dropped;
      notices_.insert(notices_.end(), b.notices.begin(), b.notices.end());
    }
  }
  static void TearDownTestSuite() {
    delete collector_;
    delete run_;
  }

  // World records sorted by seq, and each rank's world rank filled in.
  static std::vector<CollectiveRecord> WorldRecords(Rank& r, uint64_t world_id) {
    std::vector<CollectiveRecord> out;
    for (const auto& c : r.collectives) {
      if (c.comm_id == world_id) out.push_back(c);
    }
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.seq < b.seq; });
    return out;
  }

  // The rank's world rank, read from its world collectives.
  static int WorldRankOf(const Rank& r) {
    const uint64_t world = WorldId();
    for (const auto& c : r.collectives) {
      if (c.comm_id == world) return c.comm_rank;
    }
    return -1;
  }

  // The rank's point-to-point records with `tag`, in the order they were emitted.
  static std::vector<P2PRecord> WithTag(const Rank& r, int tag) {
    std::vector<P2PRecord> out;
    for (const auto& p : r.p2p) {
      if (p.tag == tag) out.push_back(p);
    }
    return out;
  }

  // The rank whose world rank is `world_rank`.
  static const Rank* ByWorldRank(int world_rank) {
    for (const auto& [pid, r] : *ranks_) {
      if (WorldRankOf(r) == world_rank) return &r;
    }
    return nullptr;
  }

  static uint64_t WorldId() {
    // The first record of every rank is the world allreduce.
    for (auto& [pid, r] : *ranks_) {
      for (const auto& c : r.collectives) {
        if (c.seq == 0 && c.comm_size == kRanks) return c.comm_id;
      }
    }
    return 0;
  }

  static TestCollector* collector_;
  static RunResult* run_;
  static std::map<uint32_t, Rank>* ranks_;
  static uint64_t dropped_;
  static std::vector<std::string> notices_;
};
TestCollector* MpiInjectTest::collector_ = nullptr;
RunResult* MpiInjectTest::run_ = nullptr;
std::map<uint32_t, Rank>* MpiInjectTest::ranks_ = new std::map<uint32_t, Rank>;
uint64_t MpiInjectTest::dropped_ = 0;
std::vector<std::string> MpiInjectTest::notices_;

TEST_F(MpiInjectTest, ProgramRunsAndEveryRankReports) {
  EXPECT_EQ(run_->exit_code, 0) << run_->err;
  EXPECT_NE(run_->out.find("checksum"), std::string::npos) << run_->out;
  EXPECT_EQ(ranks_->size(), static_cast<size_t>(kRanks));
  EXPECT_TRUE(collector_->errors().empty()) << collector_->errors().front();
  EXPECT_EQ(dropped_, 0u);
  EXPECT_TRUE(notices_.empty()) << notices_.front();
  EXPECT_EQ(run_->err.find("rankscope-inject:"), std::string::npos) << run_->err;
}

TEST_F(MpiInjectTest, WorldCollectivesAgreeAcrossRanks) {
  uint64_t world = WorldId();
  ASSERT_NE(world, 0u);
  std::set<int> world_ranks;
  for (auto& [pid, r] : *ranks_) {
    std::vector<CollectiveRecord> recs = WorldRecords(r, world);
    ASSERT_EQ(recs.size(), kWorldSequence.size()) << "pid " << pid;
    for (size_t i = 0; i < recs.size(); ++i) {
      const CollectiveRecord& c = recs[i];
      const Expected& e = kWorldSequence[i];
      SCOPED_TRACE("pid " + std::to_string(pid) + " seq " + std::to_string(i));
      EXPECT_EQ(c.seq, i);
      EXPECT_EQ(c.op, e.op);
      EXPECT_EQ(c.bytes, e.bytes);
      EXPECT_EQ(c.root, e.root);
      EXPECT_EQ(c.nonblocking, e.nonblocking);
      EXPECT_EQ(c.comm_size, kRanks);
      EXPECT_EQ(c.comm_rank, recs[0].comm_rank);
      EXPECT_LE(c.enter, c.exit);
      EXPECT_NE(c.tid, 0u);
      if (i > 0) {
        EXPECT_GE(c.enter, recs[i - 1].enter);
      }
    }
    r.world_rank = recs[0].comm_rank;
    world_ranks.insert(r.world_rank);
  }
  EXPECT_EQ(world_ranks, (std::set<int>{0, 1, 2}));
}

TEST_F(MpiInjectTest, SplitCommunicatorHasItsOwnIdAndSequence) {
  uint64_t world = WorldId();
  std::map<int, uint64_t> half_id_by_world_rank;
  for (auto& [pid, r] : *ranks_) {
    std::vector<CollectiveRecord> half;
    int world_rank = -1;
    for (const auto& c : r.collectives) {
      if (c.comm_id == world) {
        world_rank = c.comm_rank;
      } else if (c.comm_size < 3) {  // size 3 is the duplicate of world
        half.push_back(c);
      }
    }
    ASSERT_EQ(half.size(), 2u) << "pid " << pid;
    std::sort(half.begin(), half.end(), [](auto& a, auto& b) { return a.seq < b.seq; });
    EXPECT_EQ(half[0].op, CollectiveOp::kAllreduce);
    EXPECT_EQ(half[0].seq, 0u);
    EXPECT_EQ(half[0].bytes, 8);
    EXPECT_EQ(half[1].op, CollectiveOp::kBarrier);
    EXPECT_EQ(half[1].seq, 1u);
    EXPECT_EQ(half[0].comm_id, half[1].comm_id);
    EXPECT_EQ(half[0].comm_size, world_rank == 1 ? 1 : 2);
    half_id_by_world_rank[world_rank] = half[0].comm_id;
  }
  ASSERT_EQ(half_id_by_world_rank.size(), 3u);
  EXPECT_EQ(half_id_by_world_rank[0], half_id_by_world_rank[2]);
  EXPECT_NE(half_id_by_world_rank[0], half_id_by_world_rank[1]);
  EXPECT_NE(half_id_by_world_rank[0], world);
  EXPECT_NE(half_id_by_world_rank[1], world);
}

TEST_F(MpiInjectTest, DuplicateOfWorldHasItsOwnId) {
  uint64_t world = WorldId();
  std::set<uint64_t> dup_ids;
  for (auto& [pid, r] : *ranks_) {
    std::vector<CollectiveRecord> dup;
    for (const auto& c : r.collectives) {
      if (c.comm_id != world && c.comm_size == 3 && c.op == CollectiveOp::kBarrier) {
        dup.push_back(c);
      }
    }
    ASSERT_EQ(dup.size(), 1u) << "pid " << pid;
    EXPECT_EQ(dup[0].op, CollectiveOp::kBarrier);
    EXPECT_EQ(dup[0].seq, 0u);
    dup_ids.insert(dup[0].comm_id);
  }
  EXPECT_EQ(dup_ids.size(), 1u);  // every member computed the same id
}

TEST_F(MpiInjectTest, PointToPointRecords) {
  uint64_t world = WorldId();
  for (auto& [pid, r] : *ranks_) {
    int world_rank = -1;
    for (const auto& c : r.collectives) {
      if (c.comm_id == world) world_rank = c.comm_rank;
    }
    SCOPED_TRACE("world rank " + std::to_string(world_rank));
    std::map<P2PKind, std::vector<P2PRecord>> by_kind;
    for (const auto& p : r.p2p) {
      if (p.tag != 5 && p.tag != 9) continue;  // the ring and the Send / Recv pair
      EXPECT_EQ(p.comm_id, world);
      by_kind[p.kind].push_back(p);
    }
    ASSERT_EQ(by_kind[P2PKind::kIsend].size(), 1u);
    ASSERT_EQ(by_kind[P2PKind::kIrecv].size(), 1u);
    EXPECT_EQ(by_kind[P2PKind::kIsend][0].peer, (world_rank + 1) % kRanks);
    EXPECT_EQ(by_kind[P2PKind::kIrecv][0].peer, -1);  // posted with MPI_ANY_SOURCE
    ASSERT_EQ(by_kind[P2PKind::kWait].size(), 2u);
    for (const auto& w : by_kind[P2PKind::kWait]) {
      EXPECT_EQ(w.bytes, 4);
      EXPECT_EQ(w.tag, 5);
      if (w.completed == P2PKind::kIrecv) {
        // Resolved from the status MPI_Waitall filled in, though the program ignored it.
        EXPECT_EQ(w.peer, (world_rank + kRanks - 1) % kRanks);
      } else {
        EXPECT_EQ(w.completed, P2PKind::kIsend);
        EXPECT_EQ(w.peer, (world_rank + 1) % kRanks);
      }
    }
    if (world_rank == 0) {
      ASSERT_EQ(by_kind[P2PKind::kSend].size(), 1u);
      EXPECT_EQ(by_kind[P2PKind::kSend][0].peer, 1);
      EXPECT_EQ(by_kind[P2PKind::kSend][0].bytes, 8);
    }
    if (world_rank == 1) {
      ASSERT_EQ(by_kind[P2PKind::kRecv].size(), 1u);
      EXPECT_EQ(by_kind[P2PKind::kRecv][0].peer, 0);
      EXPECT_EQ(by_kind[P2PKind::kRecv][0].bytes, 8);
      EXPECT_EQ(by_kind[P2PKind::kRecv][0].tag, 9);
    }
  }
}

// On MPI_COMM_WORLD a peer's world rank is the peer itself.
TEST_F(MpiInjectTest, WorldPeersAreWorldRanks) {
  const uint64_t world = WorldId();
  for (const auto& [pid, r] : *ranks_) {
    for (const auto& p : r.p2p) {
      if (p.comm_id != world) continue;
      SCOPED_TRACE("tag " + std::to_string(p.tag) + " kind " + std::string(P2PKindName(p.kind)));
      EXPECT_EQ(p.world_peer, p.peer < 0 ? kUnknownWorldPeer : p.peer);
    }
  }
}

TEST_F(MpiInjectTest, SendrecvRecordsOneSendAndOneReceive) {
  for (const auto& [pid, r] : *ranks_) {
    const int w = WorldRankOf(r);
    SCOPED_TRACE("world rank " + std::to_string(w));
    for (int tag : {20, 21}) {
      std::vector<P2PRecord> recs = WithTag(r, tag);
      ASSERT_EQ(recs.size(), 2u) << "tag " << tag;
      const P2PRecord& send = recs[0];
      const P2PRecord& recv = recs[1];
      EXPECT_EQ(send.kind, P2PKind::kSend);
      EXPECT_EQ(recv.kind, P2PKind::kRecv);
      EXPECT_EQ(send.enter, recv.enter);
      EXPECT_EQ(send.exit, recv.exit);
      EXPECT_LE(send.enter, send.exit);
      // Tag 20 goes to the next rank and comes (MPI_ANY_SOURCE, resolved) from the previous;
      // Sendrecv_replace (tag 21) goes the other way.
      const int to = tag == 20 ? (w + 1) % kRanks : (w + kRanks - 1) % kRanks;
      const int from = tag == 20 ? (w + kRanks - 1) % kRanks : (w + 1) % kRanks;
      EXPECT_EQ(send.peer, to);
      EXPECT_EQ(recv.peer, from);
      EXPECT_EQ(send.bytes, tag == 20 ? 4 : 8);
      EXPECT_EQ(recv.bytes, tag == 20 ? 4 : 8);
      EXPECT_EQ(recv.tag, tag);
    }
  }
}

TEST_F(MpiInjectTest, SendModesHaveTheirKinds) {
  const Rank* sender = ByWorldRank(0);
  const Rank* receiver = ByWorldRank(1);
  ASSERT_NE(sender, nullptr);
  ASSERT_NE(receiver, nullptr);
  struct Mode {
    int tag;
    P2PKind post;
    bool nonblocking;
  };
  for (const Mode& m : {Mode{30, P2PKind::kSsend, false}, Mode{31, P2PKind::kBsend, false},
                        Mode{32, P2PKind::kSend, false}, Mode{34, P2PKind::kIssend, true},
                        Mode{35, P2PKind::kIbsend, true}, Mode{36, P2PKind::kIsend, true}}) {
    SCOPED_TRACE("tag " + std::to_string(m.tag));
    std::vector<P2PRecord> sent = WithTag(*sender, m.tag);
    ASSERT_EQ(sent.size(), m.nonblocking ? 2u : 1u);
    EXPECT_EQ(sent[0].kind, m.post);
    EXPECT_EQ(sent[0].peer, 1);
    EXPECT_EQ(sent[0].bytes, 4);
    if (m.nonblocking) {
      EXPECT_EQ(sent[1].kind, P2PKind::kWait);
      EXPECT_EQ(sent[1].completed, m.post);
    }
    std::vector<P2PRecord> received = WithTag(*receiver, m.tag);
    ASSERT_FALSE(received.empty());
    EXPECT_EQ(received.back().peer, 0);
    EXPECT_EQ(received.back().bytes, 4);
  }
}

TEST_F(MpiInjectTest, ProbesAreReceiveSideWaits) {
  const Rank* r = ByWorldRank(0);
  ASSERT_NE(r, nullptr);
  struct Probe {
    int tag;
    Bytes bytes;
    bool polled;
  };
  for (const Probe& p :
       {Probe{40, 12, false}, Probe{41, 4, true}, Probe{42, 8, false}, Probe{43, 4, true}}) {
    SCOPED_TRACE("tag " + std::to_string(p.tag));
    std::vector<P2PRecord> recs = WithTag(*r, p.tag);
    ASSERT_GE(recs.size(), 2u);
    const P2PRecord& probe = recs[0];
    EXPECT_EQ(probe.kind, P2PKind::kProbe);
    EXPECT_EQ(probe.peer, 2);
    EXPECT_EQ(probe.world_peer, 2);
    EXPECT_EQ(probe.bytes, p.bytes);
    EXPECT_EQ(probe.comm_id, WorldId());
    EXPECT_LE(probe.enter, probe.exit);
    // The polling loops ran while rank 2 slept 20 ms: one record covers the unsuccessful calls.
    // Their spin_start lies inside the loop, after the receive of the tag before (where it
    // begins depends on whether the rank was descheduled between two polls: PollRun, tested in
    // poll_run_test.cc).
    if (p.polled) {
      EXPECT_GE(probe.exit - probe.enter, 5 * kNsPerMs);
      std::vector<P2PRecord> before = WithTag(*r, p.tag - 1);
      ASSERT_FALSE(before.empty());
      EXPECT_GE(probe.spin_start, before.back().exit);
      EXPECT_LT(probe.spin_start, probe.exit);
    } else {
      EXPECT_EQ(probe.spin_start, probe.enter);
    }
    // Then the receive: Recv, Mrecv, or Imrecv + Wait, all with the message's source and size.
    const P2PRecord& receive = recs.back();
    EXPECT_EQ(receive.kind, p.tag == 43 ? P2PKind::kWait : P2PKind::kRecv);
    EXPECT_EQ(receive.peer, 2);
    EXPECT_EQ(receive.world_peer, 2);
    EXPECT_EQ(receive.bytes, p.bytes);
    EXPECT_EQ(receive.comm_id, WorldId());
    EXPECT_GE(receive.enter, probe.exit);
    if (p.tag == 43) {
      ASSERT_EQ(recs.size(), 3u);
      EXPECT_EQ(recs[1].kind, P2PKind::kIrecv);
      EXPECT_EQ(recs[1].peer, 2);
      EXPECT_EQ(receive.completed, P2PKind::kIrecv);
    }
  }
}

// Rank 2 polls with MPI_Test while rank 1 sleeps 20 ms: the completing kWait covers the loop.
TEST_F(MpiInjectTest, TestLoopCountsAsWaiting) {
  const Rank* r = ByWorldRank(2);
  ASSERT_NE(r, nullptr);
  std::vector<P2PRecord> recs = WithTag(*r, 50);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].kind, P2PKind::kIrecv);
  const P2PRecord& wait = recs[1];
  EXPECT_EQ(wait.kind, P2PKind::kWait);
  EXPECT_EQ(wait.peer, 1);
  EXPECT_GE(wait.exit - wait.enter, 5 * kNsPerMs);
  EXPECT_GE(wait.enter, recs[0].exit);
  // The polling began after the Send that told rank 1 the receive was posted, not before it.
  std::vector<P2PRecord> told = WithTag(*r, 51);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_GE(wait.spin_start, told[0].exit);
  // How far back the run reaches depends on rank 2 not being descheduled between polls (PollRun,
  // tested in poll_run_test.cc). It often is near the loop's end on a loaded machine: rank 1
  // waking to send takes a core from a spinning rank, and CI saw a run of 5.5 us.
  EXPECT_LT(wait.spin_start, wait.exit);
}

// Rank 2 tests two requests in turn: each completion's record counts only its own calls, and
// each spin_start lies in the loop over both (after the Send of tag 54), the second one's after
// the first completion, so the two do not overlap. (How far back each reaches depends on the
// rank being descheduled between polls: PollRun, tested in poll_run_test.cc.)
TEST_F(MpiInjectTest, PollingInTurnSpinsFromTheLoopsStart) {
  const Rank* r = ByWorldRank(2);
  ASSERT_NE(r, nullptr);
  std::vector<P2PRecord> told = WithTag(*r, 54);
  std::vector<P2PRecord> first = WithTag(*r, 52);
  std::vector<P2PRecord> second = WithTag(*r, 53);
  ASSERT_EQ(told.size(), 1u);
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(second.size(), 2u);
  const P2PRecord& a = first[1];
  const P2PRecord& b = second[1];
  ASSERT_EQ(a.kind, P2PKind::kWait);
  ASSERT_EQ(b.kind, P2PKind::kWait);
  EXPECT_GE(a.spin_start, told[0].exit);
  EXPECT_LT(a.spin_start, a.exit);
  EXPECT_GE(b.spin_start, a.exit);
  EXPECT_LT(b.spin_start, b.exit);
}

// The cartesian ring runs over the world in reverse order and carries no collective: only the
// world ranks the records carry place its peers.
TEST_F(MpiInjectTest, CartesianPeersCarryWorldRanks) {
  std::set<uint64_t> collective_comms;
  for (const auto& [pid, r] : *ranks_) {
    for (const auto& c : r.collectives) collective_comms.insert(c.comm_id);
  }
  std::set<uint64_t> ring_ids;
  for (const auto& [pid, r] : *ranks_) {
    const int w = WorldRankOf(r);
    SCOPED_TRACE("world rank " + std::to_string(w));
    std::vector<P2PRecord> recs = WithTag(r, 60);
    ASSERT_EQ(recs.size(), 2u);
    const P2PRecord& send = recs[0];
    const P2PRecord& recv = recs[1];
    EXPECT_EQ(send.kind, P2PKind::kSend);
    EXPECT_EQ(recv.kind, P2PKind::kRecv);
    EXPECT_EQ(send.comm_id, recv.comm_id);
    EXPECT_EQ(collective_comms.count(send.comm_id), 0u);
    ring_ids.insert(send.comm_id);
    EXPECT_EQ(send.world_peer, 2 - send.peer);
    EXPECT_EQ(recv.world_peer, 2 - recv.peer);
    EXPECT_EQ(send.world_peer, (w + kRanks - 1) % kRanks);
    EXPECT_EQ(recv.world_peer, (w + 1) % kRanks);
  }
  EXPECT_EQ(ring_ids.size(), 1u);
}

TEST_F(MpiInjectTest, NeighbourhoodCollectives) {
  std::set<uint64_t> ids;
  for (const auto& [pid, r] : *ranks_) {
    std::vector<CollectiveRecord> hood;
    for (const auto& c : r.collectives) {
      if (c.op >= CollectiveOp::kNeighborAllgather) hood.push_back(c);
    }
    ASSERT_EQ(hood.size(), 3u) << "pid " << pid;
    std::sort(hood.begin(), hood.end(), [](auto& a, auto& b) { return a.seq < b.seq; });
    EXPECT_EQ(hood[0].op, CollectiveOp::kNeighborAllgather);
    EXPECT_EQ(hood[0].bytes, 4);
    EXPECT_EQ(hood[1].op, CollectiveOp::kNeighborAlltoall);
    EXPECT_EQ(hood[1].bytes, 8);
    EXPECT_FALSE(hood[1].nonblocking);
    EXPECT_EQ(hood[2].op, CollectiveOp::kNeighborAlltoall);
    EXPECT_EQ(hood[2].bytes, 8);
    EXPECT_TRUE(hood[2].nonblocking);
    for (size_t i = 0; i < hood.size(); ++i) EXPECT_EQ(hood[i].seq, i);
    ids.insert(hood[0].comm_id);
  }
  EXPECT_EQ(ids.size(), 1u);
}

TEST_F(MpiInjectTest, UninterpretedCallsAreRecorded) {
  for (const auto& [pid, r] : *ranks_) {
    const int w = WorldRankOf(r);
    SCOPED_TRACE("world rank " + std::to_string(w));
    std::map<MpiCall, std::vector<MpiCallRecord>> by_call;
    for (const auto& m : r.mpi_calls) {
      EXPECT_LE(m.enter, m.exit);
      EXPECT_NE(m.tid, 0u);
      by_call[m.call].push_back(m);
    }
    EXPECT_EQ(by_call[MpiCall::kWinFence].size(), 2u);
    for (MpiCall targeted :
         {MpiCall::kWinLock, MpiCall::kWinFlush, MpiCall::kWinFlushLocal, MpiCall::kWinUnlock}) {
      ASSERT_EQ(by_call[targeted].size(), 1u) << MpiCallName(targeted);
      EXPECT_EQ(by_call[targeted][0].peer, (w + 1) % kRanks) << MpiCallName(targeted);
    }
    for (MpiCall once : {MpiCall::kWinLockAll, MpiCall::kWinFlushAll, MpiCall::kWinFlushLocalAll,
                         MpiCall::kWinUnlockAll, MpiCall::kWinPost, MpiCall::kWinStart,
                         MpiCall::kWinComplete, MpiCall::kWinWait, MpiCall::kStartall}) {
      ASSERT_EQ(by_call[once].size(), 1u) << MpiCallName(once);
      EXPECT_EQ(by_call[once][0].peer, -1) << MpiCallName(once);
    }
    EXPECT_EQ(by_call[MpiCall::kStart].size(), 2u);
    for (MpiCall io : {MpiCall::kFileRead, MpiCall::kFileReadAt, MpiCall::kFileReadAll,
                       MpiCall::kFileReadAtAll, MpiCall::kFileWrite, MpiCall::kFileWriteAt,
                       MpiCall::kFileWriteAll, MpiCall::kFileWriteAtAll}) {
      ASSERT_EQ(by_call[io].size(), 1u) << MpiCallName(io);
      EXPECT_EQ(by_call[io][0].bytes, 16) << MpiCallName(io);
    }
  }
}

// With no agent listening, the program's output and exit code are unchanged; each rank says
// once that capture is off.
TEST(MpiInjectNoAgent, ProgramUnchanged) {
  RunResult plain = Shell(Mpirun(""));
  RunResult orphan = Shell(Mpirun(Preload("/tmp/rankscope-inject-test-nobody-listens.sock")));
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(orphan.exit_code, plain.exit_code) << orphan.err;
  EXPECT_EQ(orphan.out, plain.out);
  EXPECT_EQ(Count(orphan.err, "rankscope-inject: "), static_cast<size_t>(kRanks)) << orphan.err;
}

// A program without MPI still loads the library, even with every symbol bound at load time.
TEST(InjectLibrary, LoadsIntoNonMpiProgram) {
  RunResult r = Shell(std::string("LD_BIND_NOW=1 RANKSCOPE_IPC_SOCKET=/nonexistent LD_PRELOAD=") +
                      RANKSCOPE_INJECT_SO + " /bin/echo loaded");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "loaded\n");
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace rankscope::inject
