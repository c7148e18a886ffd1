#include "coordinator/sweep/verdicts.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

SweepNodeInput Node(const std::string& name, double bandwidth, double free_ratio) {
  return {name,
          true,
          "",
          {{"mem.bandwidth", "", bandwidth, "bytes_per_second", "", ""},
           {"fs.free_ratio", "/tmp", free_ratio, "ratio", "", ""}}};
}

TEST(SweepVerdicts, TheDefaultsParse) {
  const SweepThresholds& d = DefaultSweepThresholds();
  ASSERT_EQ(d.checks.count("mem.bandwidth"), 1u);
  EXPECT_DOUBLE_EQ(*d.checks.at("mem.bandwidth").peer_fail_below, 0.5);
  EXPECT_TRUE(d.checks.at("clock.offset").abs);
}

TEST(SweepVerdicts, ANodeBelowItsPeersAndOneOutOfSpace) {
  std::vector<SweepNodeInput> nodes = {Node("n1", 10e9, 0.5), Node("n2", 10.4e9, 0.5),
                                       Node("n3", 4e9, 0.5), Node("n4", 7.5e9, 0.005)};
  auto v = JudgeSweep(nodes, DefaultSweepThresholds());
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0].status, SweepStatus::kPass);
  EXPECT_EQ(v[0].Summary(), "all checks pass");
  EXPECT_EQ(v[1].status, SweepStatus::kPass);
  // n3: 4 GB/s against a median of 10 GB/s (n1, n2, n4: 10, 10.4, 7.5) = 40%: fail.
  EXPECT_EQ(v[2].status, SweepStatus::kFail);
  EXPECT_EQ(v[2].checks[0].reason, "4.00 GB/s is 40% of the other nodes' median 10.00 GB/s");
  EXPECT_DOUBLE_EQ(*v[2].checks[0].peer_median, 10e9);
  // n4: 7.5 / median(10, 10.4, 4) = 75%: warn; its disk is full: fail, the worse.
  EXPECT_EQ(v[3].checks[0].status, SweepStatus::kWarn);
  EXPECT_EQ(v[3].checks[1].status, SweepStatus::kFail);
  EXPECT_EQ(v[3].status, SweepStatus::kFail);
  EXPECT_EQ(v[3].Summary(), "fs.free_ratio:/tmp: 0.5% < 1.0%");
  EXPECT_EQ(SweepExitCode(v), 2);
}

TEST(SweepVerdicts, OnlyAMeasuredFailureIsADrainReason) {
  std::vector<SweepNodeInput> nodes = {Node("n1", 10e9, 0.005)};
  nodes.push_back({"n2", true, "", {{"mpi.pingpong", "", 0, "", "with n1: srun exit 1", ""}}});
  nodes.push_back({"n3", false, "srun exit 2", {}});
  auto v = JudgeSweep(nodes, DefaultSweepThresholds());
  EXPECT_EQ(DrainReason(v[0]), "fs.free_ratio:/tmp: 0.5% < 1.0%");
  EXPECT_EQ(v[1].status, SweepStatus::kFail);
  EXPECT_FALSE(DrainReason(v[1]).has_value());  // could not run: not a measured fault
  EXPECT_FALSE(DrainReason(v[2]).has_value());
}

TEST(SweepVerdicts, TooFewPeersMeansNoPeerComparison) {
  auto v = JudgeSweep({Node("n1", 10e9, 0.5), Node("n2", 1e9, 0.5)}, DefaultSweepThresholds());
  EXPECT_EQ(v[1].status, SweepStatus::kPass);
  EXPECT_FALSE(v[1].checks[0].peer_median.has_value());
  EXPECT_EQ(SweepExitCode(v), 0);
}

TEST(SweepVerdicts, ErrorsAndSilentNodesFail) {
  SweepNodeInput broken{
      "n2", true, "", {{"cpu.flops", "", 0, "", "timed out after 22 s (killed)", ""}}};
  SweepNodeInput silent{"n3", false, "srun exit 1: Invalid node name specified", {}};
  auto v = JudgeSweep({Node("n1", 10e9, 0.5), broken, silent}, DefaultSweepThresholds());
  EXPECT_EQ(v[1].status, SweepStatus::kFail);
  EXPECT_EQ(v[1].Summary(), "cpu.flops: timed out after 22 s (killed)");
  EXPECT_EQ(v[2].status, SweepStatus::kFail);
  EXPECT_EQ(v[2].Summary(), "did not answer: srun exit 1: Invalid node name specified");
}

