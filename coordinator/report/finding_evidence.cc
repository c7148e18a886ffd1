#include "coordinator/report/finding_evidence.h"

#include <string>
#include <utility>

namespace rankscope {
namespace {

using nlohmann::json;

// Where a joined finding's evidence goes in its host's.
const char* JoinedKey(FindingKind kind) {
  switch (kind) {
    case FindingKind::kImbalancedRing:
      return "measured";
    case FindingKind::kBelowLinkCeiling:
      return "below_link_ceiling";
    case FindingKind::kStraggler:
      return "straggler";
    default:
      return nullptr;
  }
}

json LimitingLinkJson(const LimitingLink& l) {
  return {{"from_rank", l.from_rank},
          {"to_rank", l.to_rank},
          {"at_rank", l.at_rank},
          {"from_node", l.from_node},
          {"to_node", l.to_node},
          {"transport", l.transport},
          {"medium", LinkMediumName(l.medium)},
          {"link", l.link},
          {"nominal_gbps", l.nominal_gbps}};
}

void WriteCommMeasure(const CommMeasure& m, json* e) {
  (*e)["comm_id"] = m.comm_id;
  (*e)["op"] = NcclOpName(m.op);
  (*e)["bytes"] = m.bytes;
  (*e)["busbw_gbps"] = m.busbw_gbps;
  if (m.peers >= 0) {
    (*e)["peers"] = m.peers;
    (*e)["peer_median_busbw_gbps"] = m.peer_median_busbw_gbps;
  }
}

void WriteArrivals(const LateArrivals& a, json* e) {
  (*e)["instances_last"] = a.instances_last;
  (*e)["instances_total"] = a.instances_total;
  (*e)["median_lateness_ns"] = a.median_lateness;
  (*e)["others_wait_ns"] = a.others_wait;
  (*e)["others_waiting"] = a.others_waiting;
  (*e)["others_wait_fraction"] = a.others_wait_fraction;
  (*e)["ops"] = a.ops;
}

// An arrival-based straggler names its cause range always (null without one).
json CauseRangeJson(const std::optional<CauseRange>& c) {
  if (!c) return nullptr;
  if (c->per_instance) {
    return {{"range", c->name},
            {"late_rank_ns_per_instance", c->mine},
            {"others_ns_per_instance", c->others}};
  }
  return {{"range", c->name}, {"late_rank_ns", c->mine}, {"others_ns", c->others}};
}

void WriteNvmlLinks(const NvmlLinkState& n, json* e) {
  (*e)["driver_version"] = n.driver_version;
  if (!n.pcie.empty()) {
    json& pcie = (*e)["degraded_pcie_links"] = json::array();
    for (const DegradedPcieLink& l : n.pcie) {
      pcie.push_back({{"gpu", l.gpu},
                      {"bus_id", l.bus_id},
                      {"gen", l.gen},
                      {"gen_max", l.gen_max},
                      {"width", l.width},
                      {"width_max", l.width_max}});
    }
  }
  if (!n.nvlinks.empty()) {
    json& down = (*e)["nvlinks_down"] = json::array();
    for (const DownNvlinks& l : n.nvlinks) {
      down.push_back({{"gpu", l.gpu},
                      {"bus_id", l.bus_id},
                      {"nvlinks_up", l.nvlinks_up},
                      {"nvlinks_total", l.nvlinks_total}});
    }
  }
}

void WriteProcessOutlier(const ProcessOutlierFigures& p, json* e) {
  (*e)["window_ns"] = p.window;
  (*e)["rchar_bytes"] = p.rchar;
  (*e)["others_median_rchar_bytes"] = p.others_rchar;
  (*e)["read_bytes"] = p.read_bytes;
  (*e)["others_median_read_bytes"] = p.others_read_bytes;
  (*e)["blkio_delay_ns"] = p.blkio_delay;
  (*e)["others_median_blkio_delay_ns"] = p.others_blkio_delay;
  (*e)["cpu_ns"] = p.cpu;
  (*e)["others_median_cpu_ns"] = p.others_cpu;
  (*e)["ranks_compared"] = p.ranks_compared;
  json verdicts = json::array();
  for (ProcessVerdict v : p.verdicts) verdicts.push_back(ProcessVerdictName(v));
  (*e)["verdicts"] = std::move(verdicts);
}

// "io", "cpu", "waiting".
const char* HostVerdictName(CauseKind verdict) {
  return verdict == CauseKind::kHostIo ? "io" : verdict == CauseKind::kHostCpu ? "cpu" : "waiting";
}

json HostProcessJson(const HostProcessFigures& p) {
  return {{"verdict", HostVerdictName(p.verdict)},
          {"rchar_bytes", p.rchar},
          {"others_rchar_bytes", p.others_rchar},
          {"read_bytes", p.read_bytes},
          {"others_read_bytes", p.others_read_bytes},
          {"cpu_ns", p.cpu},
          {"others_cpu_ns", p.others_cpu},
          {"blkio_delay_ns", p.blkio_delay},
          {"others_blkio_delay_ns", p.others_blkio_delay},
          {"processes", p.processes},
          {"io_unreadable", p.io_unreadable}};
}

void WriteDataloader(const DataloaderFigures& d, json* e) {
  (*e)["steps"] = d.steps;
  (*e)["steps_skewed"] = d.steps_skewed;
  (*e)["frac_skewed"] = d.frac_skewed;
  (*e)["median_data_ns"] = d.median_data;
  (*e)["others_median_data_ns"] = d.others_median_data;
  (*e)["median_excess_ns"] = d.median_excess;
  (*e)["total_excess_ns"] = d.total_excess;
  (*e)["noise_ns"] = d.noise;
  (*e)["excess_threshold_ns"] = d.threshold;
  if (d.median_step) (*e)["median_step_ns"] = *d.median_step;
  (*e)["range_names"] = d.range_names;
}

void WriteArrivalFigures(const ArrivalFigures& a, json* e) {
  (*e)["instances_late"] = a.instances_late;
  (*e)["frac_last"] = a.frac_last;
  (*e)["frac_late"] = a.frac_late;
  (*e)["frac_late_needed"] = a.frac_late_needed;
  (*e)["chance_probability"] = a.chance_probability;
  (*e)["frac_late_first_half"] = a.frac_late_first_half;
  (*e)["frac_late_second_half"] = a.frac_late_second_half;
  (*e)["persistence"] = LatenessName(a.persistence);
  (*e)["p90_lateness_ns"] = a.p90_lateness;
  if (a.lateness_quantiles.size() == 6) {
    const auto& q = a.lateness_quantiles;
    (*e)["lateness_ns"] = {{"p10", q[0]}, {"p25", q[1]}, {"p50", q[2]},
                           {"p75", q[3]}, {"p90", q[4]}, {"max", q[5]}};
  }
  if (!a.frac_late_by_decile.empty()) (*e)["frac_late_by_decile"] = a.frac_late_by_decile;
  (*e)["noise_ns"] = a.noise;
  (*e)["lateness_threshold_ns"] = a.lateness_threshold;
  (*e)["clock_uncertainty_ns"] = a.clock_uncertainty;
  (*e)["wait_states"] = a.wait_states.empty() ? json::object() : json(a.wait_states);
  json comms = json::array();
  for (const ArrivalFigures::Communicator& c : a.communicators) {
    comms.push_back({{"comm_id", c.comm_id},
                     {"late_instances", c.late_instances},
                     {"last_instances", c.last_instances},
                     {"others_wait_ns", c.others_wait}});
  }
  (*e)["communicators"] = std::move(comms);
}

void WriteBeforeLateCalls(const BeforeLateCalls& b, json* e) {
  (*e)["cause_instances"] = b.instances;
  json ranges = json::array();
  for (const CauseRange& r : b.ranges) ranges.push_back(CauseRangeJson(r));
  (*e)["ranges"] = std::move(ranges);
  (*e)["gap_ns_per_instance"] = b.gap;
  (*e)["others_gap_ns_per_instance"] = b.others_gap;
  (*e)["untracked_ns_per_instance"] = b.untracked;
  (*e)["others_untracked_ns_per_instance"] = b.others_untracked;
  (*e)["mpi_ns_per_instance"] = b.mpi;
  (*e)["others_mpi_ns_per_instance"] = b.others_mpi;
  (*e)["kernel_ns_per_instance"] = b.kernels;
  (*e)["others_kernel_ns_per_instance"] = b.others_kernels;
  if (b.launch) {
    (*e)["launch"] = {{"instances", b.launch->instances},
                      {"launch_lateness_ns", b.launch->launch_lateness},
                      {"queue_ns", b.launch->queue},
                      {"others_queue_ns", b.launch->others_queue}};
  }
}

void WriteCpuStarvation(const CpuStarvation& c, json* e) {
  (*e)["cpu"] = {{"run_delay_ns", c.run_delay},
                 {"wall_ns", c.wall},
                 {"run_delay_per_wall", c.run_delay_per_wall},
                 {"others_run_delay_per_wall", c.others_run_delay_per_wall},
                 {"cpu_per_wall", c.cpu_per_wall},
                 {"others_cpu_per_wall", c.others_cpu_per_wall},
                 {"involuntary_switches", c.involuntary_switches},
                 {"others_involuntary_switches", c.others_involuntary_switches},
                 {"verdict", StarvedByName(c.by)}};
  (*e)["cpu_cause"] = StarvedByName(c.by);
}

// late_sender's keys name the receivers that waited and where the sender was; late_receiver's
// the senders and the receiver.
void WriteWaitState(bool sender, const WaitStateFigures& w, json* e) {
  (*e)["late_messages"] = w.late_messages;
  (*e)[sender ? "sends" : "receives"] = w.matched;
  (*e)[sender ? "receivers" : "senders"] = w.others;
  (*e)["median_direct_wait_ns"] = w.median_direct_wait;
  (*e)["direct_wait_ns"] = w.direct_wait;
  (*e)["propagated_wait_ns"] = w.propagated_wait;
  (*e)["cost_fraction"] = w.cost_fraction;
  (*e)["p2p_span_ns"] = w.p2p_span;
  (*e)["clock_uncertainty_ns"] = w.clock_uncertainty;
  (*e)["matched_messages"] = w.matched_messages;
  (*e)["unmapped_records"] = w.unmapped_records;
  if (w.median_message_bytes > 0) (*e)["median_message_bytes"] = w.median_message_bytes;
  json ranges = json::array();
  for (const auto& [name, ns] : w.ranges) ranges.push_back({{"range", name}, {"ns", ns}});
  (*e)[sender ? "sender_ranges" : "receiver_ranges"] = std::move(ranges);
  (*e)[sender ? "sender_untracked_ns" : "receiver_untracked_ns"] = w.untracked;
}

json RankLinksJson(const std::vector<RankLink>& links, bool with_transport) {
  json out = json::array();
  for (const RankLink& l : links) {
    out.push_back(with_transport ? json{{"from", l.from}, {"to", l.to}, {"transport", l.transport}}
                                 : json{{"from", l.from}, {"to", l.to}});
  }
  return out;
}

void WriteRing(const RingFigures& r, json* e) {
  (*e)["nranks"] = r.nranks;
  (*e)["instances"] = r.instances;
  (*e)["transports"] = r.transports;
  (*e)["odd_links"] = RankLinksJson(r.odd_links, true);
  (*e)["ring_cross_node_hops"] = r.cross_node_hops.size();
  (*e)["ring_cross_node_hop_list"] = RankLinksJson(r.cross_node_hops, false);
  (*e)["peer_median_ring_cross_node_hops"] = r.peer_median_cross_node_hops;
}

void WriteBelowCeiling(const BelowCeilingFigures& b, json* e) {
  (*e)["nranks"] = b.nranks;
  (*e)["instances"] = b.instances;
  (*e)["transports"] = b.transports;
  json shapes = json::array();
  for (const ShapeBelowCeiling& s : b.shapes) {
    shapes.push_back({{"op", NcclOpName(s.op)},
                      {"bytes", s.bytes},
                      {"busbw_gbps", s.busbw_gbps},
                      {"ceiling_fraction_reached", s.fraction},
                      {"instances", s.instances}});
  }
  (*e)["shapes_below_ceiling"] = std::move(shapes);
}

void WriteCeiling(const CeilingReach& c, json* e) {
  (*e)["below_transport_ceiling"] = c.below;
  (*e)["ceiling_busbw_gbps"] = c.ceiling_gbps;
  (*e)["ceiling_fraction_reached"] = c.fraction;
  (*e)["ceiling_min_fraction"] = c.min_fraction;
}

void WriteFacts(const Finding& f, json* e) {
  if (f.cause != CauseKind::kNone) (*e)["cause_kind"] = CauseKindName(f.cause);
  if (f.what_if) {
    const WhatIf& w = *f.what_if;
    (*e)["what_if"] = {{"job_ns", w.job},
                       {"what_if_ns", w.with_typical},
                       {"speedup", w.speedup()},
                       {"caused_ns", w.caused},
                       {"ranks", w.ranks}};
  }
  if (f.limiting_link) (*e)["limiting_link"] = LimitingLinkJson(*f.limiting_link);
  if (f.comm_measure) WriteCommMeasure(*f.comm_measure, e);
  if (f.arrivals) WriteArrivals(*f.arrivals, e);
  if (f.arrivals || f.cause_range) (*e)["cause"] = CauseRangeJson(f.cause_range);
  if (f.kernels) {
    json kernels = json::array();
    for (const KernelExcess& k : *f.kernels) {
      kernels.push_back({{"kernel", k.name},
                         {"late_rank_ns_per_instance", k.mine},
                         {"others_ns_per_instance", k.others}});
    }
    (*e)["kernels"] = std::move(kernels);
  }
  if (!f.kernel_verdicts.empty()) {
    json verdicts = json::array();
    for (const KernelVerdict& v : f.kernel_verdicts) {
      verdicts.push_back({{"kernel", v.kernel},
                          {"bound", v.bound},
                          {"why", v.why},
                          {"top_stall", v.stall},
                          {"fix", v.fix},
                          {"report", v.report}});
    }
    (*e)["kernel_verdicts"] = std::move(verdicts);
  }
  if (!f.under_tool.empty()) (*e)["under_tool"] = f.under_tool;
  if (f.step_source != StepSource::kNone) (*e)["step_source"] = StepSourceName(f.step_source);
  if (f.off_cpu) {
    const OffCpuCause& o = *f.off_cpu;
    (*e)["off_cpu"] = {{"kind", CauseKindName(o.kind)},  {"wchan", o.where},
                       {"meaning", o.meaning},           {"share", o.share},
                       {"others_share", o.others_share}, {"samples", o.samples}};
  }
  if (f.nvml_links) WriteNvmlLinks(*f.nvml_links, e);
  if (f.process_outlier) WriteProcessOutlier(*f.process_outlier, e);
  if (f.dataloader) WriteDataloader(*f.dataloader, e);
  if (f.host_process) (*e)["process"] = HostProcessJson(*f.host_process);
  if (f.arrival_figures) WriteArrivalFigures(*f.arrival_figures, e);
  if (f.before_late_calls) WriteBeforeLateCalls(*f.before_late_calls, e);
  if (f.cpu_starvation) WriteCpuStarvation(*f.cpu_starvation, e);
  if (f.blame_confidence) {
    const BlameConfidence& c = *f.blame_confidence;
    (*e)["confidence"] = {{"gain", c.gain}, {"separation", c.separation}, {"outside", c.outside}};
  }
  if (f.wait_state) WriteWaitState(f.kind == FindingKind::kLateSender, *f.wait_state, e);
  if (f.ring) WriteRing(*f.ring, e);
  if (f.below_ceiling) WriteBelowCeiling(*f.below_ceiling, e);
  if (f.ceiling) WriteCeiling(*f.ceiling, e);
  if (!f.weak_links.empty()) (*e)["links"] = f.weak_links;
  if (f.quota_cgroup) {
    const QuotaCgroup& c = *f.quota_cgroup;
    json& cpu = (*e)["cpu"];
    if (cpu.is_null()) cpu = json::object();
    if (cpu.is_object()) {
      cpu["cgroup"] = {{"version", c.version},
                       {"path", c.path},
                       {"nr_throttled", c.nr_throttled},
                       {"nr_periods", c.nr_periods},
                       {"throttled_ns", c.throttled_ns},
                       {"quota_cpus", c.quota_cpus ? json(*c.quota_cpus) : json(nullptr)}};
    }
  }
}

// A joined straggler shows how the others waited for it and its cause range, no more.
json JoinedStragglerJson(const Finding& straggler) {
  json e = json::object();
  WriteArrivals(straggler.arrivals.value_or(LateArrivals{}), &e);
  e["cause"] = CauseRangeJson(straggler.cause_range);
  return e;
}

bool HasAll(const json& e, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (!e.contains(k)) return false;
  }
  return true;
}

void EraseAll(json* e, std::initializer_list<const char*> keys) {
  for (const char* k : keys) e->erase(k);
}

std::optional<LimitingLink> TakeLimitingLink(json* e) {
  if (!e->contains("limiting_link") || !(*e)["limiting_link"].is_object()) return std::nullopt;
  const json& l = (*e)["limiting_link"];
  LimitingLink out;
  out.medium = ParseLinkMedium(l.at("medium").get<std::string>());
  if (out.medium == LinkMedium::kUnknown) return std::nullopt;
  out.from_rank = l.at("from_rank").get<int>();
  out.to_rank = l.at("to_rank").get<int>();
  out.at_rank = l.at("at_rank").get<int>();
  out.from_node = l.at("from_node").get<std::string>();
  out.to_node = l.at("to_node").get<std::string>();
  out.transport = l.at("transport").get<std::string>();
  out.link = l.at("link").get<std::string>();
  out.nominal_gbps = l.at("nominal_gbps").get<double>();
  e->erase("limiting_link");
  return out;
}

std::optional<CommMeasure> TakeCommMeasure(json* e) {
  if (!HasAll(*e, {"comm_id", "op", "bytes", "busbw_gbps"}) || !(*e)["op"].is_string()) {
    return std::nullopt;
  }
  CommMeasure m;
  m.op = ParseNcclOp((*e)["op"].get<std::string>());
  if (m.op == NcclOp::kUnknown) return std::nullopt;
  m.comm_id = (*e)["comm_id"].get<std::string>();
  m.bytes = (*e)["bytes"].get<Bytes>();
  m.busbw_gbps = (*e)["busbw_gbps"].get<double>();
  EraseAll(e, {"comm_id", "op", "bytes", "busbw_gbps"});
  if (HasAll(*e, {"peers", "peer_median_busbw_gbps"})) {
    m.peers = (*e)["peers"].get<int>();
    m.peer_median_busbw_gbps = (*e)["peer_median_busbw_gbps"].get<double>();
    EraseAll(e, {"peers", "peer_median_busbw_gbps"});
  }
  return m;
}

constexpr std::initializer_list<const char*> kArrivalKeys = {
    "instances_last",      "instances_total", "median_lateness_ns",
    "others_wait_ns",      "others_waiting",  "ops",
    "others_wait_fraction"};

std::optional<LateArrivals> TakeArrivals(json* e) {
  if (!HasAll(*e, kArrivalKeys)) return std::nullopt;
  LateArrivals a;
  a.instances_last = (*e)["instances_last"].get<int>();
  a.instances_total = (*e)["instances_total"].get<int>();
  a.median_lateness = (*e)["median_lateness_ns"].get<DurationNs>();
  a.others_wait = (*e)["others_wait_ns"].get<DurationNs>();
  a.others_waiting = (*e)["others_waiting"].get<int>();
  a.others_wait_fraction = (*e)["others_wait_fraction"].get<double>();
  a.ops = (*e)["ops"].get<std::map<std::string, int>>();
  EraseAll(e, kArrivalKeys);
  return a;
}

// evidence.cause: a range (typed), or null where the finding always names one (arrivals).
std::optional<CauseRange> TakeCauseRange(bool arrivals, json* e) {
  if (!e->contains("cause")) return std::nullopt;
  if ((*e)["cause"].is_null()) {
    if (arrivals) e->erase("cause");
    return std::nullopt;
  }
  const json& c = (*e)["cause"];
  if (!c.is_object() || !c.contains("range")) return std::nullopt;
  CauseRange out;
  out.name = c["range"].get<std::string>();
  out.per_instance = c.contains("late_rank_ns_per_instance");
  if (out.per_instance) {
    if (!HasAll(c, {"late_rank_ns_per_instance", "others_ns_per_instance"}) || c.size() != 3) {
      return std::nullopt;
    }
    out.mine = c["late_rank_ns_per_instance"].get<DurationNs>();
    out.others = c["others_ns_per_instance"].get<DurationNs>();
  } else {
    if (!HasAll(c, {"late_rank_ns", "others_ns"}) || c.size() != 3) return std::nullopt;
    out.mine = c["late_rank_ns"].get<DurationNs>();
    out.others = c["others_ns"].get<DurationNs>();
  }
  e->erase("cause");
  return out;
}

std::optional<std::vector<KernelExcess>> TakeKernels(json* e) {
  if (!e->contains("kernels") || !(*e)["kernels"].is_array()) return std::nullopt;
  std::vector<KernelExcess> out;
  for (const json& k : (*e)["kernels"]) {
    if (!k.is_object() || k.size() != 3 ||
        !HasAll(k, {"kernel", "late_rank_ns_per_instance", "others_ns_per_instance"})) {
      return std::nullopt;
    }
    out.push_back({k["kernel"].get<std::string>(), k["late_rank_ns_per_instance"].get<DurationNs>(),
                   k["others_ns_per_instance"].get<DurationNs>()});
  }
  e->erase("kernels");
  return out;
}

std::optional<OffCpuCause> TakeOffCpu(json* e) {
  if (!e->contains("off_cpu") || !(*e)["off_cpu"].is_object()) return std::nullopt;
  const json& o = (*e)["off_cpu"];
  if (!o.contains("kind") || !o["kind"].is_string()) return std::nullopt;
  OffCpuCause out;
  out.kind = ParseCauseKind(o["kind"].get<std::string>());
  if (out.kind == CauseKind::kNone || o.size() != 6) return std::nullopt;
  out.where = o.at("wchan").get<std::string>();
  out.meaning = o.at("meaning").get<std::string>();
  out.share = o.at("share").get<double>();
  out.others_share = o.at("others_share").get<double>();
  out.samples = o.at("samples").get<int>();
  e->erase("off_cpu");
  return out;
}

std::optional<QuotaCgroup> TakeQuotaCgroup(json* e) {
  if (!e->contains("cpu") || !(*e)["cpu"].is_object()) return std::nullopt;
  json& cpu = (*e)["cpu"];
  if (!cpu.contains("cgroup") || !cpu["cgroup"].is_object() || cpu["cgroup"].size() != 6) {
    return std::nullopt;
  }
  const json& c = cpu["cgroup"];
  QuotaCgroup out;
  out.version = c.at("version").get<int>();
  out.path = c.at("path").get<std::string>();
  out.nr_throttled = c.at("nr_throttled").get<uint64_t>();
  out.nr_periods = c.at("nr_periods").get<uint64_t>();
  out.throttled_ns = c.at("throttled_ns").get<DurationNs>();
  if (!c.at("quota_cpus").is_null()) out.quota_cpus = c["quota_cpus"].get<double>();
  cpu.erase("cgroup");
  if (cpu.empty()) e->erase("cpu");
  return out;
}

// The links' arrays as WriteNvmlLinks wrote them (whole: a key with another shape stays JSON).
std::optional<NvmlLinkState> TakeNvmlLinks(json* e) {
  const bool pcie = e->contains("degraded_pcie_links") && (*e)["degraded_pcie_links"].is_array();
  const bool down = e->contains("nvlinks_down") && (*e)["nvlinks_down"].is_array();
  if (!e->contains("driver_version") || !(*e)["driver_version"].is_string() || (!pcie && !down)) {
    return std::nullopt;
  }
  NvmlLinkState out;
  out.driver_version = (*e)["driver_version"].get<std::string>();
  if (pcie) {
    for (const json& l : (*e)["degraded_pcie_links"]) {
      out.pcie.push_back({l.at("gpu").get<uint32_t>(), l.at("bus_id").get<std::string>(),
                          l.at("gen").get<int>(), l.at("gen_max").get<int>(),
                          l.at("width").get<int>(), l.at("width_max").get<int>()});
    }
  }
  if (down) {
    for (const json& l : (*e)["nvlinks_down"]) {
      out.nvlinks.push_back({l.at("gpu").get<uint32_t>(), l.at("bus_id").get<std::string>(),
                             l.at("nvlinks_up").get<int>(), l.at("nvlinks_total").get<int>()});
    }
  }
  // An empty array reads back as none, and would not be written again: keep it as it was.
  if ((pcie && out.pcie.empty()) || (down && out.nvlinks.empty())) return std::nullopt;
  EraseAll(e, {"driver_version", "degraded_pcie_links", "nvlinks_down"});
  return out;
}

void TakeJoined(json* e, Finding* f) {
  for (FindingKind kind :
       {FindingKind::kImbalancedRing, FindingKind::kBelowLinkCeiling, FindingKind::kStraggler}) {
    const char* key = JoinedKey(kind);
    if (!e->contains(key) || !(*e)[key].is_object()) continue;
    Finding joined;
    joined.kind = kind;
    json sub = std::move((*e)[key]);
    e->erase(key);
    if (kind == FindingKind::kStraggler) {
      joined.arrivals = TakeArrivals(&sub);
      joined.cause_range = TakeCauseRange(true, &sub);
      joined.evidence = std::move(sub);  // nothing, from this build's reports
    } else {
      TakeEvidence(std::move(sub), &joined);
    }
    f->joined.push_back(std::move(joined));
  }
}

}  // namespace

