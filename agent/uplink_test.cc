// The agent's uplink against a real in-process coordinator over gRPC on loopback: registration,
// clock samples, upload dedup, the control channel, refusals.
#include "agent/uplink.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <optional>
#include <thread>

#include "coordinator/service.h"
#include "model/gpu/test_records.h"
#include "proto/convert.h"
#include "proto/protocol.h"
#include "proto/rpc_calls.h"
#include "proto/upload_chunk.h"

namespace rankscope {
namespace {

using namespace std::chrono_literals;

v1::Identity Ident(const std::string& session, int rank) {
  v1::Identity id;
  id.set_session_id(session);
  id.set_rank(rank);
  id.set_world_size(1);
  id.set_node_name("n1");
  id.set_agent_pid(1000 + rank);
  return id;
}

wire::Batch BatchWith(int collectives, int p2p) {
  wire::Batch b;
  for (int i = 0; i < collectives; ++i) {
    b.collectives.push_back({.comm_id = 1,
                             .seq = static_cast<uint64_t>(i),
                             .op = CollectiveOp::kAllreduce,
                             .comm_size = 1,
                             .enter = i,
                             .exit = i + 1});
  }
  for (int i = 0; i < p2p; ++i) b.p2p.push_back({.peer = 0, .enter = i, .exit = i + 1});
  return b;
}

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds limit = 5000ms) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

class UplinkTest : public ::testing::Test {
 protected:
  void StartServer(bool hold_p2p = false, uint64_t raw_compute = kDefaultRawComputeRecords) {
    CoordinatorConfig config;
    config.session_id = "s1";
    config.token = "secret";
    config.hold_point_to_point = hold_p2p;
    config.raw_compute_records = raw_compute;
    server_ = std::make_unique<CoordinatorServer>(config);
    ASSERT_TRUE(server_->Start().ok());
  }
  UplinkOptions Options(const std::string& token = "secret") {
    UplinkOptions o;
    o.address = server_->address();
    o.token = token;
    o.upload_period = 20 * kNsPerMs;
    o.initial_clock_samples = 8;
    return o;
  }
  // The coordinator's live tally of the one rank, once it has one.
  std::optional<LiveTally> Tally() const {
    const std::vector<LiveTally> t = server_->service().LiveTallies();
    if (t.empty()) return std::nullopt;
    return t[0];
  }
  std::unique_ptr<CoordinatorServer> server_;
};

TEST_F(UplinkTest, DeliversRecordsClockSamplesAndExit) {
  StartServer();
  Uplink up(Options(), Ident("s1", 0));
  up.AddBatch(BatchWith(3, 2));
  up.Start();
  ASSERT_TRUE(WaitFor([&] { return up.registered(); }));
  up.Finish(7, 0);
  Session s = server_->service().Snapshot();
  ASSERT_EQ(s.ranks.size(), 1u);
  const RankData& r = s.ranks[0];
  EXPECT_EQ(r.collectives.size(), 3u);
  EXPECT_EQ(r.p2p.size(), 2u);
  EXPECT_GE(r.clock_samples.size(), 8u + 16u);  // initial + final sync
  EXPECT_TRUE(r.finished);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_TRUE(server_->service().WaitForFinal(1, 0));
}

// The rank's /proc figures so far (for the live check) ride with a batch that goes out anyway,
// alone only after a heartbeat period without one (here never); once the final figures are
// set, later ones are dropped.
TEST_F(UplinkTest, ProcessProgressRidesWithRecordsAndTheFinalFiguresWin) {
  StartServer();
  UplinkOptions o = Options();
  o.clock_period = 600 * kNsPerSec;  // no clock batch but the first
  o.heartbeat_period = 600 * kNsPerSec;
  Uplink up(o, Ident("s1", 0));
  up.Start();
  auto tally = [&] { return Tally(); };
  ASSERT_TRUE(WaitFor([&] { return tally().has_value(); }));  // the first clock samples
  v1::ProcessStats so_far;
  so_far.set_sampled_wall_ns(1'000);
  so_far.set_sched_cpu_ns(400);
  up.SetProcessProgress(so_far);
  std::this_thread::sleep_for(200ms);  // ten upload periods: nothing goes for it alone
  EXPECT_EQ(tally()->proc_wall, 0);
  up.AddBatch(BatchWith(2, 0));
  ASSERT_TRUE(WaitFor([&] { return tally()->proc_wall == 1'000; }));
  EXPECT_EQ(tally()->cpu, 400);
  v1::ProcessStats final_stats;
  final_stats.set_sampled_wall_ns(5'000);
  up.SetProcessStats(final_stats);
  so_far.set_sampled_wall_ns(2'000);
  up.SetProcessProgress(so_far);  // older than the final figures
  up.AddBatch(BatchWith(1, 0));
  up.Finish(0, 0);
  EXPECT_EQ(tally()->proc_wall, 5'000);
}

// A rank that sends no records (stalled in MPI, hung in its own code) is still heard: its
// figures so far go alone once a heartbeat period passed without a batch, with the MPI call it
// is inside, which the coordinator's tally keeps for the stall check.
TEST_F(UplinkTest, FiguresSoFarGoAloneEveryHeartbeatWithTheOpenCall) {
  StartServer();
  UplinkOptions o = Options();
  o.clock_period = 600 * kNsPerSec;
  o.heartbeat_period = 100 * kNsPerMs;
  Uplink up(o, Ident("s1", 0));
  up.Start();
  auto tally = [&] { return Tally(); };
  ASSERT_TRUE(WaitFor([&] { return tally().has_value(); }));
  const TimeNs before = MonotonicNow();
  v1::ProcessStats so_far;
  so_far.set_sampled_wall_ns(3'000);
  OpenCall call;
  call.enter_ns = static_cast<uint64_t>(before - 2 * kNsPerSec);
  call.kind = OpenCallKind::kCollective;
  call.op = 1;
  call.comm_id = 0x77;
  call.seq = 5;
  call.comm_size = 4;
  *so_far.mutable_open_call() = ToProto(call, before);
  up.SetProcessProgress(so_far);
  ASSERT_TRUE(WaitFor([&] { return tally()->proc_wall == 3'000; }));
  const LiveTally t = *tally();
  ASSERT_TRUE(t.open);
  EXPECT_TRUE(t.open->collective);
  EXPECT_EQ(t.open->seq, 5u);
  EXPECT_EQ(t.open->comm_size, 4);
  // Entered 2 s before it was read; received after that.
  EXPECT_LE(t.open->since, MonotonicNow() - 2 * kNsPerSec);
  EXPECT_GE(t.open->since, before - 2 * kNsPerSec);
  EXPECT_EQ(t.open->enter, before - 2 * kNsPerSec);  // on the rank's clock, as sent
  EXPECT_GE(t.heard, before);
  up.Finish(0, 0);
}

// GPU records are summed per window as they come; a window's rows go once records two windows
// later arrive, the rest at the end, and the sums hold the records the buffer bound dropped.
TEST_F(UplinkTest, SumsGpuActivityPerWindowIncludingWhatTheBufferDropped) {
  StartServer();
  UplinkOptions o = Options();
  o.gpu_stats_window = 1000;
  o.max_buffered_records = 6;
  Uplink up(o, Ident("s1", 0));  // started once every batch is queued: nothing sent before
  auto kernel = [](TimeNs start, DurationNs d) {
    GpuActivityRecord g;
    g.kind = GpuActivityKind::kKernel;
    g.device = 0;
    g.stream = 7;
    g.start = start;
    g.end = start + d;
    g.name = "gemm";
    return g;
  };
  wire::Batch first;
  for (TimeNs t : {100, 200, 300}) first.gpu.push_back(kernel(t, 10));
  up.AddBatch(std::move(first));
  wire::Batch later;
  later.gpu.push_back(kernel(3500, 40));  // closes the window [0, 1000): its row is queued
  up.AddBatch(std::move(later));
  wire::Batch over;
  for (int i = 0; i < 5; ++i) over.gpu.push_back(kernel(3600 + i, 1));  // 5 + 5 queued > 6
  up.AddBatch(std::move(over));
  EXPECT_EQ(up.dropped(), 5u);
  up.Start();
  ASSERT_TRUE(WaitFor([&] { return up.registered(); }));
  up.Finish(0, 0);

  const RankData r = server_->service().Snapshot().ranks[0];
  EXPECT_EQ(r.gpu.size(), 4u);
  ASSERT_EQ(r.gpu_stats.size(), 2u);
  EXPECT_EQ(r.gpu_stats[0].window_start, 0);
  EXPECT_EQ(r.gpu_stats[0].count, 3);
  EXPECT_EQ(r.gpu_stats[0].total, 30);
  EXPECT_EQ(r.gpu_stats[0].key.name, "gemm");
  EXPECT_EQ(r.gpu_stats[1].window_start, 3000);
  EXPECT_EQ(r.gpu_stats[1].count, 6);  // the dropped five are counted
  EXPECT_EQ(r.gpu_stats[1].total, 45);
}

// Launch calls and their kernels, in either order and across batches, reach the coordinator as
// per-window launch latencies beside the records.
TEST_F(UplinkTest, SendsLaunchLatenciesPerWindow) {
  StartServer();
  UplinkOptions o = Options();
  o.gpu_stats_window = 1000;
  Uplink up(o, Ident("s1", 0));
  auto record = [](GpuActivityKind kind, uint32_t correlation, TimeNs start, TimeNs end) {
    GpuActivityRecord g;
    g.kind = kind;
    g.correlation_id = correlation;
    g.start = start;
    g.end = end;
    g.name = kind == GpuActivityKind::kRuntime ? "cudaLaunchKernel" : "gemm";
    return g;
  };
  wire::Batch launches;
  launches.gpu.push_back(record(GpuActivityKind::kRuntime, 1, 100, 110));
  launches.gpu.push_back(record(GpuActivityKind::kRuntime, 2, 120, 130));
  up.AddBatch(std::move(launches));
  wire::Batch kernels;
  kernels.gpu.push_back(record(GpuActivityKind::kKernel, 2, 150, 160));    // 20 ns
  kernels.gpu.push_back(record(GpuActivityKind::kKernel, 3, 1500, 1600));  // launch comes next
  kernels.gpu.push_back(record(GpuActivityKind::kKernel, 1, 140, 145));    // 30 ns
  up.AddBatch(std::move(kernels));
  wire::Batch late;
  late.gpu.push_back(record(GpuActivityKind::kRuntime, 3, 1400, 1450));  // 50 ns
  up.AddBatch(std::move(late));
  up.Start();
  ASSERT_TRUE(WaitFor([&] { return up.registered(); }));
  up.Finish(0, 0);

  const RankData r = server_->service().Snapshot().ranks[0];
  EXPECT_EQ(r.gpu.size(), 6u);
  ASSERT_EQ(r.launch_latency.size(), 2u);
  EXPECT_EQ(r.launch_latency[0].window_start, 0);
  EXPECT_EQ(r.launch_latency[0].buckets,
            (std::vector<LatencyBucketCount>{{20, 1, 20}, {30, 1, 30}}));
  EXPECT_EQ(r.launch_latency[1].window_start, 1000);
  EXPECT_EQ(r.launch_latency[1].buckets, (std::vector<LatencyBucketCount>{{50, 1, 50}}));
}

// MPI collectives and NCCL kernels bound the pieces of compute-kernel time the agent sums; the
// pieces reach the coordinator beside the records, late counted; so do the compute spans beside
// NCCL kernels.
TEST_F(UplinkTest, SendsKernelTimeBetweenCollectives) {
  StartServer();
  UplinkOptions o = Options();
  o.gpu_stats_window = 1000;
  o.collective_enter_horizon = 1000;
  Uplink up(o, Ident("s1", 0));
  auto kernel = [](std::string name, TimeNs start, TimeNs end) {
    GpuActivityRecord g;
    g.kind = GpuActivityKind::kKernel;
    g.start = start;
    g.end = end;
    g.name = std::move(name);
    return g;
  };
  wire::Batch mpi;
  CollectiveRecord barrier;
  barrier.op = CollectiveOp::kBarrier;
  barrier.enter = 100;
  barrier.exit = 200;
  mpi.collectives.push_back(barrier);
  up.AddBatch(std::move(mpi));
  wire::Batch gpu;
  gpu.gpu.push_back(kernel("gemm", 150, 300));  // 100 of it after the barrier's exit
  gpu.gpu.push_back(
      kernel("_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LLP24ncclDevKernelArgs", 400, 500));
  gpu.gpu.push_back(kernel("relu", 450, 700));
  gpu.gpu.push_back(kernel("gemm", 9000, 9100));  // after the last boundary: in no piece
  up.AddBatch(std::move(gpu));
  up.Start();
  ASSERT_TRUE(WaitFor([&] { return up.registered(); }));
  up.Finish(0, 0);

  const RankData r = server_->service().Snapshot().ranks[0];
  EXPECT_EQ(r.kernel_pieces,
            (std::vector<KernelPiece>{
                {100, 200, "gemm", 50}, {200, 400, "gemm", 100}, {400, 500, "relu", 50}}));
  EXPECT_EQ(r.kernel_pieces_late, 0u);
  // And the compute beside the NCCL kernel, up to kNcclComputeMargin (1 ms) after it.
  EXPECT_EQ(r.nccl_compute, (Intervals{{450, 700}, {9000, 9100}}));
  EXPECT_EQ(r.nccl_compute_late, 0u);
}

// Once its share of the session's raw budget is sent, an agent sends compute kernels and their
// launch calls only summed, and raw only the first launch and kernel after each NVTX range
// boundary and NCCL's launches; copies, NCCL kernels and everything else still go whole.
TEST_F(UplinkTest, ThinsComputeKernelsAndLaunchesOnceTheRawBudgetIsSent) {
  StartServer(/*hold_p2p=*/false, /*raw_compute=*/8);  // 4 first, the last 4 summed at the end
  UplinkOptions o = Options();
  o.gpu_stats_window = 100;  // decided 300 behind: the steps before 2500 while the run goes on
  o.collective_enter_horizon = 100;
  Uplink up(o, Ident("s1", 0));
  up.Start();
  ASSERT_TRUE(WaitFor([&] { return up.registered(); }));
  const auto record = TestGpuRecord;
  const auto kKernel = GpuActivityKind::kKernel;
  const auto kRuntime = GpuActivityKind::kRuntime;
  wire::Batch first;  // the budget: sent whole
  first.gpu.push_back(record(kRuntime, 1, 90, "cudaLaunchKernel"));
  first.gpu.push_back(record(kKernel, 1, 100, "gemm"));
  first.gpu.push_back(record(kRuntime, 2, 180, "cudaLaunchKernel"));
  first.gpu.push_back(record(kKernel, 2, 200, "gemm"));
  up.AddBatch(std::move(first));
  wire::Batch steps;
  uint32_t id = 10;
  for (TimeNs step : {1000, 1500, 2000}) {
    RangeRecord range;
    range.name = "step";
    range.start = step;
    range.end = step + 500;
    steps.ranges.push_back(range);
    for (TimeNs k = 0; k < 3; ++k) {
      steps.gpu.push_back(record(kRuntime, id, step + 10 + 10 * k, "cudaLaunchKernel"));
      steps.gpu.push_back(record(kKernel, id, step + 50 + 10 * k, "gemm"));
      ++id;
    }
  }
  const std::string nccl = "_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LLP24ncclDevKernelArgs";
  steps.gpu.push_back(record(kRuntime, 99, 2590, "cuLaunchKernelEx"));
  steps.gpu.push_back(record(kKernel, 99, 2600, nccl));
  steps.gpu.push_back(record(GpuActivityKind::kMemcpy, 100, 2800, ""));
  up.AddBatch(std::move(steps));
  up.Finish(0, 0);

  const RankData r = server_->service().Snapshot().ranks[0];
  EXPECT_TRUE(r.compute_kernels_summed);
  std::vector<std::pair<GpuActivityKind, TimeNs>> got;
  for (const GpuActivityRecord& g : r.gpu) got.emplace_back(g.kind, g.start);
  std::sort(got.begin(), got.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  const std::vector<std::pair<GpuActivityKind, TimeNs>> want = {{kRuntime, 90},
                                                                {kKernel, 100},
                                                                {kRuntime, 180},
                                                                {kKernel, 200},  // the budget
                                                                {kRuntime, 1010},
                                                                {kKernel, 1050},
                                                                {kRuntime, 1510},
                                                                {kKernel, 1550},  // first after
                                                                {kRuntime, 2010},
                                                                {kKernel, 2050},
                                                                {kRuntime, 2590},
                                                                {kKernel, 2600},  // each boundary
                                                                {GpuActivityKind::kMemcpy, 2800}};
  std::vector<std::pair<GpuActivityKind, TimeNs>> tail;
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(tail),
                      [](const auto& a, const auto& b) { return a.second < b.second; });
  EXPECT_EQ(got.size(), want.size() + 4);  // the flight recorder's: 4 of the summed ones
  ASSERT_EQ(tail.size(), 4u);
  for (const auto& [kind, start] : tail) {
    EXPECT_TRUE(kind == kKernel || kind == kRuntime);
    EXPECT_GT(start, 1000);
  }
  // The sums hold every kernel all the same.
  int64_t kernels = 0;
  for (const GpuStats& s : r.gpu_stats) {
    if (s.key.kind == kKernel) kernels += s.count;
  }
  EXPECT_EQ(kernels, 12);
  bool said = false;
  for (const std::string& n : r.notices) said |= n.find("8 records of compute kernels") == 0;
  EXPECT_TRUE(said);
}

// A live finding's capture (CAPTURE_AROUND_NOW) sends the flight recorder's summed records
// while the run goes on, and the next ones summed after it whole: the moment is whole on both
// sides in the session, not only the run's first and last records.
TEST_F(UplinkTest, ACaptureAroundNowSendsTheFlightRecorderWhileTheRunGoesOn) {
  StartServer(/*hold_p2p=*/false, /*raw_compute=*/8);  // 4 whole, a flight recorder of 4
  UplinkOptions o = Options();
  o.gpu_stats_window = 100;  // decided 300 behind the latest start
  o.collective_enter_horizon = 100;
  Uplink up(o, Ident("s1", 0));
  up.Start();
  ASSERT_TRUE(WaitFor([&] { return up.registered(); }));
  const auto kKernel = GpuActivityKind::kKernel;
  uint32_t id = 1;
  auto kernels = [&](std::initializer_list<TimeNs> starts) {
    wire::Batch b;
    for (TimeNs t : starts) b.gpu.push_back(TestGpuRecord(kKernel, id++, t, "gemm"));
    up.AddBatch(std::move(b));
  };
  auto starts_received = [&] {
    std::set<TimeNs> got;
    const Session session = server_->service().Snapshot();  // held: the loop reads into it
    for (const GpuActivityRecord& g : session.ranks[0].gpu) got.insert(g.start);
    return got;
  };
  kernels({10, 20, 30, 40});                            // the budget, whole
  kernels({1000, 1010, 1020, 1030, 1040, 1050, 1500});  // summed once 1500 decides them
  ASSERT_TRUE(WaitFor([&] {
    const RankData r = server_->service().Snapshot().ranks[0];
    return !r.gpu_stats.empty() && r.gpu_stats.back().window_start >= 1000;
  }));
  EXPECT_EQ(starts_received(), (std::set<TimeNs>{10, 20, 30, 40}));

  EXPECT_EQ(server_->service().CaptureAround({0, 7}), 1);  // rank 7 has no agent
  ASSERT_TRUE(WaitFor([&] { return starts_received().count(1050) > 0; }));
  EXPECT_EQ(starts_received(), (std::set<TimeNs>{10, 20, 30, 40, 1020, 1030, 1040, 1050}));
  kernels({3000, 3010, 3020, 3030, 3040, 4000});  // 1500 and the next 3 whole, 3030 on summed
  ASSERT_TRUE(WaitFor([&] { return starts_received().count(3020) > 0; }));
  EXPECT_EQ(starts_received().count(3030), 0u);
  up.Finish(0, 0);
  const RankData r = server_->service().Snapshot().ranks[0];
  bool said = false;
  for (const std::string& n : r.notices) {
    said |= n.find("a live finding asked for this rank's raw GPU records around it: the 4") == 0;
  }
  EXPECT_TRUE(said);
}

// MPI calls the analyses do not interpret, and the world ranks of point-to-point peers, reach
// the coordinator's session as the inject library recorded them.
TEST_F(UplinkTest, CarriesMpiCallsWorldPeersAndSpinStarts) {
  StartServer();
  Uplink up(Options(), Ident("s1", 0));
  wire::Batch b = BatchWith(0, 2);
  b.p2p[0].world_peer = 3;
  b.p2p[0].enter = 10;  // polled from 3
  b.p2p[0].exit = 11;
  b.p2p[0].spin_start = 3;
  b.mpi_calls.push_back({.call = MpiCall::kWinFence, .enter = 10, .exit = 20, .tid = 5});
  b.mpi_calls.push_back({.call = MpiCall::kFileReadAt,
                         .comm_id = 9,
                         .peer = 1,
                         .bytes = 4096,
                         .enter = 30,
                         .exit = 40,
                         .tid = 6});
  up.AddBatch(std::move(b));
  up.Start();
  ASSERT_TRUE(WaitFor([&] { return up.registered(); }));
  up.Finish(0, 0);
  Session s = server_->service().Snapshot();
  ASSERT_EQ(s.ranks.size(), 1u);
  const RankData& r = s.ranks[0];
  ASSERT_EQ(r.p2p.size(), 2u);
  EXPECT_EQ(r.p2p[0].world_peer, 3);
  EXPECT_EQ(r.p2p[1].world_peer, kUnknownWorldPeer);
  EXPECT_EQ(r.p2p[0].enter - r.p2p[0].spin_start, 7);
  EXPECT_EQ(r.p2p[1].spin_start, 0);
  ASSERT_EQ(r.mpi_calls.size(), 2u);
  EXPECT_EQ(r.mpi_calls[0].call, MpiCall::kWinFence);
  EXPECT_EQ(r.mpi_calls[0].peer, -1);
  EXPECT_EQ(r.mpi_calls[0].exit, 20);
  EXPECT_EQ(r.mpi_calls[1].call, MpiCall::kFileReadAt);
  EXPECT_EQ(r.mpi_calls[1].comm_id, 9u);
  EXPECT_EQ(r.mpi_calls[1].peer, 1);
  EXPECT_EQ(r.mpi_calls[1].bytes, 4096);
  EXPECT_EQ(r.mpi_calls[1].enter, 30);
  EXPECT_EQ(r.mpi_calls[1].tid, 6u);
}

// A queue several times the coordinator's message limit (a long run's records and a summary of
// every NCCL call) arrives whole, in bounded batches, the exit status with the last.
TEST_F(UplinkTest, AQueueLargerThanAnUploadArrivesWholeInBatches) {
  StartServer();
  UplinkOptions o = Options();
  o.upload_period = 10 * kNsPerSec;  // everything goes at Finish
  Uplink up(o, Ident("s1", 0));
  constexpr int kCollectives = 300'000, kCalls = 320'000;
  up.AddBatch(BatchWith(kCollectives, 0));
  v1::NcclSummary nccl;
  nccl.set_nccl_version("2.28.9");
  for (int i = 0; i < kCalls; ++i) {
    v1::NcclCall* call = nccl.add_calls();
    call->set_comm_id("0x1e900aa5c8e42401");
    call->set_seq(static_cast<uint64_t>(i));
    call->set_op(v1::NCCL_OP_ALL_REDUCE);
    call->set_datatype(v1::NCCL_DATA_TYPE_FLOAT32);
  }
  ASSERT_GT(nccl.ByteSizeLong(), kMaxUploadMessageBytes);
  up.SetNccl(std::move(nccl));
  up.Start();
  ASSERT_TRUE(WaitFor([&] { return up.registered(); }));
  up.Finish(0, 0);
  const Session s = server_->service().Snapshot();
  ASSERT_EQ(s.ranks.size(), 1u);
  const RankData& r = s.ranks[0];
  EXPECT_TRUE(r.finished);
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(r.collectives.size(), static_cast<size_t>(kCollectives));
  ASSERT_TRUE(r.nccl.has_value());
  ASSERT_EQ(r.nccl->calls.size(), static_cast<size_t>(kCalls));
  EXPECT_EQ(r.nccl->calls.back().seq, static_cast<uint64_t>(kCalls - 1));
  EXPECT_EQ(r.dropped_records, 0u);
}

// The buffer bound counts every record kind: GPU activity and MPI calls fill it too.
TEST_F(UplinkTest, BufferBoundCountsEveryRecordKind) {
  StartServer();
  UplinkOptions o = Options();
  o.max_buffered_records = 4;
  Uplink up(o, Ident("s1", 0));
  wire::Batch b;
  b.gpu.resize(3);
  b.mpi_calls.resize(2);
  up.AddBatch(std::move(b));
  EXPECT_EQ(up.dropped(), 5u);
}

TEST_F(UplinkTest, ControlChannelStopsStartsAndFetchesHeldDetail) {
  StartServer(/*hold_p2p=*/true);
  Uplink up(Options(), Ident("s1", 0));
  up.Start();
  ASSERT_TRUE(WaitFor([&] { return up.registered(); }));
  up.AddBatch(BatchWith(1, 5));
  ASSERT_TRUE(
      WaitFor([&] { return server_->service().Snapshot().ranks[0].collectives.size() == 1; }));
  EXPECT_EQ(up.held_p2p(), 5u);  // held on the agent, not streamed
  EXPECT_TRUE(server_->service().Snapshot().ranks[0].p2p.empty());

  server_->service().Broadcast(v1::ControlCommand::SEND_FULL_TRACE);
  ASSERT_TRUE(WaitFor([&] { return server_->service().Snapshot().ranks[0].p2p.size() == 5; }));
  EXPECT_EQ(up.held_p2p(), 0u);

  server_->service().Broadcast(v1::ControlCommand::STOP_CAPTURE);
  ASSERT_TRUE(WaitFor([&] { return !up.capture_enabled(); }));
  up.AddBatch(BatchWith(4, 0));  // ignored while stopped
  server_->service().Broadcast(v1::ControlCommand::START_CAPTURE);
  ASSERT_TRUE(WaitFor([&] { return up.capture_enabled(); }));
  up.AddBatch(BatchWith(2, 0));
  up.Finish(0, 0);
  Session s = server_->service().Snapshot();
  EXPECT_EQ(s.ranks[0].collectives.size(), 3u);  // 1 before, 0 while stopped, 2 after
  bool said_stopped = false;
  for (const auto& n : s.ranks[0].notices)
    said_stopped |= n.find("capture stopped") != std::string::npos;
  EXPECT_TRUE(said_stopped);
}

TEST_F(UplinkTest, WrongTokenIsRefusedAndNothingIsStored) {
  StartServer();
  Uplink up(Options("wrong"), Ident("s1", 0));
  up.AddBatch(BatchWith(1, 0));
  up.Start();
  up.Finish(0, 0);
  EXPECT_FALSE(up.registered());
  EXPECT_TRUE(server_->service().Snapshot().ranks.empty());
  // Refused traffic is one note, and never a reason to call the session partial.
  EXPECT_TRUE(server_->service().Problems().empty());
  auto notes = server_->service().RefusedNotes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("Register with a wrong session token"), std::string::npos) << notes[0];
}

TEST_F(UplinkTest, BuffersUntilTheCoordinatorAppearsThenDelivers) {
  // Learn a free port, free it, and let the agent start before anything listens there.
  StartServer();
  const int port = server_->port();
  server_->Shutdown();
  UplinkOptions o = Options();
  o.address = "127.0.0.1:" + std::to_string(port);
  Uplink up(o, Ident("s1", 0));
  up.AddBatch(BatchWith(5, 0));
  up.Start();
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(up.registered());
  up.AddBatch(BatchWith(2, 0));

  CoordinatorConfig config;
  config.session_id = "s1";
  config.token = "secret";
  config.port = port;
  server_ = std::make_unique<CoordinatorServer>(config);
  ASSERT_TRUE(server_->Start().ok());
  ASSERT_TRUE(WaitFor([&] { return up.registered(); }));
  up.Finish(0, 0);
  Session s = server_->service().Snapshot();
  ASSERT_EQ(s.ranks.size(), 1u);
  EXPECT_EQ(s.ranks[0].collectives.size(), 7u);
  EXPECT_TRUE(s.ranks[0].finished);
}

TEST_F(UplinkTest, CoordinatorAbsentFinishReturnsQuickly) {
  StartServer();
  UplinkOptions o = Options();
  server_->Shutdown();
  Uplink up(o, Ident("s1", 0));
  up.AddBatch(BatchWith(10, 0));
  up.Start();
  auto start = std::chrono::steady_clock::now();
  up.Finish(0, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 6s);  // bounded by final_timeout (5 s)
}

// The spool: removed once the final batch is acknowledged; kept, with what never went out,
// when the coordinator is gone; a spool at its bound adds one notice and the upload goes on
// (the notice is added while the batch is being formed: it must not wait on itself).
TEST_F(UplinkTest, TheSpoolIsKeptOnlyWhenTheCoordinatorDidNotGetEverything) {
  const std::string dir = ::testing::TempDir();
  StartServer();
  {
    UplinkOptions o = Options();
    o.spool_path = dir + "/rankscope-uplink-test-delivered.spool";
    Uplink up(o, Ident("s1", 0));
    up.AddBatch(BatchWith(5, 0));
    up.Start();
    ASSERT_TRUE(WaitFor([&] { return up.registered(); }));
    up.Finish(0, 0);
    EXPECT_NE(access(o.spool_path.c_str(), F_OK), 0);  // delivered: removed
  }
  {
    UplinkOptions o = Options();
    o.spool_path = dir + "/rankscope-uplink-test-bound.spool";
    o.spool_bytes = 64;  // the identity fits, no batch does
    Uplink up(o, Ident("s1", 1));
    up.AddBatch(BatchWith(5, 0));
    up.Start();
    ASSERT_TRUE(WaitFor([&] { return up.registered(); }));
    up.Finish(0, 0);
    const Session s = server_->service().Snapshot();
    ASSERT_EQ(s.ranks.size(), 2u);
    bool said = false;
    for (const std::string& n : s.ranks[1].notices) said |= n.find("spool") != std::string::npos;
    EXPECT_TRUE(said);
    EXPECT_EQ(s.ranks[1].collectives.size(), 5u);
  }
  server_->Shutdown();
  UplinkOptions o = Options();
  o.spool_path = dir + "/rankscope-uplink-test-kept.spool";
  Uplink up(o, Ident("s1", 0));
  up.AddBatch(BatchWith(7, 0));
  up.Start();
  up.Finish(3, 0);
  const Result<SpoolContents> kept = ReadSpool(o.spool_path);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  int collectives = 0;
  bool final = false;
  for (const v1::UploadBatch& b : kept->batches) {
    collectives += b.collectives_size();
    final |= b.final() && b.has_exit() && b.exit().exit_code() == 3;
  }
  EXPECT_EQ(collectives, 7);
  EXPECT_TRUE(final);
  unlink(o.spool_path.c_str());
}

// Calls the service directly with a hand-made request: an agent of an older protocol, a
// resent batch, an unknown agent.
class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CoordinatorConfig config;
    config.session_id = "s1";
    config.token = "secret";
    server_ = std::make_unique<CoordinatorServer>(config);
    ASSERT_TRUE(server_->Start().ok());
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = v1::Coordinator::NewStub(channel_);
  }
  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->AddMetadata(kTokenMetadataKey, "secret");
    return ctx;
  }
  grpc::Status Register(grpc::ClientContext* ctx, const v1::RegisterRequest& req,
                        v1::RegisterResponse* resp) {
    return CallWithOneRequest(
        [&](grpc::ClientContext* c, v1::RegisterResponse* r) { return stub_->Register(c, r); }, ctx,
        req, resp);
  }
  grpc::Status Upload(grpc::ClientContext* ctx, const v1::UploadBatch& batch, v1::UploadAck* ack) {
    return CallWithOneRequest(
        [&](grpc::ClientContext* c, v1::UploadAck* a) { return stub_->Upload(c, a); }, ctx, batch,
        ack);
  }
  std::unique_ptr<CoordinatorServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

TEST_F(ServiceTest, RefusesAnOlderProtocolWithAClearMessage) {
  v1::RegisterRequest req;
  req.set_protocol_version(0);
  req.set_agent_version("0.0.1");
  *req.mutable_identity() = Ident("s1", 0);
  v1::RegisterResponse resp;
  grpc::Status s = Register(Ctx().get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("speaks protocol v3, this agent (0.0.1) speaks v0"),
            std::string::npos)
      << s.error_message();
}

TEST_F(ServiceTest, ResentBatchIsStoredOnceAndUnknownAgentRefused) {
  v1::RegisterRequest req;
  req.set_protocol_version(kProtocolVersion);
  *req.mutable_identity() = Ident("s1", 3);
  v1::RegisterResponse reg;
  ASSERT_TRUE(Register(Ctx().get(), req, &reg).ok());
  v1::UploadBatch batch;
  batch.set_agent_id(reg.agent_id());
  batch.set_batch_seq(0);
  batch.add_ranges()->set_name("step");
  v1::UploadAck ack;
  ASSERT_TRUE(Upload(Ctx().get(), batch, &ack).ok());
  ASSERT_TRUE(Upload(Ctx().get(), batch, &ack).ok());  // ack lost, agent resends
  EXPECT_EQ(server_->service().Snapshot().ranks[0].ranges.size(), 1u);

  batch.set_agent_id("rank9-pid1-r0");
  grpc::Status s = Upload(Ctx().get(), batch, &ack);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("register first"), std::string::npos);
}

// The report takes the session out of the service (no second copy of every record): what came
// before is in it, sorted by rank; a batch or an agent after it is refused and stays spooled.
TEST_F(ServiceTest, TakenSessionHasWhatCameBeforeAndRefusesWhatComesAfter) {
  std::string agents[2];
  for (int rank : {1, 0}) {
    v1::RegisterRequest req;
    req.set_protocol_version(kProtocolVersion);
    *req.mutable_identity() = Ident("s1", rank);
    v1::RegisterResponse reg;
    ASSERT_TRUE(Register(Ctx().get(), req, &reg).ok());
    agents[rank] = reg.agent_id();
    v1::UploadBatch batch;
    batch.set_agent_id(reg.agent_id());
    batch.add_ranges()->set_name("step");
    v1::UploadAck ack;
    ASSERT_TRUE(Upload(Ctx().get(), batch, &ack).ok());
  }
  EXPECT_EQ(server_->service().RankCount(), 2);
  const Session taken = server_->service().TakeSession();
  ASSERT_EQ(taken.ranks.size(), 2u);
  EXPECT_EQ(taken.ranks[0].id.rank, 0);
  EXPECT_EQ(taken.ranks[1].ranges.size(), 1u);
  EXPECT_EQ(taken.session_id, "s1");
  EXPECT_TRUE(server_->service().Snapshot().ranks.empty());
  EXPECT_EQ(server_->service().JobId(), taken.job_id);

  v1::UploadBatch late;
  late.set_agent_id(agents[0]);
  late.set_batch_seq(1);
  late.add_ranges()->set_name("step");
  v1::UploadAck ack;
  grpc::Status s = Upload(Ctx().get(), late, &ack);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("already written"), std::string::npos) << s.error_message();
  v1::RegisterRequest req;
  req.set_protocol_version(kProtocolVersion);
  *req.mutable_identity() = Ident("s1", 2);
  v1::RegisterResponse reg;
  EXPECT_EQ(Register(Ctx().get(), req, &reg).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(ServiceTest, EveryRpcWithoutTokenIsUnauthenticated) {
  grpc::ClientContext c1, c2, c3;
  v1::ClockRequest creq;
  v1::ClockResponse cresp;
  auto clock = stub_->SyncClock(&c1);
  clock->Write(creq);
  EXPECT_FALSE(clock->Read(&cresp));
  EXPECT_EQ(clock->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  v1::UploadBatch b;
  v1::UploadAck a;
  EXPECT_EQ(Upload(&c2, b, &a).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  v1::ControlRequest ctl;
  auto reader = stub_->Control(&c3);
  reader->Write(ctl);
  v1::ControlCommand cmd;
  EXPECT_FALSE(reader->Read(&cmd));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

// An upload over the limit is refused from its length alone, token or not: nothing is stored.
TEST_F(ServiceTest, AnUploadOverTheMessageLimitIsRefusedUnread) {
  v1::UploadBatch batch;
  batch.add_notices()->set_text(std::string(kMaxUploadMessageBytes, 'x'));
  v1::UploadAck ack;
  EXPECT_EQ(Upload(Ctx().get(), batch, &ack).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(server_->service().Snapshot().ranks.empty());
}

// A rank's identity that is no job's (a world size of 2^31 - 1 from a bad environment made the
// coordinator allocate 8 GB listing the missing ranks) is refused before anything is kept.
TEST_F(UplinkTest, AnIdentityBeyondTheWorldSizeLimitIsRefused) {
  StartServer();
  v1::Identity id = Ident("s1", 3);
  id.set_world_size(2147483647);
  Uplink up(Options(), id);
  up.Start();
  EXPECT_TRUE(WaitFor([&] { return !server_->service().Problems().empty(); }));
  up.Finish(0, 0);
  EXPECT_FALSE(up.registered());
  EXPECT_TRUE(server_->service().Snapshot().ranks.empty());
  const std::vector<std::string> problems = server_->service().Problems();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("rank 3 of world size 2147483647"), std::string::npos) << problems[0];
}

// An agent that dies before its final batch (here: its uplink destroyed unfinished, which
// cancels its control stream as a killed process's connection does) is not waited for.
TEST_F(UplinkTest, AnAgentGoneBeforeItsFinalBatchIsNotWaitedFor) {
  StartServer();
  {
    Uplink up(Options(), Ident("s1", 0));
    up.AddBatch(BatchWith(2, 0));
    up.Start();
    ASSERT_TRUE(WaitFor([&] {
      return server_->service().Snapshot().ranks.size() == 1 &&
             server_->service().Snapshot().ranks[0].collectives.size() == 2;
    }));
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(server_->service().WaitForFinal(1, 20 * kNsPerSec));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_FALSE(server_->service().Snapshot().ranks[0].finished);
}

// The agent beside a program that ended without exit() and was reaped before it looked.
TEST_F(UplinkTest, AnUnseenExitIsSentAsSuch) {
  StartServer();
  Uplink up(Options(), Ident("s1", 0));
  up.Start();
  ASSERT_TRUE(WaitFor([&] { return up.registered(); }));
  up.FinishStatusUnseen();
  const RankData r = server_->service().Snapshot().ranks.at(0);
  EXPECT_TRUE(r.finished);
  EXPECT_TRUE(r.exit_unseen);
  EXPECT_FALSE(r.exit_code.has_value());
}

}  // namespace
}  // namespace rankscope