TEST(SweepVerdicts, ConfigErrorsNameTheSourceAndTheKey) {
  EXPECT_EQ(ParseSweepThresholds("{", "f.json").status().message(), "f.json: not a JSON object");
  EXPECT_EQ(
      ParseSweepThresholds(R"({"checks": {"x": {"warn_bellow": 1}}})", "f.json").status().message(),
      "f.json: checks.x: unknown key 'warn_bellow'");
  EXPECT_EQ(ParseSweepThresholds(R"({"checks": {"x": {"warn_below": "1"}}})", "f.json")
                .status()
                .message(),
            "f.json: checks.x.warn_below is not a number");
  auto ok = ParseSweepThresholds(R"({"checks": {"x": {"warn_above": 2, "abs": true}}})", "f");
  ASSERT_TRUE(ok.ok());
  auto v = JudgeSweep({{"n1", true, "", {{"x", "", -3, "seconds", "", ""}}}}, ok.value());
  EXPECT_EQ(v[0].status, SweepStatus::kWarn);  // |-3| > 2
}

TEST(SweepVerdicts, ClockOffsetFromTheFitAndBothAnchors) {
  // Node: realtime = mono + 1000 s. Coordinator: realtime = mono + 400 s. The fit says the
  // coordinator's monotonic clock is 600 s ahead of the node's: the wall clocks agree...
  ClockModel fit;
  fit.offset_ns = 600 * kNsPerSec;
  fit.uncertainty_ns = 20'000;
  fit.samples_used = 60;
  fit.samples_total = 64;
  std::vector<SweepCheckResult> results = {
      {"clock.realtime_minus_monotonic", "", 1000.0, "seconds", "", ""}};
  auto clock = ClockChecks(results, Result<ClockModel>(fit), 400.0);
  ASSERT_EQ(clock.size(), 2u);
  EXPECT_NEAR(clock[0].value, 0.0, 1e-9);
  EXPECT_NEAR(clock[1].value, 20e-6, 1e-12);
  // ... and a node whose wall clock is 0.25 s ahead shows it, and fails (> 0.1 s).
  results[0].value = 1000.25;
  clock = ClockChecks(results, Result<ClockModel>(fit), 400.0);
  EXPECT_NEAR(clock[0].value, 0.25, 1e-9);
  auto v = JudgeSweep({{"n1", true, "", clock}}, DefaultSweepThresholds());
  EXPECT_EQ(v[0].status, SweepStatus::kFail);
  EXPECT_EQ(v[0].Summary(), "clock.offset: 250.00 ms > 100.00 ms");
  EXPECT_TRUE(ClockChecks({}, Result<ClockModel>(fit), 0).empty());  // no anchor, no check
  auto unfitted = ClockChecks(results, Result<ClockModel>::Error("no usable samples"), 400.0);
  ASSERT_EQ(unfitted.size(), 1u);
  EXPECT_EQ(unfitted[0].error, "no clock fit: no usable samples");
}

TEST(SweepVerdicts, TheNodeOnBothEndsOfSlowPairsIsTheSlowOne) {
  // A ring of four; n3's links are slow, so (n2,n3) and (n3,n4) are, (n1,n2) and (n4,n1) not.
  std::vector<PairResult> pairs = {{"n1", "n2", "", 4e-6, 5e9},
                                   {"n2", "n3", "", 40e-6, 1e9},
                                   {"n3", "n4", "", 41e-6, 1.1e9},
                                   {"n4", "n1", "", 4.2e-6, 5.2e9}};
  std::vector<SweepNodeInput> nodes;
  for (const char* n : {"n1", "n2", "n3", "n4"})
    nodes.push_back({n, true, "", PairChecksFor(n, pairs)});
  ASSERT_EQ(nodes[2].results.size(), 2u);
  EXPECT_DOUBLE_EQ(nodes[2].results[0].value, 40e-6);  // its best pair
  EXPECT_EQ(nodes[2].results[0].detail,
            "best pair; to n2 40.0 us 1.00 GB/s, to n4 41.0 us 1.10 GB/s");
  auto v = JudgeSweep(nodes, DefaultSweepThresholds());
  EXPECT_EQ(v[0].status, SweepStatus::kPass);
  EXPECT_EQ(v[1].status, SweepStatus::kPass);  // n2's best pair is with n1
  EXPECT_EQ(v[2].status, SweepStatus::kFail);  // 40 us is 10x the others' 4 us
  EXPECT_EQ(v[3].status, SweepStatus::kPass);
  // A node whose every pair failed says so; a node in no pair has no figures.
  std::vector<PairResult> failed = {{"n1", "n2", "srun exit 1: no route", 0, 0}};
  auto r = PairChecksFor("n2", failed);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].error, "with n1: srun exit 1: no route");
  EXPECT_TRUE(PairChecksFor("n9", pairs).empty());
}