json EvidenceJson(const Finding& finding) {
  json e = finding.evidence.is_null() ? json::object() : finding.evidence;
  if (!e.is_object()) return e;
  WriteFacts(finding, &e);
  for (const Finding& j : finding.joined) {
    const char* key = JoinedKey(j.kind);
    if (key == nullptr) continue;
    e[key] = j.kind == FindingKind::kStraggler ? JoinedStragglerJson(j) : EvidenceJson(j);
  }
  return e;
}

void TakeEvidence(json evidence, Finding* f) {
  if (evidence.is_object()) {
    if (evidence.contains("what_if")) {
      const json& w = evidence["what_if"];
      WhatIf what_if;
      what_if.job = w.at("job_ns").get<DurationNs>();
      what_if.with_typical = w.at("what_if_ns").get<DurationNs>();
      what_if.caused = w.at("caused_ns").get<DurationNs>();
      what_if.ranks = w.at("ranks").get<std::vector<int>>();
      f->what_if = what_if;
      evidence.erase("what_if");
    }
    // A cause this build names is typed; another stays text.
    if (evidence.contains("cause_kind") && evidence["cause_kind"].is_string()) {
      f->cause = ParseCauseKind(evidence["cause_kind"].get<std::string>());
      if (f->cause != CauseKind::kNone) evidence.erase("cause_kind");
    }
    f->limiting_link = TakeLimitingLink(&evidence);
    f->comm_measure = TakeCommMeasure(&evidence);
    f->arrivals = TakeArrivals(&evidence);
    f->cause_range = TakeCauseRange(f->arrivals.has_value(), &evidence);
    f->kernels = TakeKernels(&evidence);
    if (evidence.contains("step_source") && evidence["step_source"].is_string()) {
      f->step_source = ParseStepSource(evidence["step_source"].get<std::string>());
      if (f->step_source != StepSource::kNone) evidence.erase("step_source");
    }
    f->off_cpu = TakeOffCpu(&evidence);
    f->quota_cgroup = TakeQuotaCgroup(&evidence);
    f->nvml_links = TakeNvmlLinks(&evidence);
    TakeJoined(&evidence, f);
  }
  f->evidence = std::move(evidence);
}

}  // namespace rankscope
