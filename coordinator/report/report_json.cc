#include "coordinator/report/report_json.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>

#include "coordinator/analysis/kernel_reports.h"
#include "coordinator/collective_matcher.h"
#include "coordinator/report/collective_waits.h"
#include "coordinator/report/finding_evidence.h"
#include "coordinator/report/gpu_json.h"
#include "coordinator/report/live_findings_json.h"
#include "coordinator/report/report_format.h"
#include "core/robust_stats.h"
#include "core/version.h"
#include "model/ncu/ncu_text.h"

namespace rankscope {

namespace {

using nlohmann::json;

json OptionalInt(const std::optional<int>& value) {
  return value.has_value() ? json(*value) : json(nullptr);
}

json JobJson(const Session& session) {
  json job;
  job["id"] = session.job_id;
  job["session_id"] = session.session_id;
  job["launcher"] = session.launcher;
  job["command"] = session.command;
  job["world_size"] = session.world_size;
  job["nodes"] = CountNodes(session);
  job["status"] = session.partial ? "partial" : "complete";
  job["partial_reasons"] = session.partial_reasons;
  job["notes"] = session.analysis_notes;
  job["live_findings"] = LiveFindingsJson(session.live_findings);
  if (!session.live_stalls.empty()) job["live_stalls"] = StallFindingsJson(session.live_stalls);
  job["exit_code"] = OptionalInt(session.launcher_exit_code);
  job["start_ns"] = session.start;
  job["end_ns"] = session.end;
  job["duration_ns"] = std::max<DurationNs>(0, session.end - session.start);
  job["aligned"] = session.aligned;
  return job;
}

json RankJson(const RankData& r, const RankRecordFacts& facts, const GpuReport& gpu) {
  json rank;
  rank["rank"] = r.id.rank;
  rank["node"] = r.id.node;
  rank["host"] = r.id.host;
  rank["pid"] = r.id.program_pid;
  rank["agent_pid"] = r.id.agent_pid;
  rank["local_rank"] = r.id.local_rank;
  rank["restart_count"] = r.id.restart_count;
  rank["exit_code"] = OptionalInt(r.exit_code);
  rank["term_signal"] = r.term_signal;
  rank["finished"] = r.finished;
  rank["exit_unseen"] = r.exit_unseen;
  rank["dropped_records"] = r.dropped_records;
  if (r.proc) {
    // The rank's processes (program + the ones it started), from /proc.
    const ProcessTreeStats& p = *r.proc;
    rank["process"] = {{"rchar_bytes", p.rchar},
                       {"read_bytes", p.read_bytes},
                       {"wchar_bytes", p.wchar},
                       {"write_bytes", p.write_bytes},
                       {"cpu_user_ns", p.cpu_user_ns},
                       {"cpu_system_ns", p.cpu_system_ns},
                       {"blkio_delay_ns", p.blkio_delay_ns},
                       {"processes", p.processes},
                       {"samples", p.samples},
                       {"io_unreadable", p.io_unreadable},
                       {"sched_cpu_ns", p.sched_cpu_ns},
                       {"run_delay_ns", p.run_delay_ns},
                       {"voluntary_switches", p.voluntary_switches},
                       {"involuntary_switches", p.involuntary_switches},
                       {"threads", p.threads},
                       {"sched_unreadable", p.sched_unreadable},
                       {"sampled_wall_ns", p.sampled_wall_ns}};
    // Shares of the sampled wall time, in CPUs: 1.0 is one CPU busy (or waited for) throughout.
    auto per_wall = [&](DurationNs d) {
      return p.sampled_wall_ns > 0 ? json(static_cast<double>(d) / p.sampled_wall_ns)
                                   : json(nullptr);
    };
    rank["process"]["cpu_per_wall"] = per_wall(p.sched_cpu_ns);
    rank["process"]["run_delay_per_wall"] = per_wall(p.run_delay_ns);
    if (p.cpu_cgroup) {
      const CpuCgroupStats& c = *p.cpu_cgroup;
      std::optional<double> cpus = c.QuotaCpus();
      rank["process"]["cpu_cgroup"] = {
          {"version", c.version},
          {"path", c.path},
          {"limit_path", c.limit_path},
          {"quota_us", c.quota_us >= 0 ? json(c.quota_us) : json(nullptr)},
          {"period_us", c.period_us},
          {"quota_cpus", cpus ? json(*cpus) : json(nullptr)},
          {"nr_periods", c.nr_periods},
          {"nr_throttled", c.nr_throttled},
          {"throttled_ns", c.throttled_ns},
          {"counters_unreadable", c.counters_unreadable},
      };
    }
    if (p.main_thread.samples > 0) {
      const MainThreadStates& m = p.main_thread;
      rank["process"]["main_thread"] = {{"samples", m.samples},
                                        {"running", m.running},
                                        {"stopped", m.stopped},
                                        {"blocked_in", m.blocked_in}};
    }
  }
  if (auto it = gpu.by_rank.find(r.id.rank); it != gpu.by_rank.end()) rank["gpu"] = it->second;
  rank["notices"] = r.notices;
  rank["clock"] = {
      {"offset_ns", r.clock.offset_ns},
      {"drift_ppm", r.clock.drift_ppm},
      {"uncertainty_ns", r.clock.uncertainty_ns},
      {"samples", r.clock.samples_used},
      {"samples_total", r.clock.samples_total},
      {"fitted", r.clock_fitted},
      {"error", r.clock_error.empty() ? json(nullptr) : json(r.clock_error)},
  };
  rank["counts"] = {
      {"collectives", facts.collectives},
      {"p2p", facts.p2p},
      {"ranges", facts.ranges},
      {"marks", facts.marks},
  };
  return rank;
}

// Where a rank's time went in MPI terms, from the blame model.
json MpiJson(const RankBlame& b) {
  json caused_at = json::object();
  for (const auto& [call, ns] : b.caused_at) caused_at[call] = ns;
  return {{"in_mpi_ns", b.in_mpi},
          {"outside_mpi_ns", b.own_work},
          {"waited_ns", b.waited},
          {"caused_ns", b.caused},
          {"caused_at_ns", caused_at},
          {"calls",
           {{"collective", b.collective_calls}, {"p2p", b.p2p_calls}, {"other", b.other_calls}}},
          {"uninterpreted_calls", b.uninterpreted_calls}};
}

json BlameJson(const BlameModel& m) {
  json waits = json::array();
  for (const auto& [pair, ns] : m.waits) {
    waits.push_back({{"waiter", pair.first}, {"culprit", pair.second}, {"wait_ns", ns}});
  }
  json ranks = json::array();
  for (const RankBlame& b : m.ranks) {
    if (!b.replayed) continue;
    ranks.push_back({{"rank", b.rank},
                     {"outside_mpi_ns", b.own_work},
                     {"busy_ns", b.busy},
                     {"excess_sigmas", b.excess_sigmas},
                     {"excess_fraction", b.excess_fraction},
                     {"persistence", b.persistence},
                     {"what_if_ns", b.what_if_span},
                     {"what_if_with", b.what_if_with},
                     {"gain_ns", b.gain},
                     {"caused_total_ns", b.caused_total}});
  }
  return {{"span_ns", m.span()},
          {"replayed_span_ns", m.replayed_span},
          {"typical_outside_mpi_ns", m.typical_own_work},
          {"typical_busy_ns", m.typical_busy},
          {"broken_dependencies", m.broken_dependencies},
          {"stragglers", m.stragglers},
          {"what_if_ns", m.stragglers.empty() ? json(nullptr) : json(m.what_if_all_span)},
          {"candidates", ranks},
          {"waits", waits}};
}

json CollectivesJson(const CollectiveOverview& overview) {
  json by_op = json::object();
  for (const auto& [op, count] : overview.by_op) by_op[op] = count;
  return {
      {"instances", overview.instances},
      {"complete", overview.complete},
      {"mismatched", overview.mismatched},
      {"by_op", by_op},
  };
}

Status FieldError(const std::string& field, const std::string& what) {
  return Status::Error("finding field '" + field + "' " + what);
}

// The reports of the tools ranks ran under (`rankscope run --ncu-rank`, `--nsys-ranks`): where
// each is, and ncu's kernels analysed (model/ncu's JSON, as `rankscope inspect ncu --json`).
json ToolReportsJson(const Session& session) {
  json out = json::array();
  for (const RankKernelReport& r : SessionKernelReports(session)) {
    out.push_back({{"rank", r.rank},
                   {"tool", r.tool},
                   {"path", r.path},
                   {"host", r.host},
                   {"error", r.error.empty() ? json() : json(r.error)},
                   {"problems", r.problems},
                   {"kernels", json(KernelAnalysesToJson(r.kernels))}});
  }
  return out;
}

}  // namespace

json FindingToJson(const Finding& finding) {
  json steps = json::array();
  for (const NextStep& step : finding.next_steps) {
    steps.push_back({{"tool", step.tool}, {"command", step.command}, {"look_for", step.look_for}});
  }
  return {
      {"kind", finding.KindName()},
      {"severity", SeverityName(finding.severity)},
      {"ranks", finding.ranks},
      {"nodes", finding.nodes},
      {"summary", finding.summary},
      {"evidence", EvidenceJson(finding)},
      {"confidence", finding.confidence},
      {"cost_ns", finding.cost_ns},
      {"next_steps", steps},
  };
}

Result<Finding> FindingFromJson(const json& j) {
  if (!j.is_object()) return FieldError("(finding)", "is not an object");
  Finding f;
  // nlohmann throws on type mismatches; this boundary turns that into a Status.
  try {
    const std::string kind = j.at("kind").get<std::string>();
    f.kind = ParseFindingKind(kind);
    if (f.kind == FindingKind::kOther) f.other_kind = kind;
    std::string severity = j.at("severity").get<std::string>();
    if (severity == "info") {
      f.severity = Severity::kInfo;
    } else if (severity == "warning") {
      f.severity = Severity::kWarning;
    } else if (severity == "critical") {
      f.severity = Severity::kCritical;
    } else {
      return FieldError("severity", "has unknown value '" + severity + "'");
    }
    f.ranks = j.at("ranks").get<std::vector<int>>();
    f.nodes = j.at("nodes").get<std::vector<std::string>>();
    f.summary = j.at("summary").get<std::string>();
    TakeEvidence(j.at("evidence"), &f);
    f.confidence = j.at("confidence").get<double>();
    f.cost_ns = j.at("cost_ns").get<int64_t>();
    for (const json& step : j.at("next_steps")) {
      f.next_steps.push_back({step.at("tool").get<std::string>(),
                              step.at("command").get<std::string>(),
                              step.at("look_for").get<std::string>()});
    }
  } catch (const json::exception& e) {
    return Status::Error(std::string("finding is malformed: ") + e.what());
  }
  return f;
}

json BuildReportJson(const Session& session, const std::vector<Finding>& findings) {
  return BuildReportJson(session, findings, BuildGpuReport(session),
                         SummarizeCollectives(MatchCollectives(session)));
}

json BuildReportJson(const Session& session, const std::vector<Finding>& findings,
                     const GpuReport& gpu, const CollectiveOverview& collectives,
                     const BlameModel* blame, const RecordFacts* given_facts) {
  const RecordFacts gathered = given_facts ? RecordFacts{} : GatherRecordFacts(session);
  const RecordFacts& facts = given_facts ? *given_facts : gathered;
  json report;
  report["schema"] = kReportSchemaId;
  report["generated_by"] = {{"name", "rankscope"}, {"version", kRankscopeVersion}};
  report["job"] = JobJson(session);
  json ranks = json::array();
  for (size_t i = 0; i < session.ranks.size(); ++i) {
    const RankData& r = session.ranks[i];
    json rank = RankJson(r, facts.ranks[i], gpu);
    if (blame != nullptr) {
      if (const RankBlame* b = blame->Find(r.id.rank)) rank["mpi"] = MpiJson(*b);
    }
    ranks.push_back(std::move(rank));
  }
  report["ranks"] = std::move(ranks);
  if (blame != nullptr && !blame->ranks.empty()) report["blame"] = BlameJson(*blame);
  json findings_json = json::array();
  for (const Finding* f : FindingsWorstFirst(findings)) findings_json.push_back(FindingToJson(*f));
  report["findings"] = std::move(findings_json);
  report["collectives"] = CollectivesJson(collectives);
  if (!gpu.nccl.is_null()) report["nccl"] = gpu.nccl;
  if (json topo = TopologyReportJson(session); !topo.empty()) report["topology"] = std::move(topo);
  if (json nvml = NvmlReportJson(session); !nvml.empty()) report["nvml"] = std::move(nvml);
  if (json tools = ToolReportsJson(session); !tools.empty()) report["tool_reports"] = tools;
  if (!session.earlier_attempts.empty()) {
    std::map<int, json> by_attempt;
    const GpuReport none;  // GPU figures are the last attempt's
    for (const RankData& r : session.earlier_attempts) {
      json& a = by_attempt[r.id.restart_count];
      if (a.is_null()) a = {{"restart_count", r.id.restart_count}, {"ranks", json::array()}};
      a["ranks"].push_back(RankJson(r, GatherRankFacts(r), none));
    }
    json attempts = json::array();
    for (auto& [count, a] : by_attempt) attempts.push_back(std::move(a));
    report["attempts"] = std::move(attempts);
  }
  return report;
}

}  // namespace rankscope