TEST(SweepVerdicts, NcclAcrossPairsIsJudgedByTheBestPair) {
  PairResult ab{"n1", "n2", "", 4e-6, 5e9};
  ab.nccl_busbw = 90e9;
  ab.nccl_gpus = 16;
  PairResult bc{"n2", "n3", "", 4e-6, 5e9};
  bc.nccl_error = "ncclCommInitRank: remote process exited or there was a network error";
  PairResult cd{"n3", "n4", "", 4e-6, 5e9};
  cd.nccl_busbw = 20e9;
  cd.nccl_gpus = 16;
  const std::vector<PairResult> pairs = {ab, bc, cd};
  auto n2 = PairChecksFor("n2", pairs);
  ASSERT_EQ(n2.size(), 3u);
  EXPECT_EQ(n2[2].name, "nccl.pair_busbw");
  EXPECT_DOUBLE_EQ(n2[2].value, 90e9);
  EXPECT_EQ(n2[2].detail,
            "best pair's all-reduce bus bandwidth; to n1 90.00 GB/s over 16 GPUs; failed with n3: "
            "ncclCommInitRank: remote process exited or there was a network error");
  auto n3 = PairChecksFor("n3", pairs);
  ASSERT_EQ(n3.size(), 3u);
  EXPECT_DOUBLE_EQ(n3[2].value, 20e9);
  // Only failed NCCL pairs: an error; CPU pairs (no NCCL line at all): no figure.
  auto only_failed = PairChecksFor("n2", {bc});
  ASSERT_EQ(only_failed.size(), 3u);
  EXPECT_EQ(only_failed[2].error, "with n3: " + bc.nccl_error);
  EXPECT_EQ(PairChecksFor("n1", {{"n1", "n2", "", 4e-6, 5e9}}).size(), 2u);
}

TEST(SweepVerdicts, AnyCountAgainstPeersAtZeroIsAbovePeers) {
  std::vector<SweepNodeInput> nodes;
  for (const char* n : {"n1", "n2", "n3"}) {
    SweepCheckResult crc{"gpu.nvlink_data_crc", "gpu0", 0, "", "", ""};
    crc.model = "NVIDIA H100";
    nodes.push_back({n, true, "", {crc}});
  }
  nodes[2].results[0].value = 40;
  auto v = JudgeSweep(nodes, DefaultSweepThresholds());
  EXPECT_EQ(v[0].status, SweepStatus::kPass);
  EXPECT_EQ(v[2].status, SweepStatus::kWarn);
  EXPECT_EQ(v[2].checks[0].reason, "40 where the other nodes' median is 0 (NVIDIA H100)");
}

// Two GPUs of `model` on `node`, with D2D copy bandwidths `a` and `b`.
SweepNodeInput GpuNode(const std::string& node, const std::string& model, double a, double b) {
  SweepCheckResult g0{"gpu.d2d_bandwidth", "gpu0", a, "bytes_per_second", "", ""};
  SweepCheckResult g1{"gpu.d2d_bandwidth", "gpu1", b, "bytes_per_second", "", ""};
  g0.model = g1.model = model;
  return {node, true, "", {g0, g1}};
}

