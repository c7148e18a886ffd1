#include "coordinator/report/finding_evidence.h"

#include <gtest/gtest.h>

#include "coordinator/report/report_format.h"
#include "coordinator/report/report_json.h"

namespace rankscope {
namespace {

using nlohmann::json;

Finding RingWithLink() {
  Finding ring;
  ring.kind = FindingKind::kImbalancedRing;
  ring.comm_measure = CommMeasure{"0xc02", NcclOp::kAllReduce, 1 << 26, 12.5, 3, 41.0};
  LimitingLink link;
  link.from_rank = 0;
  link.to_rank = 1;
  link.at_rank = 0;
  link.from_node = "n0";
  link.to_node = "n0";
  link.transport = "SHM";
  link.medium = LinkMedium::kPcie;
  link.link = "PCIe gen4 x16";
  link.nominal_gbps = 31.5;
  ring.limiting_link = link;
  ring.evidence = {{"nranks", 2}, {"instances", 40}};
  return ring;
}

Finding ArrivalStraggler() {
  Finding s;
  s.kind = FindingKind::kStraggler;
  s.cause = CauseKind::kNvtxRange;
  s.arrivals = LateArrivals{48, 50, 30'000'000, 4'500'000'000, 3, 0.31, {{"allreduce", 48}}};
  s.cause_range = CauseRange{"data", 31'000'000, 1'000'000, true};
  s.kernels = std::vector<KernelExcess>{{"void sgemm<128>(float*)", 9'000'000, 2'000'000}};
  s.evidence = {{"noise_ns", 120'000}};
  return s;
}

TEST(FindingEvidence, TypedFactsAreWrittenUnderTheirKeys) {
  const json e = EvidenceJson(RingWithLink());
  EXPECT_EQ(e["comm_id"], "0xc02");
  EXPECT_EQ(e["op"], "AllReduce");
  EXPECT_EQ(e["bytes"], 1 << 26);
  EXPECT_EQ(e["peers"], 3);
  EXPECT_DOUBLE_EQ(e["peer_median_busbw_gbps"].get<double>(), 41.0);
  EXPECT_EQ(e["limiting_link"]["medium"], "PCIe");
  EXPECT_EQ(e["limiting_link"]["link"], "PCIe gen4 x16");
  EXPECT_EQ(e["nranks"], 2);

  const json s = EvidenceJson(ArrivalStraggler());
  EXPECT_EQ(s["cause_kind"], "nvtx_range");
  EXPECT_EQ(s["instances_last"], 48);
  EXPECT_EQ(s["ops"]["allreduce"], 48);
  EXPECT_EQ(s["cause"]["range"], "data");
  EXPECT_EQ(s["cause"]["late_rank_ns_per_instance"], 31'000'000);
  EXPECT_EQ(s["kernels"][0]["kernel"], "void sgemm<128>(float*)");

  // An arrival straggler names its cause range always: null without one.
  Finding none = ArrivalStraggler();
  none.cause_range.reset();
  none.kernels = std::vector<KernelExcess>{};
  const json n = EvidenceJson(none);
  ASSERT_TRUE(n.contains("cause"));
  EXPECT_TRUE(n["cause"].is_null());
  EXPECT_TRUE(n["kernels"].is_array() && n["kernels"].empty());
  // A blame straggler's range is over the run, and absent when it has none.
  Finding blame;
  blame.kind = FindingKind::kStraggler;
  EXPECT_FALSE(EvidenceJson(blame).contains("cause"));
  blame.cause_range = CauseRange{"compute", 5, 2, false};
  EXPECT_EQ(EvidenceJson(blame)["cause"],
            (json{{"range", "compute"}, {"late_rank_ns", 5}, {"others_ns", 2}}));
}

TEST(FindingEvidence, JoinedFindingsGoUnderTheirKeys) {
  Finding loader;
  loader.kind = FindingKind::kDataloaderSkew;
  loader.step_source = StepSource::kFirstKernelLaunch;
  loader.joined.push_back(ArrivalStraggler());
  const json e = EvidenceJson(loader);
  EXPECT_EQ(e["step_source"], "first_kernel_launch");
  // A straggler joined into its loader's skew: its arrivals and cause range, nothing more.
  EXPECT_EQ(e["straggler"], (json{{"instances_last", 48},
                                  {"instances_total", 50},
                                  {"median_lateness_ns", 30'000'000},
                                  {"others_wait_ns", 4'500'000'000},
                                  {"others_waiting", 3},
                                  {"others_wait_fraction", 0.31},
                                  {"ops", {{"allreduce", 48}}},
                                  {"cause",
                                   {{"range", "data"},
                                    {"late_rank_ns_per_instance", 31'000'000},
                                    {"others_ns_per_instance", 1'000'000}}}}));

  Finding pcie;
  pcie.kind = FindingKind::kPcieBound;
  pcie.evidence = {{"links", "GPU pairs over PCIe only"}};
  pcie.joined.push_back(RingWithLink());
  Finding ceiling = RingWithLink();
  ceiling.kind = FindingKind::kBelowLinkCeiling;
  pcie.joined.push_back(ceiling);
  const json p = EvidenceJson(pcie);
  EXPECT_EQ(p["measured"], EvidenceJson(RingWithLink()));
  EXPECT_EQ(p["below_link_ceiling"]["limiting_link"]["transport"], "SHM");
  EXPECT_EQ(p["links"], "GPU pairs over PCIe only");
}

// What `advise` reads back from report.json is what the analyses made, and writes the same.
TEST(FindingEvidence, ReportJsonReadsBackIntoTheTypedFacts) {
  Finding pcie;
  pcie.kind = FindingKind::kPcieBound;
  pcie.joined.push_back(RingWithLink());
  Finding loader;
  loader.kind = FindingKind::kDataloaderSkew;
  loader.step_source = StepSource::kDataRanges;
  loader.joined.push_back(ArrivalStraggler());
  Finding none = ArrivalStraggler();
  none.cause_range.reset();
  Finding starved;
  starved.kind = FindingKind::kStraggler;
  starved.cause = CauseKind::kCpuStarved;
  starved.evidence = {{"cpu", {{"verdict", "cgroup_quota"}}}, {"cpu_cause", "cgroup_quota"}};
  starved.quota_cgroup = QuotaCgroup{2, "/rs/quota", 2950, 3100, 8'100'000'000, 0.3};
  Finding frozen;
  frozen.kind = FindingKind::kStraggler;
  frozen.cause = CauseKind::kFrozen;
  frozen.off_cpu = OffCpuCause{CauseKind::kFrozen, "__refrigerator", "frozen", 0.58, 0.0, 312};
  for (const Finding& f :
       {RingWithLink(), ArrivalStraggler(), none, pcie, loader, starved, frozen}) {
    const json written = FindingToJson(f);
    Result<Finding> back = FindingFromJson(written);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back.value().limiting_link, f.limiting_link);
    EXPECT_EQ(back.value().comm_measure, f.comm_measure);
    EXPECT_EQ(back.value().arrivals, f.arrivals);
    EXPECT_EQ(back.value().cause_range, f.cause_range);
    EXPECT_EQ(back.value().kernels, f.kernels);
    EXPECT_EQ(back.value().step_source, f.step_source);
    EXPECT_EQ(back.value().off_cpu, f.off_cpu);
    EXPECT_EQ(back.value().quota_cgroup, f.quota_cgroup);
    EXPECT_EQ(back.value().nvml_links, f.nvml_links);
    ASSERT_EQ(back.value().joined.size(), f.joined.size());
    for (size_t i = 0; i < f.joined.size(); ++i) {
      EXPECT_EQ(back.value().joined[i].kind, f.joined[i].kind);
      EXPECT_EQ(back.value().joined[i].comm_measure, f.joined[i].comm_measure);
      EXPECT_EQ(back.value().joined[i].arrivals, f.joined[i].arrivals);
    }
    EXPECT_EQ(FindingToJson(back.value()), written) << written.dump();
  }
}

// Facts this build cannot read stay as the report had them.
TEST(FindingEvidence, UnknownNamesStayText) {
  const json later = {{"limiting_link", {{"medium", "photonic"}, {"link", "x"}}},
                      {"comm_id", "0x1"},
                      {"op", "AllFuse"},
                      {"bytes", 8},
                      {"busbw_gbps", 1.0},
                      {"step_source", "tea_leaves"},
                      {"cause", "a note"}};
  Finding f;
  TakeEvidence(later, &f);
  EXPECT_FALSE(f.limiting_link);
  EXPECT_FALSE(f.comm_measure);
  EXPECT_EQ(f.step_source, StepSource::kNone);
  EXPECT_FALSE(f.cause_range);
  EXPECT_EQ(f.evidence, later);
  EXPECT_EQ(EvidenceJson(f), later);
}

// The text and HTML reports show the typed facts too (the cause found, the what-if).
TEST(FindingEvidence, ReadableEvidenceShowsTheTypedFacts) {
  Finding s = ArrivalStraggler();
  s.what_if = WhatIf{10'000'000'000, 5'000'000'000, 4'000'000'000, {1}};
  bool cause = false, what_if = false;
  for (const auto& [key, value] : ReadableEvidence(EvidenceJson(s), 0)) {
    cause |= key == "cause_kind" && value == "nvtx_range";
    what_if |= key.rfind("what_if.", 0) == 0;
  }
  EXPECT_TRUE(cause);
  EXPECT_TRUE(what_if);
}

// A process outlier's figures, as report.json has always named them.
TEST(FindingEvidence, ProcessOutlierFiguresKeepTheirKeys) {
  Finding f;
  f.kind = FindingKind::kProcessOutlier;
  f.process_outlier =
      ProcessOutlierFigures{2'000'000'000,
                            4e9,
                            1e8,
                            3e9,
                            0,
                            5e8,
                            1e6,
                            1.9e9,
                            2e9,
                            4,
                            {ProcessVerdict::kIoHeavyStorage, ProcessVerdict::kBlockedOnStorage}};
  const json e = EvidenceJson(f);
  EXPECT_EQ(e, (json{{"window_ns", 2'000'000'000},
                     {"rchar_bytes", 4e9},
                     {"others_median_rchar_bytes", 1e8},
                     {"read_bytes", 3e9},
                     {"others_median_read_bytes", 0.0},
                     {"blkio_delay_ns", 5e8},
                     {"others_median_blkio_delay_ns", 1e6},
                     {"cpu_ns", 1.9e9},
                     {"others_median_cpu_ns", 2e9},
                     {"ranks_compared", 4u},
                     {"verdicts", {"io_heavy_storage", "blocked_on_storage"}}}));
  // Read back, the figures stay JSON and are written again as they were.
  Result<Finding> back = FindingFromJson(FindingToJson(f));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(EvidenceJson(back.value()), e);
}

// A loader's figures and its processes', as report.json has always named them.
TEST(FindingEvidence, DataloaderAndProcessFiguresKeepTheirKeys) {
  Finding f;
  f.kind = FindingKind::kDataloaderSkew;
  f.step_source = StepSource::kStepRanges;
  f.dataloader = DataloaderFigures{50,        48,         0.96,           30'000'000,
                                   5'000'000, 25'000'000, 1'250'000'000,  200'000,
                                   1'000'000, 80'000'000, {"data", "aug"}};
  f.host_process = HostProcessFigures{CauseKind::kHostIo,
                                      uint64_t{4} << 30,
                                      1e7,
                                      uint64_t{3} << 30,
                                      1e6,
                                      2e9,
                                      1.9e9,
                                      900'000'000,
                                      0.0,
                                      5,
                                      false};
  const json e = EvidenceJson(f);
  EXPECT_EQ(e, (json{{"step_source", "step_ranges"},
                     {"steps", 50},
                     {"steps_skewed", 48},
                     {"frac_skewed", 0.96},
                     {"median_data_ns", 30'000'000},
                     {"others_median_data_ns", 5'000'000},
                     {"median_excess_ns", 25'000'000},
                     {"total_excess_ns", 1'250'000'000},
                     {"noise_ns", 200'000},
                     {"excess_threshold_ns", 1'000'000},
                     {"median_step_ns", 80'000'000},
                     {"range_names", {"data", "aug"}},
                     {"process",
                      {{"verdict", "io"},
                       {"rchar_bytes", uint64_t{4} << 30},
                       {"others_rchar_bytes", 1e7},
                       {"read_bytes", uint64_t{3} << 30},
                       {"others_read_bytes", 1e6},
                       {"cpu_ns", 2e9},
                       {"others_cpu_ns", 1.9e9},
                       {"blkio_delay_ns", 900'000'000},
                       {"others_blkio_delay_ns", 0.0},
                       {"processes", 5},
                       {"io_unreadable", false}}}}));
  f.dataloader->median_step.reset();
  EXPECT_FALSE(EvidenceJson(f).contains("median_step_ns"));
}

// A straggler's arrival figures, what it did before its late calls, its CPU starvation and the
// blame model's confidence, as report.json has always named them; read back, they stay JSON and
// are written again as they were.
TEST(FindingEvidence, StragglerFiguresKeepTheirKeys) {
  Finding f;
  f.kind = FindingKind::kStraggler;
  ArrivalFigures a;
  a.instances_late = 49;
  a.frac_last = 0.96;
  a.frac_late = 0.98;
  a.frac_late_needed = 0.4;
  a.chance_probability = 1e-9;
  a.frac_late_first_half = 1.0;
  a.frac_late_second_half = 0.96;
  a.p90_lateness = 31'000'000;
  a.lateness_quantiles = {1, 2, 3, 4, 5, 6};
  a.noise = 100'000;
  a.lateness_threshold = 400'000;
  a.clock_uncertainty = 20'000;
  a.wait_states = {{"wait_at_nxn", 49}};
  a.communicators = {{"0x7", 49, 48, 4'000'000'000}};
  f.arrival_figures = a;
  BeforeLateCalls b;
  b.instances = 49;
  b.ranges = {CauseRange{"compute", 30, 3, true}};
  b.gap = 40;
  b.others_gap = 9;
  b.untracked = 5;
  b.others_untracked = 4;
  b.mpi = 2;
  b.others_mpi = 1;
  b.kernels = 0;
  b.others_kernels = 0;
  b.launch = BeforeLateCalls::Launch{45, 20'000'000, 100, 90};
  f.before_late_calls = b;
  f.cpu_starvation =
      CpuStarvation{8, 10, 0.8, 0.05, 0.2, 0.9, uint64_t{3000}, 40.0, StarvedBy::kCgroupQuota};
  f.quota_cgroup = QuotaCgroup{2, "/rs/quota", 2950, 3100, 8'100'000'000, 0.3};
  f.blame_confidence = BlameConfidence{0.9, 0.7, 0.95, 0.9};
  const json e = EvidenceJson(f);
  EXPECT_EQ(e, (json{{"instances_late", 49},
                     {"frac_last", 0.96},
                     {"frac_late", 0.98},
                     {"frac_late_needed", 0.4},
                     {"chance_probability", 1e-9},
                     {"frac_late_first_half", 1.0},
                     {"frac_late_second_half", 0.96},
                     {"persistence", "throughout"},
                     {"p90_lateness_ns", 31'000'000},
                     {"lateness_ns",
                      {{"p10", 1}, {"p25", 2}, {"p50", 3}, {"p75", 4}, {"p90", 5}, {"max", 6}}},
                     {"noise_ns", 100'000},
                     {"lateness_threshold_ns", 400'000},
                     {"clock_uncertainty_ns", 20'000},
                     {"wait_states", {{"wait_at_nxn", 49}}},
                     {"communicators",
                      {{{"comm_id", "0x7"},
                        {"late_instances", 49},
                        {"last_instances", 48},
                        {"others_wait_ns", 4'000'000'000}}}},
                     {"cause_instances", 49},
                     {"ranges",
                      {{{"range", "compute"},
                        {"late_rank_ns_per_instance", 30},
                        {"others_ns_per_instance", 3}}}},
                     {"gap_ns_per_instance", 40},
                     {"others_gap_ns_per_instance", 9},
                     {"untracked_ns_per_instance", 5},
                     {"others_untracked_ns_per_instance", 4},
                     {"mpi_ns_per_instance", 2},
                     {"others_mpi_ns_per_instance", 1},
                     {"kernel_ns_per_instance", 0},
                     {"others_kernel_ns_per_instance", 0},
                     {"launch",
                      {{"instances", 45},
                       {"launch_lateness_ns", 20'000'000},
                       {"queue_ns", 100},
                       {"others_queue_ns", 90}}},
                     {"cpu",
                      {{"run_delay_ns", 8},
                       {"wall_ns", 10},
                       {"run_delay_per_wall", 0.8},
                       {"others_run_delay_per_wall", 0.05},
                       {"cpu_per_wall", 0.2},
                       {"others_cpu_per_wall", 0.9},
                       {"involuntary_switches", 3000},
                       {"others_involuntary_switches", 40.0},
                       {"verdict", "cgroup_quota"},
                       {"cgroup",
                        {{"version", 2},
                         {"path", "/rs/quota"},
                         {"nr_throttled", 2950},
                         {"nr_periods", 3100},
                         {"throttled_ns", 8'100'000'000},
                         {"quota_cpus", 0.3}}}}},
                     {"cpu_cause", "cgroup_quota"},
                     {"confidence", {{"gain", 0.9}, {"separation", 0.7}, {"outside", 0.95}}}}))
      << e.dump();
  // Fewer than ten calls: no tenths; a clean distribution: no quantiles.
  f.arrival_figures->frac_late_by_decile.clear();
  f.arrival_figures->lateness_quantiles.clear();
  f.before_late_calls->launch.reset();
  const json fewer = EvidenceJson(f);
  EXPECT_FALSE(fewer.contains("frac_late_by_decile"));
  EXPECT_FALSE(fewer.contains("lateness_ns"));
  EXPECT_FALSE(fewer.contains("launch"));
  Result<Finding> back = FindingFromJson(FindingToJson(f));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(EvidenceJson(back.value()), fewer);
}

// A late sender's figures name the receivers that waited and where the sender was; a late
// receiver's the senders and the receiver.
TEST(FindingEvidence, WaitStateFiguresNameTheirSide) {
  Finding f;
  f.kind = FindingKind::kLateSender;
  f.wait_state = WaitStateFigures{48,
                                  50,
                                  {2, 3},
                                  20'000'000,
                                  960'000'000,
                                  10,
                                  0.31,
                                  3'000'000'000,
                                  5,
                                  1000,
                                  0,
                                  1 << 20,
                                  {{"compute", 900'000'000}},
                                  60'000'000};
  const json sender = EvidenceJson(f);
  EXPECT_EQ(sender, (json{{"late_messages", 48},
                          {"sends", 50},
                          {"receivers", {2, 3}},
                          {"median_direct_wait_ns", 20'000'000},
                          {"direct_wait_ns", 960'000'000},
                          {"propagated_wait_ns", 10},
                          {"cost_fraction", 0.31},
                          {"p2p_span_ns", 3'000'000'000},
                          {"clock_uncertainty_ns", 5},
                          {"matched_messages", 1000},
                          {"unmapped_records", 0},
                          {"median_message_bytes", 1 << 20},
                          {"sender_ranges", {{{"range", "compute"}, {"ns", 900'000'000}}}},
                          {"sender_untracked_ns", 60'000'000}}))
      << sender.dump();
  f.kind = FindingKind::kLateReceiver;
  f.wait_state->median_message_bytes = 0;
  const json receiver = EvidenceJson(f);
  EXPECT_EQ(receiver["receives"], 50);
  EXPECT_EQ(receiver["senders"], json({2, 3}));
  EXPECT_EQ(receiver["receiver_ranges"][0]["range"], "compute");
  EXPECT_EQ(receiver["receiver_untracked_ns"], 60'000'000);
  EXPECT_FALSE(receiver.contains("median_message_bytes"));
  EXPECT_FALSE(receiver.contains("sends") || receiver.contains("sender_ranges"));
}

// A ring's and a link ceiling's figures, as report.json has always named them.
TEST(FindingEvidence, RingAndCeilingFiguresKeepTheirKeys) {
  Finding ring;
  ring.kind = FindingKind::kImbalancedRing;
  ring.ring =
      RingFigures{4, 40, {"NET/IB", "P2P"}, {{0, 1, "NET/IB"}}, {{1, 2, ""}, {3, 0, ""}}, 1.0};
  ring.ceiling = CeilingReach{true, 25.0, 0.2, 0.5};
  EXPECT_EQ(
      EvidenceJson(ring),
      (json{{"nranks", 4},
            {"instances", 40},
            {"transports", {"NET/IB", "P2P"}},
            {"odd_links", {{{"from", 0}, {"to", 1}, {"transport", "NET/IB"}}}},
            {"ring_cross_node_hops", 2},
            {"ring_cross_node_hop_list", {{{"from", 1}, {"to", 2}}, {{"from", 3}, {"to", 0}}}},
            {"peer_median_ring_cross_node_hops", 1.0},
            {"below_transport_ceiling", true},
            {"ceiling_busbw_gbps", 25.0},
            {"ceiling_fraction_reached", 0.2},
            {"ceiling_min_fraction", 0.5}}));
  Finding below;
  below.kind = FindingKind::kBelowLinkCeiling;
  below.below_ceiling =
      BelowCeilingFigures{2, 20, {"P2P"}, {{NcclOp::kAllReduce, 1 << 28, 45.0, 0.1, 20}}};
  EXPECT_EQ(EvidenceJson(below), (json{{"nranks", 2},
                                       {"instances", 20},
                                       {"transports", {"P2P"}},
                                       {"shapes_below_ceiling",
                                        {{{"op", "AllReduce"},
                                          {"bytes", 1 << 28},
                                          {"busbw_gbps", 45.0},
                                          {"ceiling_fraction_reached", 0.1},
                                          {"instances", 20}}}}}));
}

}  // namespace
}  // namespace rankscope
