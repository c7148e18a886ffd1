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

// mpirun as root on a 2-core box with TCP over loopback only.
std::string Mpirun(const std::string& exports) {
  return std::string(
             "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
             "OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo "
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
      if (c.comm_id != world && c.comm_size == 3) dup.push_back(c);
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