TEST(SweepVerdicts, GpuFiguresMeetTheirModelsLimitsAndPeers) {
  // H200s copy at about 4.2 TB/s; one of n3's at 3.0 is below the H200 floor (config/sweep.json
  // "models"). The H100s have no model entry: they are judged by their H100 peers only, never by
  // the H200s: n6's slow GPU is 71% of the other H100s.
  std::vector<SweepNodeInput> nodes = {
      GpuNode("n1", "NVIDIA H200", 4.2e12, 4.17e12), GpuNode("n2", "NVIDIA H200", 4.16e12, 4.2e12),
      GpuNode("n3", "NVIDIA H200", 4.2e12, 3.0e12),  GpuNode("n4", "NVIDIA H100", 2.8e12, 2.8e12),
      GpuNode("n5", "NVIDIA H100", 2.8e12, 2.8e12),  GpuNode("n6", "NVIDIA H100", 2.8e12, 2.0e12)};
  auto v = JudgeSweep(nodes, DefaultSweepThresholds());
  EXPECT_EQ(v[0].status, SweepStatus::kPass);
  EXPECT_EQ(v[1].status, SweepStatus::kPass);
  EXPECT_EQ(v[2].checks[0].status, SweepStatus::kPass);
  EXPECT_EQ(v[2].checks[1].status, SweepStatus::kWarn);
  EXPECT_EQ(v[2].checks[1].reason, "3.000 TB/s < 3.500 TB/s");
  EXPECT_DOUBLE_EQ(*v[2].checks[1].peer_median, 4.185e12);  // the 4 GPUs of n1 and n2
  EXPECT_EQ(v[3].status, SweepStatus::kPass);
  EXPECT_DOUBLE_EQ(*v[3].checks[0].peer_median, 2.8e12);  // H100s only
  EXPECT_EQ(v[5].checks[0].status, SweepStatus::kPass);
  EXPECT_EQ(v[5].checks[1].status, SweepStatus::kWarn);
  EXPECT_EQ(v[5].checks[1].reason,
            "2.000 TB/s is 71% of the other nodes' median 2.800 TB/s (NVIDIA H100)");

  // The H200 floor: a whole node of slow H200s fails on its own.
  auto alone = JudgeSweep({GpuNode("n1", "NVIDIA H200", 2.0e12, 2.0e12)}, DefaultSweepThresholds());
  EXPECT_EQ(alone[0].status, SweepStatus::kFail);
  EXPECT_EQ(alone[0].Summary(), "gpu.d2d_bandwidth:gpu0: 2.000 TB/s < 2.500 TB/s");
}

TEST(SweepVerdicts, ModelEntriesOverrideOnlyTheirKeys) {
  auto t = ParseSweepThresholds(R"({"checks": {"gpu.temperature": {"warn_above": 85,
                                       "fail_above": 95}},
                                    "models": {"NVIDIA A100-SXM4-80GB":
                                      {"gpu.temperature": {"warn_above": 80}}}})",
                                "f.json");
  ASSERT_TRUE(t.ok()) << t.status().message();
  const CheckLimits a100 = *t->For("gpu.temperature", "NVIDIA A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(*a100.warn_above, 80);
  EXPECT_DOUBLE_EQ(*a100.fail_above, 95);  // kept from the general entry
  EXPECT_DOUBLE_EQ(*t->For("gpu.temperature", "NVIDIA H200")->warn_above, 85);
  EXPECT_FALSE(t->For("gpu.power", "NVIDIA H200").has_value());
  EXPECT_EQ(ParseSweepThresholds(R"({"models": {"X": {"gpu.power": {"hot": 1}}}})", "f.json")
                .status()
                .message(),
            "f.json: models.X.gpu.power: unknown key 'hot'");
  EXPECT_EQ(ParseSweepThresholds(R"({"models": []})", "f.json").status().message(),
            "f.json: \"models\" is not an object");
}

TEST(SweepVerdicts, ARisingCounterIsATrendAndAHealthyGpuPasses) {
  SweepCheckResult ecc{"gpu.ecc_uncorrected_aggregate", "gpu1", 3, "", "", ""};
  SweepCheckResult xid{"gpu.xid_events", "gpu1", 0, "", "", "none while watched"};
  ecc.model = xid.model = "NVIDIA H200";
  auto v = JudgeSweep({{"n1", true, "", {ecc, xid}}}, DefaultSweepThresholds());
  EXPECT_EQ(v[0].status, SweepStatus::kPass);
  SweepPast past;
  past[{"n1", "gpu.ecc_uncorrected_aggregate:gpu1"}] = {1, 2};
  ApplyTrends(past, DefaultSweepThresholds(), &v);
  EXPECT_EQ(v[0].checks[0].status, SweepStatus::kWarn);
  EXPECT_TRUE(v[0].checks[0].trend);
  EXPECT_EQ(v[0].checks[0].reason,
            "trend: 3, up 1 from this node's highest 2 over its last 2 sweeps");
  // The same count as before is no trend, even from a single past sweep.
  auto same = JudgeSweep({{"n1", true, "", {ecc}}}, DefaultSweepThresholds());
  ApplyTrends({{{"n1", "gpu.ecc_uncorrected_aggregate:gpu1"}, {3}}}, DefaultSweepThresholds(),
              &same);
  EXPECT_EQ(same[0].status, SweepStatus::kPass);
  // An XID during the sweep fails the node.
  xid.value = 2;
  xid.detail = "XID 79 x2";
  auto sick = JudgeSweep({{"n1", true, "", {xid}}}, DefaultSweepThresholds());
  EXPECT_EQ(sick[0].status, SweepStatus::kFail);
  EXPECT_EQ(DrainReason(sick[0]), "gpu.xid_events:gpu1: 2 > 0");
}

}  // namespace
}  // namespace rankscope
