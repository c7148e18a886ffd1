#include "coordinator/report/test_session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "coordinator/report/gpu_json.h"

namespace rankscope::report_test {

namespace {

constexpr TimeNs kStart = 1'000 * kNsPerSec;
constexpr uint64_t kWorld = 0xf00dcafe12345678ULL;  // above INT64_MAX: tests the uint64 path
constexpr DurationNs kStep = 10 * kNsPerMs;

RankData MakeRank(int rank, int local_rank, const std::string& node) {
  RankData r;
  r.id.rank = rank;
  r.id.local_rank = local_rank;
  r.id.world_size = 3;
  r.id.node = node;
  r.id.host = node + ".cluster";
  r.id.launcher = "mpirun";
  r.id.job_id = "4711";
  r.id.agent_pid = 900 + rank;
  r.id.program_pid = 1000 + rank;
  r.id.program = {"./train", "--steps", "4"};
  for (int i = 0; i < 3; ++i) {
    TimeNs t = kStart + i * kNsPerMs;
    r.clock_samples.push_back({t, t + 20'000 + rank, t + 25'000, t + 50'000});
  }
  r.clock.ref_local = kStart;
  r.clock.offset_ns = rank == 2 ? -1'234'567 : 0;
  r.clock.drift_ppm = rank == 2 ? 3.5 : 0.0;
  r.clock.uncertainty_ns = rank == 2 ? 12'000 : 4'000;
  r.clock.samples_used = 40;
  r.clock.samples_total = 160;
  r.clock_fitted = true;
  r.exit_code = 0;
  r.finished = true;
  return r;
}

}  // namespace

Session MakeSession() {
  Session s;
  s.session_id = "s-20240101-4711";
  s.job_id = "4711";
  s.launcher = "mpirun";
  s.command = {"mpirun", "-np", "3", "./train", "--steps", "4"};
  s.world_size = 3;
  s.start = kStart;
  s.end = kStart + 5 * kStep;
  s.launcher_exit_code = 137;
  s.partial = true;
  s.partial_reasons = {"rank 2 was killed by SIGKILL before sending its final batch"};
  s.analysis_notes = {"rank 1 is 0.4 ms late on average, within its clock uncertainty"};
  LiveFinding live;
  live.rank = 2;
  live.cause = LiveCause::kThrottled;
  live.began = 3 * kNsPerSec;
  live.found = 7 * kNsPerSec;
  live.window = 2 * kNsPerSec;
  live.own_share = 0.9;
  live.others_own_share = 0.4;
  live.others_waiting = 0.55;
  live.throttled_share = 0.6;
  live.run_delay_share = 0.05;
  live.others_run_delay_share = 0.02;
  live.off_cpu_share = 0.1;
  s.live_findings = {live};
  StallFinding stall;
  stall.holder = 1;
  stall.waiting = {0, 2};
  stall.call = LiveOpenCall{true, 1, 0x5, 12, 3, -1, 4 * kNsPerSec, 0, true};
  stall.call_rank = 0;
  stall.began = 4 * kNsPerSec;
  stall.found = 25 * kNsPerSec;
  stall.state.quiet = 22 * kNsPerSec;
  stall.state.cpu_share = 0.01;
  stall.state.samples = 1100;
  stall.state.blocked = 0.97;
  stall.state.blocked_in = "do_sys_poll";
  s.live_stalls = {stall};
  s.aligned = true;
  s.ranks = {MakeRank(0, 0, "node-a"), MakeRank(1, 1, "node-a"), MakeRank(2, 0, "node-b")};

  for (RankData& r : s.ranks) {
    const int rank = r.id.rank;
    const DurationNs late = rank == 2 ? 2 * kNsPerMs : 0;
    const int steps = rank == 2 ? 3 : 4;  // rank 2 dies during step 3
    for (int k = 0; k < steps; ++k) {
      TimeNs t0 = kStart + k * kStep;
      r.ranges.push_back({"", "step", t0, t0 + 9 * kNsPerMs, 100, 0});
      r.ranges.push_back({"", "forward", t0 + 100 * kNsPerUs, t0 + 5 * kNsPerMs + late, 100, 1});
      CollectiveRecord c;
      c.comm_id = kWorld;
      c.seq = static_cast<uint64_t>(k);
      c.op = CollectiveOp::kAllreduce;
      c.comm_size = 3;
      c.comm_rank = rank;
      c.bytes = 4 << 20;
      c.enter = t0 + 5 * kNsPerMs + late;
      c.exit = t0 + 7 * kNsPerMs + 200 * kNsPerUs;
      c.tid = 100;
      if (rank == 0) c.launched = c.enter - 30 * kNsPerUs;  // only rank 0: no launch split
      r.collectives.push_back(c);
    }
    if (rank != 2) {
      CollectiveRecord b;
      b.comm_id = kWorld;
      b.seq = 4;
      b.op = CollectiveOp::kBcast;
      b.root = 0;
      b.comm_size = 3;
      b.comm_rank = rank;
      b.bytes = 1024;
      b.enter = kStart + 4 * kStep + rank * 10 * kNsPerUs;
      b.exit = kStart + 4 * kStep + 500 * kNsPerUs;
      b.tid = 100;
      r.collectives.push_back(b);
    }
    r.marks.push_back({"train", "epoch 0", kStart + kNsPerMs, 100});
  }

  // Rank 0: a start/end range across the first allreduce (partial overlap on tid 100), a send
  // to rank 1 and a second thread with a dataloader range.
  RankData& r0 = s.ranks[0];
  r0.ranges.push_back({"io", "io", kStart + 6 * kNsPerMs, kStart + 8500 * kNsPerUs, 100, 0});
  r0.ranges.push_back({"", "dataloader", kStart, kStart + 3 * kNsPerMs, 101, 0});
  r0.p2p.push_back({P2PKind::kSend, P2PKind::kSend, 1, 7, kWorld, 4096, kStart + 8 * kNsPerMs,
                    kStart + 8100 * kNsPerUs, 100});
  RankData& r1 = s.ranks[1];
  r1.p2p.push_back({P2PKind::kIrecv, P2PKind::kIrecv, 0, 7, kWorld, 4096, kStart + 7900 * kNsPerUs,
                    kStart + 7910 * kNsPerUs, 100});
  r1.p2p.push_back({P2PKind::kWait, P2PKind::kIrecv, 0, 7, kWorld, 4096, kStart + 8 * kNsPerMs,
                    kStart + 8150 * kNsPerUs, 100});
  r0.p2p.back().world_peer = 1;
  r1.p2p.back().world_peer = 0;  // the Irecv's post keeps the unknown world peer
  r1.p2p.back().spin_start = kStart + 7950 * kNsPerUs;  // it polled from there
  // MPI calls the analyses do not interpret: a collective write and a window fence.
  r1.mpi_calls.push_back({MpiCall::kFileWriteAtAll, kWorld, -1, 1 << 20, kStart + 9 * kNsPerMs,
                          kStart + 9500 * kNsPerUs, 100});
  r1.mpi_calls.push_back(
      {MpiCall::kWinLock, 0, 2, 0, kStart + 10 * kNsPerMs, kStart + 10 * kNsPerMs + 700, 101});

  s.ranks[1].exit_code.reset();  // it ended, but the agent beside it did not see how
  s.ranks[1].exit_unseen = true;

  RankData& r2 = s.ranks[2];
  r2.exit_code = 137;
  r2.term_signal = 9;
  r2.finished = false;
  r2.dropped_records = 17;
  r2.notices = {"NCCL_DEBUG_FILE not set: ring analysis limited"};

  // Ranks 0 and 1 used NCCL; rank 0 dumped node-a's topology (the real 2xH200 dump).
  for (int rank : {0, 1}) {
    RankNccl n;
    n.version = "2.28.9+cuda13.0";
    n.log_file = "/tmp/nccl." + std::to_string(rank) + ".log";
    n.skipped_lines = 100 + rank;
    NcclCommInfo comm{"0x1e900aa5c8e42401", rank, 2, 1, 24, rank == 0 ? "60" : "70", rank, {}, {}};
    comm.transports.push_back({0, 1 - rank, NcclTransportKind::kP2pCumem, "P2P/CUMEM", false, -1});
    if (rank == 0) comm.ring_order = {0, 1};
    n.communicators.push_back(comm);
    for (uint64_t seq = 0; seq < 3; ++seq) {
      n.calls.push_back({"0x1e900aa5c8e42401", seq, NcclOp::kAllReduce, "", 67108864,
                         NcclDataType::kFloat32, 268435456, -1,
                         rank == 0 ? NcclAlgo::kRing : NcclAlgo::kUnknown,
                         rank == 0 ? NcclProto::kSimple : NcclProto::kUnknown, 24});
    }
    s.ranks[static_cast<size_t>(rank)].nccl = n;
  }
  // Rank 0's CUPTI activity: a launch and its kernel, a copy, a context sync.
  auto gpu = [&](GpuActivityKind kind, uint32_t correlation, TimeNs start, TimeNs end,
                 std::string name) -> GpuActivityRecord& {
    GpuActivityRecord g;
    g.kind = kind;
    g.device = kind == GpuActivityKind::kRuntime || kind == GpuActivityKind::kSync ? kNoDevice : 1;
    g.context = kind == GpuActivityKind::kRuntime ? 0 : 1;
    g.stream = kind == GpuActivityKind::kRuntime || kind == GpuActivityKind::kSync ? 0 : 13;
    g.tid = kind == GpuActivityKind::kRuntime ? 100 : 0;
    g.correlation_id = correlation;
    g.start = start;
    g.end = end;
    g.name = std::move(name);
    return s.ranks[0].gpu.emplace_back(std::move(g));
  };
  gpu(GpuActivityKind::kRuntime, 11, 1000'001'000'000, 1000'001'004'000, "cudaLaunchKernel");
  GpuActivityRecord& kernel =
      gpu(GpuActivityKind::kKernel, 11, 1000'001'010'000, 1000'001'900'000, "_Z4stepPf");
  kernel.grid[0] = 1024;
  kernel.block[0] = 256;
  kernel.block[1] = 2;
  GpuActivityRecord& copy =
      gpu(GpuActivityKind::kMemcpy, 12, 1000'002'000'000, 1000'002'100'000, "");
  copy.copy_kind = 2;
  copy.bytes = 1 << 20;
  gpu(GpuActivityKind::kSync, 0, 1000'002'000'000, 1000'002'100'000, "").sync_kind = 4;
  // The same activity summed per second, as the agent sends it beside the records.
  GpuStatsFold sums(kNsPerSec);
  for (const GpuActivityRecord& g : s.ranks[0].gpu) sums.Add(g);
  s.ranks[0].gpu_stats = sums.TakeAll();
  LaunchLatencyFold latency(kNsPerSec, 10 * kNsPerSec);
  for (const GpuActivityRecord& g : s.ranks[0].gpu) latency.Add(g);
  s.ranks[0].launch_latency = latency.TakeAll();
  // Compute time beside NCCL kernels, as an agent that thins its compute kernels sends it.
  s.ranks[0].nccl_compute = {{1000'001'010'000, 1000'001'020'000}};
  s.ranks[0].nccl_compute_late = 2;
  s.ranks[0].compute_kernels_summed = true;

  NvmlSnapshot nvml;
  nvml.driver_version = "580.159.04";
  nvml.gpus.push_back(
      {0, "NVIDIA H200", "GPU-a", "00000000:00:06.0", 5, 5, 16, 16, 18, 18, 1ull << 37});
  nvml.gpus.push_back(
      {1, "NVIDIA H200", "GPU-b", "00000000:00:07.0", 4, 5, 16, 16, 18, 18, 1ull << 37});
  s.ranks[0].nvml = nvml;
  s.ranks[2].nvml_error = "NVML: cannot load libnvidia-ml.so.1";
  ProcessTreeStats proc;
  proc.rchar = 3'000'000'000ULL;
  proc.wchar = 12;
  proc.read_bytes = 1'500'000'000ULL;
  proc.write_bytes = 4096;
  proc.cpu_user_ns = 2 * kNsPerSec;
  proc.cpu_system_ns = 300 * kNsPerMs;
  proc.blkio_delay_ns = 40 * kNsPerMs;
  proc.processes = 5;
  proc.samples = 9;
  proc.sched_cpu_ns = 2'290 * kNsPerMs;
  proc.run_delay_ns = 8'100 * kNsPerMs;
  proc.voluntary_switches = 1'234;
  proc.involuntary_switches = 5'678;
  proc.threads = 17;
  proc.sampled_wall_ns = 15'300 * kNsPerMs;
  proc.main_thread.samples = 760;
  proc.main_thread.running = 410;
  proc.main_thread.stopped = 12;
  proc.main_thread.blocked_in = {{"anon_pipe_write", 300}, {"?", 38}};
  CpuCgroupStats cgroup;
  cgroup.version = 1;
  cgroup.path = "/slurm/uid_0/job_7/step_0";
  cgroup.limit_path = "/slurm/uid_0/job_7";
  cgroup.quota_us = 1'500;  // 30 % of a CPU, in 5 ms periods
  cgroup.period_us = 5'000;
  cgroup.nr_periods = 3'060;
  cgroup.nr_throttled = 2'950;
  cgroup.throttled_ns = 10'700 * kNsPerMs;
  proc.cpu_cgroup = cgroup;
  s.ranks[1].proc = proc;
  s.ranks[2].proc = ProcessTreeStats{};
  s.ranks[2].proc->io_unreadable = true;
  s.ranks[2].proc->sched_unreadable = true;
  s.ranks[2].proc->cpu_cgroup = CpuCgroupStats{};
  s.ranks[2].proc->cpu_cgroup->version = 2;
  s.ranks[2].proc->cpu_cgroup->path = "/user.slice";
  s.ranks[2].proc->cpu_cgroup->limit_path = "/user.slice";
  s.ranks[2].proc->cpu_cgroup->period_us = 100'000;
  s.ranks[2].proc->cpu_cgroup->counters_unreadable = true;

  s.ranks[1].tool_run = ToolRun{"ncu",
                                "/runs/s1/rank1_kernel.ncu-rep",
                                "n1",
                                "",
                                "ncu wrote no report at /runs/s1/rank1_kernel.ncu-rep",
                                false};
  s.ranks[0].topology_source = "/tmp/topo.xml";
  s.ranks[0].topology_xml = R"(<system version="1">
  <cpu numaid="-1" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="207">
    <pci busid="0000:00:06.0" class="0x030200" vendor="0x10de" device="0x2335" subsystem_vendor="0x10de" subsystem_device="0x18be" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="90" rank="0" gdr="1">
        <nvlink target="0000:00:07.0" count="18" tclass="0x030200"/>
      </gpu>
    </pci>
    <pci busid="0000:00:07.0" class="0x030200" vendor="0x10de" device="0x2335" subsystem_vendor="0x10de" subsystem_device="0x18be" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="1" sm="90" rank="1" gdr="1">
        <nvlink target="0000:00:06.0" count="18" tclass="0x030200"/>
      </gpu>
    </pci>
  </cpu>
</system>
)";
  return s;
}

std::vector<Finding> MakeFindings() {
  Finding skew;
  skew.kind = FindingKind::kDataloaderSkew;
  skew.severity = Severity::kInfo;
  skew.ranks = {0};
  skew.nodes = {"node-a"};
  skew.summary = "Rank 0 starts compute 0.2 ms after the others in 2 of 4 steps.";
  skew.evidence = {{"median_shift_ns", 200'000}, {"steps", 4}};
  skew.confidence = 0.4;
  skew.cost_ns = 400'000;
  skew.next_steps = {{"rankscope", "rankscope attach 4711 --ranks 0", "read bytes per step"}};

  Finding straggler;
  straggler.kind = FindingKind::kStraggler;
  straggler.severity = Severity::kCritical;
  straggler.ranks = {2};
  straggler.nodes = {"node-b"};
  straggler.summary =
      "Rank 2 on node-b arrives last at 3 of 3 allreduce calls, 2.00 ms late (median); the "
      "other ranks wait for it.";
  straggler.evidence = {{"median_late_ns", 2'000'000},
                        {"times_last", 3},
                        {"instances", 3},
                        {"last_fraction", 1.0},
                        {"gap_top_range", "forward"}};
  straggler.confidence = 0.9;
  straggler.cost_ns = 12'000'000;
  straggler.next_steps = {{"nsys", "nsys profile -t nvtx,mpi -o rank2 ./train --steps 4",
                           "what rank 2 does in the 2 ms before MPI_Allreduce"},
                          {"rankscope", "rankscope sweep --nodes node-b", "a slow node"}};
  return {skew, straggler};
}

Session MakeHostileSession() {
  Session s = MakeSession();
  s.job_id = std::string("\"><img src=x onerror=alert(1)>") + kInjected;
  s.launcher = kInjected;
  s.command.push_back(kInjected);
  s.partial_reasons.push_back(kInjected);
  for (RankData& r : s.ranks) {
    r.id.node = std::string(kInjected) + "-" + std::to_string(r.id.rank);
    r.id.host = kInjected;
    r.notices.push_back(kInjected);
    r.clock_error = kInjected;
    for (RangeRecord& range : r.ranges) range.name = kInjected;
  }
  s.ranks[1].clock_fitted = false;
  return s;
}

std::vector<Finding> MakeHostileFindings() {
  std::vector<Finding> findings = MakeFindings();
  for (Finding& f : findings) {
    f.summary += kInjected;
    f.nodes.push_back(kInjected);
    f.evidence[kInjected] = kInjected;
    f.next_steps.push_back({kInjected, kInjected, kInjected});
  }
  return findings;
}

Session MakeCleanSession() {
  Session s;
  s.session_id = "s-clean";
  s.job_id = "42";
  s.launcher = "slurm";
  s.command = {"srun", "-n", "4", "./app"};
  s.world_size = 4;
  s.start = kStart;
  s.end = kStart + 50 * kNsPerMs + kNsPerSec;
  s.launcher_exit_code = 0;
  s.aligned = true;
  for (int rank = 0; rank < 4; ++rank) {
    RankData r = MakeRank(rank, rank % 2, rank < 2 ? "n1" : "n2");
    r.id.world_size = 4;
    for (int k = 0; k < 50; ++k) {
      CollectiveRecord c;
      c.comm_id = 7;
      c.seq = static_cast<uint64_t>(k);
      c.op = CollectiveOp::kAllreduce;
      c.comm_size = 4;
      c.comm_rank = rank;
      c.enter = kStart + k * kNsPerMs + rank * 10 * kNsPerUs;  // at most 30 us apart
      c.exit = kStart + k * kNsPerMs + 300 * kNsPerUs;
      c.tid = 1;
      r.collectives.push_back(c);
    }
    s.ranks.push_back(std::move(r));
  }
  return s;
}

void ExpectSessionsEqual(const Session& e, const Session& a) {
  EXPECT_EQ(e.session_id, a.session_id);
  EXPECT_EQ(e.job_id, a.job_id);
  EXPECT_EQ(e.launcher, a.launcher);
  EXPECT_EQ(e.command, a.command);
  EXPECT_EQ(e.world_size, a.world_size);
  EXPECT_EQ(e.start, a.start);
  EXPECT_EQ(e.end, a.end);
  EXPECT_EQ(e.launcher_exit_code, a.launcher_exit_code);
  EXPECT_EQ(e.partial, a.partial);
  EXPECT_EQ(e.partial_reasons, a.partial_reasons);
  EXPECT_EQ(e.analysis_notes, a.analysis_notes);
  ASSERT_EQ(e.live_findings.size(), a.live_findings.size());
  for (size_t i = 0; i < e.live_findings.size(); ++i) {
    const LiveFinding& x = e.live_findings[i];
    const LiveFinding& y = a.live_findings[i];
    EXPECT_EQ(x.rank, y.rank);
    EXPECT_EQ(x.cause, y.cause);
    EXPECT_EQ(x.began, y.began);
    EXPECT_EQ(x.found, y.found);
    EXPECT_EQ(x.window, y.window);
    EXPECT_DOUBLE_EQ(x.own_share, y.own_share);
    EXPECT_DOUBLE_EQ(x.others_own_share, y.others_own_share);
    EXPECT_DOUBLE_EQ(x.others_waiting, y.others_waiting);
    EXPECT_DOUBLE_EQ(x.throttled_share, y.throttled_share);
    EXPECT_DOUBLE_EQ(x.run_delay_share, y.run_delay_share);
    EXPECT_DOUBLE_EQ(x.others_run_delay_share, y.others_run_delay_share);
    EXPECT_DOUBLE_EQ(x.off_cpu_share, y.off_cpu_share);
  }
  ASSERT_EQ(e.live_stalls.size(), a.live_stalls.size());
  for (size_t i = 0; i < e.live_stalls.size(); ++i) {
    EXPECT_EQ(e.live_stalls[i].kind, a.live_stalls[i].kind);
    EXPECT_EQ(e.live_stalls[i].waiting, a.live_stalls[i].waiting);
    EXPECT_EQ(StallFindingLine(e.live_stalls[i]), StallFindingLine(a.live_stalls[i]));
  }
  EXPECT_EQ(e.aligned, a.aligned);
  ASSERT_EQ(e.ranks.size(), a.ranks.size());
  for (size_t i = 0; i < e.ranks.size(); ++i) {
    SCOPED_TRACE("rank index " + std::to_string(i));
    const RankData& x = e.ranks[i];
    const RankData& y = a.ranks[i];
    EXPECT_EQ(x.id.rank, y.id.rank);
    EXPECT_EQ(x.id.local_rank, y.id.local_rank);
    EXPECT_EQ(x.id.world_size, y.id.world_size);
    EXPECT_EQ(x.id.node, y.id.node);
    EXPECT_EQ(x.id.host, y.id.host);
    EXPECT_EQ(x.id.launcher, y.id.launcher);
    EXPECT_EQ(x.id.job_id, y.id.job_id);
    EXPECT_EQ(x.id.agent_pid, y.id.agent_pid);
    EXPECT_EQ(x.id.program_pid, y.id.program_pid);
    EXPECT_EQ(x.id.restart_count, y.id.restart_count);
    EXPECT_EQ(x.id.program, y.id.program);
    ASSERT_EQ(x.clock_samples.size(), y.clock_samples.size());
    for (size_t k = 0; k < x.clock_samples.size(); ++k) {
      EXPECT_EQ(x.clock_samples[k].t1, y.clock_samples[k].t1);
      EXPECT_EQ(x.clock_samples[k].t2, y.clock_samples[k].t2);
      EXPECT_EQ(x.clock_samples[k].t3, y.clock_samples[k].t3);
      EXPECT_EQ(x.clock_samples[k].t4, y.clock_samples[k].t4);
    }
    EXPECT_EQ(x.clock.ref_local, y.clock.ref_local);
    EXPECT_EQ(x.clock.offset_ns, y.clock.offset_ns);
    EXPECT_EQ(x.clock.drift_ppm, y.clock.drift_ppm);  // exact: REAL is an IEEE double
    EXPECT_EQ(x.clock.uncertainty_ns, y.clock.uncertainty_ns);
    EXPECT_EQ(x.clock.samples_used, y.clock.samples_used);
    EXPECT_EQ(x.clock.samples_total, y.clock.samples_total);
    EXPECT_EQ(x.clock_fitted, y.clock_fitted);
    EXPECT_EQ(x.clock_error, y.clock_error);
    ASSERT_EQ(x.collectives.size(), y.collectives.size());
    for (size_t k = 0; k < x.collectives.size(); ++k) {
      const CollectiveRecord& p = x.collectives[k];
      const CollectiveRecord& q = y.collectives[k];
      EXPECT_EQ(p.comm_id, q.comm_id);
      EXPECT_EQ(p.seq, q.seq);
      EXPECT_EQ(p.op, q.op);
      EXPECT_EQ(p.nonblocking, q.nonblocking);
      EXPECT_EQ(p.root, q.root);
      EXPECT_EQ(p.comm_size, q.comm_size);
      EXPECT_EQ(p.comm_rank, q.comm_rank);
      EXPECT_EQ(p.bytes, q.bytes);
      EXPECT_EQ(p.enter, q.enter);
      EXPECT_EQ(p.exit, q.exit);
      EXPECT_EQ(p.tid, q.tid);
      EXPECT_EQ(p.source, q.source);
      EXPECT_EQ(p.launched, q.launched);
    }
    ASSERT_EQ(x.gpu.size(), y.gpu.size());
    for (size_t k = 0; k < x.gpu.size(); ++k) {
      const GpuActivityRecord& p = x.gpu[k];
      const GpuActivityRecord& q = y.gpu[k];
      EXPECT_EQ(p.kind, q.kind);
      EXPECT_EQ(p.device, q.device);
      EXPECT_EQ(p.context, q.context);
      EXPECT_EQ(p.stream, q.stream);
      EXPECT_EQ(p.correlation_id, q.correlation_id);
      EXPECT_EQ(p.start, q.start);
      EXPECT_EQ(p.end, q.end);
      EXPECT_EQ(p.bytes, q.bytes);
      EXPECT_EQ(p.copy_kind, q.copy_kind);
      EXPECT_EQ(p.sync_kind, q.sync_kind);
      EXPECT_EQ(p.tid, q.tid);
      for (int d = 0; d < 3; ++d) {
        EXPECT_EQ(p.grid[d], q.grid[d]);
        EXPECT_EQ(p.block[d], q.block[d]);
      }
      EXPECT_EQ(p.name, q.name);
    }
    EXPECT_EQ(x.gpu_stats, y.gpu_stats);
    EXPECT_EQ(x.launch_latency, y.launch_latency);
    EXPECT_EQ(x.kernel_pieces, y.kernel_pieces);
    EXPECT_EQ(x.nccl_compute, y.nccl_compute);
    EXPECT_EQ(x.nccl_compute_late, y.nccl_compute_late);
    EXPECT_EQ(x.compute_kernels_summed, y.compute_kernels_summed);
    ASSERT_EQ(x.p2p.size(), y.p2p.size());
    for (size_t k = 0; k < x.p2p.size(); ++k) {
      const P2PRecord& p = x.p2p[k];
      const P2PRecord& q = y.p2p[k];
      EXPECT_EQ(p.kind, q.kind);
      EXPECT_EQ(p.completed, q.completed);
      EXPECT_EQ(p.peer, q.peer);
      EXPECT_EQ(p.tag, q.tag);
      EXPECT_EQ(p.comm_id, q.comm_id);
      EXPECT_EQ(p.bytes, q.bytes);
      EXPECT_EQ(p.enter, q.enter);
      EXPECT_EQ(p.exit, q.exit);
      EXPECT_EQ(p.tid, q.tid);
      EXPECT_EQ(p.world_peer, q.world_peer);
      EXPECT_EQ(p.spin_start, q.spin_start);
    }
    ASSERT_EQ(x.mpi_calls.size(), y.mpi_calls.size());
    for (size_t k = 0; k < x.mpi_calls.size(); ++k) {
      const MpiCallRecord& p = x.mpi_calls[k];
      const MpiCallRecord& q = y.mpi_calls[k];
      EXPECT_EQ(p.call, q.call);
      EXPECT_EQ(p.comm_id, q.comm_id);
      EXPECT_EQ(p.peer, q.peer);
      EXPECT_EQ(p.bytes, q.bytes);
      EXPECT_EQ(p.enter, q.enter);
      EXPECT_EQ(p.exit, q.exit);
      EXPECT_EQ(p.tid, q.tid);
    }
    ASSERT_EQ(x.ranges.size(), y.ranges.size());
    for (size_t k = 0; k < x.ranges.size(); ++k) {
      EXPECT_EQ(x.ranges[k].domain, y.ranges[k].domain);
      EXPECT_EQ(x.ranges[k].name, y.ranges[k].name);
      EXPECT_EQ(x.ranges[k].start, y.ranges[k].start);
      EXPECT_EQ(x.ranges[k].end, y.ranges[k].end);
      EXPECT_EQ(x.ranges[k].tid, y.ranges[k].tid);
      EXPECT_EQ(x.ranges[k].depth, y.ranges[k].depth);
    }
    ASSERT_EQ(x.marks.size(), y.marks.size());
    for (size_t k = 0; k < x.marks.size(); ++k) {
      EXPECT_EQ(x.marks[k].domain, y.marks[k].domain);
      EXPECT_EQ(x.marks[k].name, y.marks[k].name);
      EXPECT_EQ(x.marks[k].time, y.marks[k].time);
      EXPECT_EQ(x.marks[k].tid, y.marks[k].tid);
    }
    EXPECT_EQ(x.notices, y.notices);
    EXPECT_EQ(x.topology_source, y.topology_source);
    EXPECT_EQ(x.topology_xml, y.topology_xml);
    ASSERT_EQ(x.nvml.has_value(), y.nvml.has_value());
    if (x.nvml) {
      EXPECT_EQ(NvmlToJson(*x.nvml), NvmlToJson(*y.nvml));
    }
    EXPECT_EQ(x.nvml_error, y.nvml_error);
    ASSERT_EQ(x.tool_run.has_value(), y.tool_run.has_value());
    if (x.tool_run) {
      EXPECT_EQ(x.tool_run->tool, y.tool_run->tool);
      EXPECT_EQ(x.tool_run->path, y.tool_run->path);
      EXPECT_EQ(x.tool_run->host, y.tool_run->host);
      EXPECT_EQ(x.tool_run->csv, y.tool_run->csv);
      EXPECT_EQ(x.tool_run->error, y.tool_run->error);
      EXPECT_EQ(x.tool_run->same_run, y.tool_run->same_run);
    }
    ASSERT_EQ(x.proc.has_value(), y.proc.has_value());
    if (x.proc) {
      EXPECT_EQ(x.proc->rchar, y.proc->rchar);
      EXPECT_EQ(x.proc->wchar, y.proc->wchar);
      EXPECT_EQ(x.proc->read_bytes, y.proc->read_bytes);
      EXPECT_EQ(x.proc->write_bytes, y.proc->write_bytes);
      EXPECT_EQ(x.proc->cpu_user_ns, y.proc->cpu_user_ns);
      EXPECT_EQ(x.proc->cpu_system_ns, y.proc->cpu_system_ns);
      EXPECT_EQ(x.proc->blkio_delay_ns, y.proc->blkio_delay_ns);
      EXPECT_EQ(x.proc->processes, y.proc->processes);
      EXPECT_EQ(x.proc->samples, y.proc->samples);
      EXPECT_EQ(x.proc->io_unreadable, y.proc->io_unreadable);
      EXPECT_EQ(x.proc->sched_cpu_ns, y.proc->sched_cpu_ns);
      EXPECT_EQ(x.proc->run_delay_ns, y.proc->run_delay_ns);
      EXPECT_EQ(x.proc->voluntary_switches, y.proc->voluntary_switches);
      EXPECT_EQ(x.proc->involuntary_switches, y.proc->involuntary_switches);
      EXPECT_EQ(x.proc->threads, y.proc->threads);
      EXPECT_EQ(x.proc->sched_unreadable, y.proc->sched_unreadable);
      EXPECT_EQ(x.proc->sampled_wall_ns, y.proc->sampled_wall_ns);
      EXPECT_EQ(x.proc->main_thread.samples, y.proc->main_thread.samples);
      EXPECT_EQ(x.proc->main_thread.running, y.proc->main_thread.running);
      EXPECT_EQ(x.proc->main_thread.stopped, y.proc->main_thread.stopped);
      EXPECT_EQ(x.proc->main_thread.blocked_in, y.proc->main_thread.blocked_in);
      ASSERT_EQ(x.proc->cpu_cgroup.has_value(), y.proc->cpu_cgroup.has_value());
      if (x.proc->cpu_cgroup) {
        const CpuCgroupStats& cx = *x.proc->cpu_cgroup;
        const CpuCgroupStats& cy = *y.proc->cpu_cgroup;
        EXPECT_EQ(cx.version, cy.version);
        EXPECT_EQ(cx.path, cy.path);
        EXPECT_EQ(cx.limit_path, cy.limit_path);
        EXPECT_EQ(cx.quota_us, cy.quota_us);
        EXPECT_EQ(cx.period_us, cy.period_us);
        EXPECT_EQ(cx.nr_periods, cy.nr_periods);
        EXPECT_EQ(cx.nr_throttled, cy.nr_throttled);
        EXPECT_EQ(cx.throttled_ns, cy.throttled_ns);
        EXPECT_EQ(cx.counters_unreadable, cy.counters_unreadable);
      }
    }
    ASSERT_EQ(x.nccl.has_value(), y.nccl.has_value());
    if (x.nccl) {
      EXPECT_EQ(RankNcclToJson(*x.nccl), RankNcclToJson(*y.nccl));  // every field, both ways
    }
    EXPECT_EQ(x.dropped_records, y.dropped_records);
    EXPECT_EQ(x.exit_code, y.exit_code);
    EXPECT_EQ(x.term_signal, y.term_signal);
    EXPECT_EQ(x.finished, y.finished);
    EXPECT_EQ(x.exit_unseen, y.exit_unseen);
  }
}

namespace {

std::filesystem::path TempRoot() {
  return std::filesystem::path(::testing::TempDir()) /
         ("rankscope_report_" + std::to_string(::getpid()));
}

// Removes this run's files when every test passed; a failed run keeps them for a look.
class TempRootCleaner : public ::testing::Environment {
 public:
  void TearDown() override {
    if (::testing::UnitTest::GetInstance()->Passed()) {
      std::error_code ec;
      std::filesystem::remove_all(TempRoot(), ec);
    }
  }
};
[[maybe_unused]] ::testing::Environment* const kCleaner =
    ::testing::AddGlobalTestEnvironment(new TempRootCleaner);

}  // namespace

std::string MakeTempDir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir =
      TempRoot() / (std::string(info->test_suite_name()) + "." + info->name() + "." + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// One rank with CUPTI activity: a launch on thread 100 and the kernel it launched on stream 13
// of GPU 0, a copy, and an NCCL all-reduce whose kernel runs on stream 14.
Session MakeGpuSession() {
  Session s;
  s.session_id = "gpu";
  s.start = 1'000'000;
  s.aligned = true;
  RankData r;
  r.id.rank = 0;
  r.id.node = "gpu-node";
  auto gpu = [&](GpuActivityKind kind, uint32_t stream, uint32_t correlation, TimeNs start,
                 TimeNs end, std::string name) {
    GpuActivityRecord g;
    g.kind = kind;
    g.device = kind == GpuActivityKind::kRuntime ? kNoDevice : 0;
    g.stream = kind == GpuActivityKind::kRuntime ? 0 : stream;
    g.tid = kind == GpuActivityKind::kRuntime ? 100 : 0;
    g.correlation_id = correlation;
    g.start = start;
    g.end = end;
    g.name = std::move(name);
    r.gpu.push_back(g);
    return &r.gpu.back();
  };
  gpu(GpuActivityKind::kRuntime, 0, 7, 2'000'000, 2'004'000, "cudaLaunchKernel");
  GpuActivityRecord* k =
      gpu(GpuActivityKind::kKernel, 13, 7, 2'010'000, 2'050'000, "_Z10probe_axpyiPKfPf");
  k->grid[0] = 128;
  k->block[0] = 256;
  gpu(GpuActivityKind::kRuntime, 0, 8, 2'060'000, 2'070'000, "cudaMemcpyAsync");
  GpuActivityRecord* copy = gpu(GpuActivityKind::kMemcpy, 13, 8, 2'080'000, 2'090'000, "");
  copy->copy_kind = 1;
  copy->bytes = 4096;
  gpu(GpuActivityKind::kKernel, 14, 9, 3'000'000, 3'500'000,
      "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LLP24ncclDevKernelArgsStorageILm4096EE");
  CollectiveRecord c;
  c.source = CollectiveRecord::Source::kNccl;
  c.op = CollectiveOp::kAllreduce;
  c.tid = 14;
  c.enter = 3'000'000;
  c.exit = 3'500'000;
  c.bytes = 1 << 20;
  r.collectives.push_back(c);
  s.ranks.push_back(r);
  return s;
}

}  // namespace rankscope::report_test
