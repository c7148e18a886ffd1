#include "proto/convert.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>
#include <tuple>

namespace rankscope {
namespace {

// Every kind of value each enum has, both ends of each range, an untuned call, an operation
// NCCL names that this build does not know, net device 0 (proto3's default) and none.
RankNccl Sample() {
  RankNccl n;
  n.version = "2.28.9+cuda13.0";
  n.log_file = "/tmp/nccl.1.log";
  n.skipped_lines = 42;
  n.problems = {"/tmp/nccl.1.log:7: NCCL WARN x"};
  NcclCommInfo c{"0x1e900aa5c8e42401", 1, 16, 2, 24, "60", 1, {}, {0, 3, 2, 1}};
  c.transports.push_back({0, 0, NcclTransportKind::kP2pCumem, "P2P/CUMEM", false, -1});
  c.transports.push_back({1, 9, NcclTransportKind::kNetIb, "NET/IB/0/GDRDMA", true, 0});
  c.transports.push_back({2, 9, NcclTransportKind::kNetSocket, "NET/Socket/3", false, 3});
  c.transports.push_back({3, -1, NcclTransportKind::kCollNet, "COLLNET/SHARP/0", false, 0});
  c.transports.push_back({4, 2, NcclTransportKind::kUnknown, "SOMETHING/new", false, -1});
  n.communicators.push_back(c);
  n.calls.push_back({"0x1e900aa5c8e42401", 0, NcclOp::kAllReduce, "", 1024, NcclDataType::kInt8,
                     1024, -1, NcclAlgo::kTree, NcclProto::kLL, 8});
  n.calls.push_back({"0x1e900aa5c8e42401", 1, NcclOp::kSendRecv, "", 16, NcclDataType::kFloat8e5m2,
                     16, 3, NcclAlgo::kPat, NcclProto::kSimple, 2});
  n.calls.push_back({"0x1e900aa5c8e42401", 2, NcclOp::kUnknown, "AllToAllV", 7,
                     NcclDataType::kUnknown, 0, 0, NcclAlgo::kUnknown, NcclProto::kUnknown, -1});
  return n;
}

TEST(ConvertNccl, ASummaryRoundTrips) {
  const RankNccl n = Sample();
  const v1::NcclSummary wire = ToProto(n);
  EXPECT_EQ(wire.calls(0).op(), v1::NCCL_OP_ALL_REDUCE);
  EXPECT_EQ(wire.calls(0).datatype(), v1::NCCL_DATA_TYPE_INT8);
  EXPECT_EQ(wire.calls(1).datatype(), v1::NCCL_DATA_TYPE_FLOAT8E5M2);
  EXPECT_EQ(wire.calls(1).algo(), v1::NCCL_ALGO_PAT);
  EXPECT_EQ(wire.calls(2).algo(), v1::NCCL_ALGO_UNSPECIFIED);
  EXPECT_EQ(wire.calls(2).op_name(), "AllToAllV");
  EXPECT_TRUE(wire.calls(0).op_name().empty());  // a known op carries no text
  EXPECT_EQ(wire.communicators(0).transports(1).kind(), v1::NCCL_TRANSPORT_NET_IB);
  EXPECT_TRUE(wire.communicators(0).transports(1).has_net_dev());
  EXPECT_FALSE(wire.communicators(0).transports(0).has_net_dev());
  // Through bytes, as it travels.
  v1::NcclSummary back;
  ASSERT_TRUE(back.ParseFromString(wire.SerializeAsString()));
  EXPECT_TRUE(FromProto(back) == n);  // every field
}

// A later agent's values this build does not know read as unknown; the rest of the call stays.
TEST(ConvertNccl, ValuesFromALaterAgentReadAsUnknown) {
  v1::NcclSummary wire = ToProto(Sample());
  v1::NcclCall* call = wire.mutable_calls(0);
  call->set_op(static_cast<v1::NcclOp>(77));
  call->set_op_name("AllReduceV2");
  call->set_datatype(static_cast<v1::NcclDataType>(40));
  call->set_algo(static_cast<v1::NcclAlgo>(12));
  call->set_proto(static_cast<v1::NcclProto>(9));
  wire.mutable_communicators(0)->mutable_transports(0)->set_kind(
      static_cast<v1::NcclTransportKind>(31));
  v1::NcclSummary back;
  ASSERT_TRUE(back.ParseFromString(wire.SerializeAsString()));
  const RankNccl n = FromProto(back);
  EXPECT_EQ(n.calls[0].op, NcclOp::kUnknown);
  EXPECT_EQ(OpName(n.calls[0]), "AllReduceV2");
  EXPECT_EQ(n.calls[0].datatype, NcclDataType::kUnknown);
  EXPECT_EQ(n.calls[0].algo, NcclAlgo::kUnknown);
  EXPECT_EQ(n.calls[0].proto, NcclProto::kUnknown);
  EXPECT_EQ(n.calls[0].bytes, 1024);
  EXPECT_EQ(n.communicators[0].transports[0].kind, NcclTransportKind::kUnknown);
  EXPECT_EQ(n.communicators[0].transports[0].via, "P2P/CUMEM");
}

// Each message through bytes, as it travels.
template <typename Message>
Message ThroughBytes(const Message& m) {
  Message back;
  EXPECT_TRUE(back.ParseFromString(m.SerializeAsString()));
  return back;
}

// What goes on the wire comes back whole: every field of each record set off its default, sent,
// read back and compared; and read back again, each message the same (a field ToProto writes
// that FromProto drops, or the reverse, fails one of the two).
TEST(ConvertRecords, EveryRecordKindRoundTrips) {
  using google::protobuf::util::MessageDifferencer;
  // An MPI collective: NCCL's (source, launched) are made by the coordinator from the GPU's
  // kernels and the NCCL log (coordinator/nccl_instances.h), never sent as such.
  CollectiveRecord c{
      0xabcdef0123,  77,  CollectiveOp::kReduceScatter, true, 3, 16, 5, 4096, 1'000'000'001,
      1'000'002'003, 4242};
  v1::Collective cw = ThroughBytes([&] {
    v1::Collective w;
    ToProto(c, &w);
    return w;
  }());
  CollectiveRecord c2;
  ASSERT_TRUE(FromProto(cw, &c2));
  EXPECT_EQ(c2, c);

  P2PRecord p{P2PKind::kWait, P2PKind::kIssend, 7, 12, 0x44, 1 << 20, 5'000, 9'000, 31, 6, 4'000};
  v1::P2P pw;
  ToProto(p, &pw);
  P2PRecord p2;
  ASSERT_TRUE(FromProto(ThroughBytes(pw), &p2));
  EXPECT_EQ(p2, p);

  RangeRecord g{"domain", "forward", 10, 20, 3, 2};
  v1::Range gw;
  ToProto(g, &gw);
  EXPECT_EQ(FromProto(ThroughBytes(gw)), g);

  MarkRecord k{"domain", "checkpoint", 1234, 9};
  v1::Mark kw;
  ToProto(k, &kw);
  const MarkRecord k2 = FromProto(ThroughBytes(kw));
  EXPECT_EQ(std::tie(k2.domain, k2.name, k2.time, k2.tid),
            std::tie(k.domain, k.name, k.time, k.tid));

  ClockSample t{1, 20, 30, 4};
  v1::ClockSample tw;
  ToProto(t, &tw);
  const ClockSample t2 = FromProto(ThroughBytes(tw));
  EXPECT_EQ(std::tie(t2.t1, t2.t2, t2.t3, t2.t4), std::tie(t.t1, t.t2, t.t3, t.t4));

  GpuActivityRecord a;
  a.kind = GpuActivityKind::kKernel;
  a.device = 1;
  a.context = 2;
  a.stream = 13;
  a.correlation_id = 99;
  a.start = 100;
  a.end = 250;
  a.bytes = 64;
  a.copy_kind = 8;
  a.sync_kind = 3;
  a.tid = 77;
  a.grid[0] = 4;
  a.grid[1] = 5;
  a.grid[2] = 6;
  a.block[0] = 128;
  a.block[1] = 2;
  a.block[2] = 1;
  a.name = "_Z10probe_axpyifPKfPf";
  v1::GpuActivity aw;
  ToProto(a, &aw);
  GpuActivityRecord a2;
  ASSERT_TRUE(FromProto(ThroughBytes(aw), &a2));
  EXPECT_EQ(a2, a);

  GpuStats st;
  st.window_start = -2000;
  st.window = 1000;
  st.key = {GpuActivityKind::kMemcpy, 1, 13, 8, ""};
  st.count = 3;
  st.total = 300;
  st.min = 50;
  st.p50 = 100;
  st.max = 150;
  st.bytes = 1 << 20;
  v1::GpuStats sw;
  ToProto(st, &sw);
  GpuStats st2;
  ASSERT_TRUE(FromProto(ThroughBytes(sw), &st2));
  EXPECT_EQ(st2, st);
  sw.set_kind(kMaxGpuActivityKind + 1);  // a kind of a later build
  EXPECT_FALSE(FromProto(sw, &st2));

  LaunchLatency ll{-3000, 1000, {{-300, 2, -611}, {12, 5, 60}, {400, 1, 1'000'000}}};
  v1::LaunchLatency lw;
  ToProto(ll, &lw);
  LaunchLatency ll2;
  ASSERT_TRUE(FromProto(ThroughBytes(lw), &ll2));
  EXPECT_EQ(ll2, ll);
  lw.add_bucket(500);  // arrays of different lengths
  EXPECT_FALSE(FromProto(lw, &ll2));
  lw.add_count(1);
  lw.add_sum(1);
  lw.set_bucket(3, 400);  // not increasing
  EXPECT_FALSE(FromProto(lw, &ll2));

  KernelPiece kp{-500, 1500, "_Z4gemmPf", 700};
  v1::KernelPiece piece_wire;
  ToProto(kp, &piece_wire);
  KernelPiece kp2;
  ASSERT_TRUE(FromProto(ThroughBytes(piece_wire), &kp2));
  EXPECT_EQ(kp2, kp);
  piece_wire.set_to(-600);  // ends before it begins
  EXPECT_FALSE(FromProto(piece_wire, &kp2));

  MpiCallRecord m{MpiCall::kFileWriteAtAll, 0x55, 3, 1 << 16, 7, 70, 5};
  v1::MpiCall mw;
  ToProto(m, &mw);
  MpiCallRecord m2;
  ASSERT_TRUE(FromProto(ThroughBytes(mw), &m2));
  EXPECT_EQ(m2, m);

  // Each again from what came back: the same message.
  v1::Collective cw2;
  ToProto(c2, &cw2);
  EXPECT_TRUE(MessageDifferencer::Equals(cw, cw2));
  v1::GpuActivity aw2;
  ToProto(a2, &aw2);
  EXPECT_TRUE(MessageDifferencer::Equals(aw, aw2));
}

TEST(ConvertRecords, IdentityRoundTripsWithItsTextMadeValid) {
  RankIdentity id;
  id.rank = 5;
  id.local_rank = 1;
  id.world_size = 8;
  id.node = "node-3";
  id.host = "node-3.cluster";
  id.launcher = "slurm";
  id.job_id = "4711";
  id.agent_pid = 1200;
  id.program_pid = 1201;
  id.restart_count = 2;
  id.program = {"python3", "train.py", "--lr=0.1"};
  const v1::Identity wire = ThroughBytes(ToProto(id, "rs-20261205"));
  EXPECT_EQ(wire.session_id(), "rs-20261205");
  const RankIdentity back = FromProto(wire);
  EXPECT_EQ(
      std::tie(back.rank, back.local_rank, back.world_size, back.node, back.host, back.launcher,
               back.job_id, back.agent_pid, back.program_pid, back.restart_count, back.program),
      std::tie(id.rank, id.local_rank, id.world_size, id.node, id.host, id.launcher, id.job_id,
               id.agent_pid, id.program_pid, id.restart_count, id.program));
  v1::Identity bad = wire;
  bad.set_node_name(std::string("n\xff") + "1");
  EXPECT_EQ(FromProto(bad).node,
            "n\xef\xbf\xbd"
            "1");  // U+FFFD for the stray byte
}

TEST(ConvertRecords, ProcessFiguresNvmlAndSweepChecksRoundTrip) {
  using google::protobuf::util::MessageDifferencer;
  ProcessTreeStats s;
  s.rchar = 1;
  s.wchar = 2;
  s.read_bytes = 3;
  s.write_bytes = 4;
  s.cpu_user_ns = 5;
  s.cpu_system_ns = 6;
  s.blkio_delay_ns = 7;
  s.processes = 8;
  s.samples = 9;
  s.io_unreadable = true;
  s.sched_cpu_ns = 10;
  s.run_delay_ns = 11;
  s.voluntary_switches = 12;
  s.involuntary_switches = 13;
  s.threads = 14;
  s.sched_unreadable = true;
  s.sampled_wall_ns = 15;
  s.cpu_cgroup = CpuCgroupStats{2, "/slurm/job_1", "/slurm", 30'000, 100'000, 16, 17, 18, true};
  s.main_thread.samples = 19;
  s.main_thread.running = 20;
  s.main_thread.stopped = 21;
  s.main_thread.blocked_in = {{"pipe_write", 22}, {"?", 23}};
  const v1::ProcessStats sw = ThroughBytes(ToProto(s));
  const ProcessTreeStats s2 = FromProto(sw);
  EXPECT_TRUE(MessageDifferencer::Equals(sw, ToProto(s2)));
  ASSERT_TRUE(s2.cpu_cgroup.has_value());
  EXPECT_EQ(s2.cpu_cgroup->limit_path, "/slurm");
  EXPECT_EQ(s2.main_thread.blocked_in, s.main_thread.blocked_in);
  EXPECT_EQ(s2.sampled_wall_ns, 15);

  NvmlSnapshot n{
      "550.54",
      {{3, "NVIDIA H200", "GPU-1", "00000000:18:00.0", 4, 5, 8, 16, 17, 18, uint64_t{141} << 30}}};
  const v1::NvmlReport nw = ThroughBytes(ToProto(Result<NvmlSnapshot>(n)));
  const Result<NvmlSnapshot> n2 = FromProto(nw);
  ASSERT_TRUE(n2.ok());
  EXPECT_TRUE(MessageDifferencer::Equals(nw, ToProto(n2)));
  EXPECT_EQ(n2->gpus.at(0).memory_bytes, uint64_t{141} << 30);
  const Result<NvmlSnapshot> failed = FromProto(ToProto(Result<NvmlSnapshot>::Error("no NVML")));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "no NVML");

  SweepCheckResult r{"mem.bandwidth", "/dev/shm",   1.5e10, "bytes_per_second", "",
                     "15 GB/s",       "NVIDIA H200"};
  const v1::SweepCheck rw = ThroughBytes(ToProto(r));
  const SweepCheckResult r2 = FromProto(rw);
  EXPECT_EQ(std::tie(r2.name, r2.subject, r2.value, r2.unit, r2.error, r2.detail, r2.model),
            std::tie(r.name, r.subject, r.value, r.unit, r.error, r.detail, r.model));
}

}  // namespace
}  // namespace rankscope
