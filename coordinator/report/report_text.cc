#include "coordinator/report/report_text.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "coordinator/collective_matcher.h"
#include "coordinator/report/collective_waits.h"
#include "coordinator/report/gpu_json.h"
#include "coordinator/report/report_format.h"

namespace rankscope {

namespace {

// What fits on one screen; the rest is in report.html / report.json.
constexpr size_t kMaxFindings = 6;
constexpr size_t kEvidenceWidth = 90;  // characters
constexpr size_t kMaxClockRows = 12;
constexpr size_t kMaxNotices = 10;

// Replaces C0/C1 control characters and DEL: session strings come from the profiled program
// (NVTX names, notices) and must not be able to move the cursor or recolour the terminal.
std::string Clean(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      out += '?';
    } else if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      out += '?';
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

class Painter {
 public:
  explicit Painter(bool color) : color_(color) {}
  std::string Bold(const std::string& s) const { return Wrap("1", s); }
  std::string Dim(const std::string& s) const { return Wrap("2", s); }
  std::string Red(const std::string& s) const { return Wrap("1;31", s); }
  std::string Yellow(const std::string& s) const { return Wrap("1;33", s); }
  std::string Green(const std::string& s) const { return Wrap("1;32", s); }
  std::string Cyan(const std::string& s) const { return Wrap("36", s); }

 private:
  std::string Wrap(const char* code, const std::string& s) const {
    if (!color_) return s;
    return std::string("\x1b[") + code + "m" + s + "\x1b[0m";
  }
  bool color_;
};

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string Join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += separator;
    out += p;
  }
  return out;
}

std::string Header(const Session& session, const Painter& paint) {
  std::string line = paint.Bold("rankscope") + "  job " +
                     Clean(session.job_id.empty() ? session.session_id : session.job_id);
  if (!session.launcher.empty()) line += " (" + Clean(session.launcher) + ")";
  int nodes = CountNodes(session);
  line += "  " + std::to_string(session.ranks.size());
  if (session.world_size > 0 && static_cast<size_t>(session.world_size) != session.ranks.size()) {
    line += "/" + std::to_string(session.world_size);
  }
  line += session.ranks.size() == 1 ? " rank" : " ranks";
  line += " on " + std::to_string(nodes) + (nodes == 1 ? " node" : " nodes");
  line += "  " + FormatDuration(std::max<DurationNs>(0, session.end - session.start));
  line += "  " + (session.partial ? paint.Red("PARTIAL") : paint.Green("COMPLETE"));
  if (session.launcher_exit_code.has_value() && *session.launcher_exit_code != 0) {
    line += "  launcher exit " + std::to_string(*session.launcher_exit_code);
  }
  line += "\n";
  if (session.partial && !session.partial_reasons.empty()) {
    std::vector<std::string> reasons;
    for (const std::string& r : session.partial_reasons) reasons.push_back(Clean(r));
    line += "  partial: " + Join(reasons, "; ") + "\n";
  }
  if (!session.command.empty()) {
    std::vector<std::string> words;
    for (const std::string& w : session.command) words.push_back(Clean(w));
    std::string command = Join(words, " ");
    if (command.size() > 90) command = command.substr(0, 87) + "...";
    line += paint.Dim("  command: " + command) + "\n";
  }
  return line;
}

std::string SeverityTag(Severity severity, const Painter& paint) {
  switch (severity) {
    case Severity::kCritical:
      return paint.Red("CRITICAL");
    case Severity::kWarning:
      return paint.Yellow("WARNING ");
    case Severity::kInfo:
      return paint.Cyan("INFO    ");
  }
  return "INFO    ";
}

std::string Where(const Finding& f) {
  std::vector<std::string> parts;
  if (!f.ranks.empty()) {
    std::vector<std::string> ranks;
    for (size_t i = 0; i < f.ranks.size() && i < 8; ++i)
      ranks.push_back(std::to_string(f.ranks[i]));
    if (f.ranks.size() > 8) ranks.push_back("...");
    parts.push_back((f.ranks.size() == 1 ? "rank " : "ranks ") + Join(ranks, ","));
  }
  if (!f.nodes.empty()) {
    std::vector<std::string> nodes;
    for (size_t i = 0; i < f.nodes.size() && i < 4; ++i) nodes.push_back(Clean(f.nodes[i]));
    if (f.nodes.size() > 4) nodes.push_back("...");
    parts.push_back("on " + Join(nodes, ","));
  }
  return Join(parts, " ");
}

std::string FindingsSection(const Session& session, const std::vector<Finding>& findings,
                            const CollectiveOverview& overview, const Painter& paint) {
  if (findings.empty()) {
    return paint.Green("No problems found") + ": " + DescribeWhatWasChecked(session, overview) +
           ".\n";
  }
  std::string out =
      paint.Bold("Findings") + " (" + std::to_string(findings.size()) + ", worst first)\n";
  std::vector<const Finding*> ordered = FindingsWorstFirst(findings);
  for (size_t i = 0; i < ordered.size() && i < kMaxFindings; ++i) {
    const Finding& f = *ordered[i];
    char confidence[32];
    std::snprintf(confidence, sizeof(confidence), "confidence %.2f", f.confidence);
    out += "  " + SeverityTag(f.severity, paint) + " " + Clean(f.kind);
    std::string where = Where(f);
    if (!where.empty()) out += "  " + where;
    // Cost 0: what it costs the job was not measured (a topology fact, an outside sample).
    out += paint.Dim(std::string("  ") + confidence + "  cost " +
                     (f.cost_ns > 0 ? FormatDuration(f.cost_ns) : std::string("not measured"))) +
           "\n";
    out += "    " + Clean(f.summary) + "\n";
    // As much evidence as fits on one line; the rest is in report.json and report.html.
    std::string evidence;
    auto entries = ReadableEvidence(f.evidence, 0);
    size_t shown = 0;
    for (; shown < entries.size(); ++shown) {
      std::string entry = Clean(entries[shown].first) + "=" + Clean(entries[shown].second);
      if (shown > 0 && evidence.size() + entry.size() + 2 > kEvidenceWidth) break;
      evidence += (shown > 0 ? ", " : "") + entry;
    }
    if (shown < entries.size()) evidence += " (+" + std::to_string(entries.size() - shown) + ")";
    if (!evidence.empty()) out += paint.Dim("    evidence: " + evidence) + "\n";
    if (!f.next_steps.empty()) {
      out += "    next: " + paint.Bold(Clean(f.next_steps.front().command)) + "\n";
    }
  }
  if (ordered.size() > kMaxFindings) {
    out += paint.Dim("  ... " + std::to_string(ordered.size() - kMaxFindings) +
                     " more findings in report.html") +
           "\n";
  }
  return out;
}

// Ranks seen from outside only: their processes' CPU and I/O over the window, a row per rank (the
// first kMaxClockRows), in place of the clock table (no call timings to align).
std::string ProcessSection(const Session& session, const Painter& paint) {
  const double seconds = static_cast<double>(session.SampledWindow()) / kNsPerSec;
  std::string out = paint.Bold("Processes") +
                    paint.Dim(" (sampled from outside over " + FormatDouble("%.1f", seconds) +
                              " s; CPU: busy share of one core)") +
                    "\n";
  out += paint.Dim("  " + Pad("rank", 6) + Pad("node", 14) + Pad("CPU", 8) + Pad("read", 12) +
                   Pad("from storage", 14) + "blocked on I/O") +
         "\n";
  size_t shown = 0;
  for (const RankData& r : session.ranks) {
    if (!r.proc) continue;
    if (++shown > kMaxClockRows) break;
    const ProcessTreeStats& p = *r.proc;
    const double cpu = static_cast<double>(p.cpu_user_ns + p.cpu_system_ns) / kNsPerSec;
    out += "  " + Pad(std::to_string(r.id.rank), 6) + Pad(Clean(r.id.node).substr(0, 12), 14) +
           Pad(FormatDouble("%.0f%%", seconds > 0 ? 100 * cpu / seconds : 0), 8) +
           Pad(FormatBytes(static_cast<Bytes>(p.rchar)), 12) +
           Pad(p.io_unreadable ? "?" : FormatBytes(static_cast<Bytes>(p.read_bytes)), 14) +
           FormatDuration(p.blkio_delay_ns) + "\n";
  }
  if (shown > kMaxClockRows) {
    out += paint.Dim("  ... more ranks in report.json") + "\n";
  }
  return out;
}

std::string ClockSection(const Session& session, const Painter& paint) {
  if (session.ranks.empty()) return "";
  // With many ranks, show the ones whose clocks are least trustworthy: unfitted first, then
  // the largest uncertainty, since those are what limit cross-rank comparisons.
  std::vector<const RankData*> rows;
  for (const RankData& r : session.ranks) rows.push_back(&r);
  size_t hidden = 0;
  DurationNs hidden_max_uncertainty = 0;
  if (rows.size() > kMaxClockRows) {
    std::stable_sort(rows.begin(), rows.end(), [](const RankData* a, const RankData* b) {
      if (a->clock_fitted != b->clock_fitted) return !a->clock_fitted;
      return a->clock.uncertainty_ns > b->clock.uncertainty_ns;
    });
    hidden = rows.size() - kMaxClockRows;
    for (size_t i = kMaxClockRows; i < rows.size(); ++i) {
      hidden_max_uncertainty = std::max(hidden_max_uncertainty, rows[i]->clock.uncertainty_ns);
    }
    rows.resize(kMaxClockRows);
    std::sort(rows.begin(), rows.end(),
              [](const RankData* a, const RankData* b) { return a->id.rank < b->id.rank; });
  }
  size_t node_width = 4;
  for (const RankData* r : rows) node_width = std::max(node_width, Clean(r->id.node).size());
  node_width = std::min<size_t>(node_width, 24);

  std::string out = paint.Bold("Clocks") + paint.Dim(" (coordinator time = local + offset)") + "\n";
  out += paint.Dim("  " + Pad("rank", 6) + Pad("node", node_width + 2) + Pad("offset", 17) +
                   Pad("uncertainty", 14) + "drift") +
         "\n";
  for (const RankData* r : rows) {
    char drift[32];
    std::snprintf(drift, sizeof(drift), "%+.2f ppm", r->clock.drift_ppm);
    std::string node = Clean(r->id.node);
    if (node.size() > node_width) node = node.substr(0, node_width);
    out += "  " + Pad(std::to_string(r->id.rank), 6) + Pad(node, node_width + 2) +
           Pad(FormatClockOffset(r->clock.offset_ns), 17) +
           Pad("±" + FormatDuration(r->clock.uncertainty_ns), 15);  // '±' is two bytes
    out += r->clock_fitted ? std::string(drift) : paint.Yellow("not fitted");
    out += "\n";
  }
  if (hidden > 0) {
    out += paint.Dim("  ... " + std::to_string(hidden) + " more ranks, uncertainty at most ±" +
                     FormatDuration(hidden_max_uncertainty) + " (see report.html)") +
           "\n";
  }
  return out;
}

std::string NoticeSection(const Session& session, const Painter& paint) {
  std::vector<RankNotice> notices = CollectNotices(session);
  if (notices.empty()) return "";
  // Severe notices (crashes, lost data) first: they change how far the findings can be trusted.
  std::stable_sort(notices.begin(), notices.end(),
                   [](const RankNotice& a, const RankNotice& b) { return a.severe > b.severe; });
  std::string out = paint.Bold("Notices") + "\n";
  for (size_t i = 0; i < notices.size() && i < kMaxNotices; ++i) {
    const RankNotice& n = notices[i];
    std::string text = (n.who.empty() ? "" : Clean(n.who) + ": ") + Clean(n.text);
    out += n.severe ? "  " + paint.Red("!") + " " + text + "\n" : "  - " + text + "\n";
  }
  if (notices.size() > kMaxNotices) {
    out += paint.Dim("  ... " + std::to_string(notices.size() - kMaxNotices) +
                     " more notices in report.json") +
           "\n";
  }
  return out;
}

// NCCL communicators (from the ranks' logs) and each node's topology, a line each.
std::string GpuSection(const Session& session, const GpuReport& gpu_report, const Painter& paint) {
  std::string out;
  const nlohmann::json& nccl = gpu_report.nccl;
  if (!nccl.is_null()) {
    out += paint.Bold("NCCL") + paint.Dim(" " + nccl["version"].get<std::string>()) + "\n";
    for (const auto& c : nccl["communicators"]) {
      std::string transports;
      for (const auto& [kind, n] : c["transports"].items()) {
        transports += (transports.empty() ? "" : ", ") + kind;
      }
      std::string line = "  comm " + Clean(c["comm_id"].get<std::string>()) + "  " +
                         std::to_string(c["nranks"].get<int>()) + " ranks";
      if (c["nnodes"].is_number())
        line += " on " + std::to_string(c["nnodes"].get<int>()) + " node(s)";
      if (c["channels"].is_number())
        line += ", " + std::to_string(c["channels"].get<int>()) + " channels";
      line += ", " + (transports.empty() ? std::string("no transports logged") : transports);
      out += line + "\n";
      for (const auto& shape : c["shapes"]) {
        std::string tuning = shape["algo"].is_string() ? shape["algo"].get<std::string>() + "/" +
                                                             shape["proto"].get<std::string>()
                                                       : "untuned";
        std::string busbw;
        if (shape["busbw_gbps"].is_number()) {
          busbw = FormatDouble("  busbw %.1f GB/s", shape["busbw_gbps"].get<double>());
        }
        if (shape["stream_busbw_gbps"].is_number()) {
          // Back-to-back calls: the GPU gap between kernels counts (nccl-tests' loop figure).
          busbw +=
              FormatDouble(", %.1f GB/s call to call", shape["stream_busbw_gbps"].get<double>());
          busbw += FormatDouble(" (%.1f us between kernels)", shape["gap_us"].get<double>());
        }
        out += paint.Dim("    " + std::to_string(shape["calls"].get<int>()) + " x " +
                         shape["op"].get<std::string>() + " " +
                         FormatBytes(shape["bytes"].get<int64_t>()) + " " +
                         shape["datatype"].get<std::string>() + "  " + tuning + busbw) +
               "\n";
      }
    }
  }
  // Launch latency over the ranks with CUPTI launch records: the median rank's median, and the
  // rank whose GPU waits most on its CPU (smallest latency).
  std::vector<std::pair<int64_t, int>> latency;  // (median ns, rank)
  std::vector<int64_t> queue;
  int64_t kernels = 0;
  for (const auto& [rank, gpu] : gpu_report.by_rank) {
    kernels += gpu["kernels"].get<int64_t>();
    if (gpu["launch_latency"].is_object()) {
      latency.emplace_back(gpu["launch_latency"]["median_ns"].get<int64_t>(), rank);
    }
    if (gpu["nccl_queue"].is_object()) queue.push_back(gpu["nccl_queue"]["median_ns"]);
  }
  if (!latency.empty()) {
    std::sort(latency.begin(), latency.end());
    std::string line = "  kernels " + std::to_string(kernels) + " on " +
                       std::to_string(latency.size()) +
                       " rank(s); launch latency (kernel start - launch call) median " +
                       FormatDuration(latency[latency.size() / 2].first);
    if (latency.size() > 1) {
      line += ", lowest rank " + std::to_string(latency.front().second) + " " +
              FormatDuration(latency.front().first);
    }
    if (!queue.empty()) {
      std::sort(queue.begin(), queue.end());
      line += "; NCCL kernels queued " + FormatDuration(queue[queue.size() / 2]) +
              " after their launch";
    }
    out += paint.Dim(line) + "\n";
  }
  for (const auto& entry : TopologyReportJson(session)) {
    std::string node = Clean(entry["node"].get<std::string>());
    if (entry.contains("error")) {
      out += "  topology of " + node + ": " +
             paint.Yellow(Clean(entry["error"].get<std::string>())) + "\n";
      continue;
    }
    const auto& t = entry["topology"];
    std::string line = "  node " + node + ": " + std::to_string(t["gpus"].size()) + " GPU(s), ";
    line += t["all_gpus_nvlink_connected"].get<bool>() ? "all pairs on NVLink"
                                                       : "some GPU pairs share only PCIe";
    line += ", " + std::to_string(t["nics"].size()) + " NIC(s)";
    if (!t["slow_pcie_links"].empty()) {
      line += ", " + paint.Yellow(std::to_string(t["slow_pcie_links"].size()) +
                                  " PCIe link(s) below their peers");
    }
    out += line + "\n";
  }
  // A node without a driver is not news on a CPU job: NVML errors only when the job used GPUs.
  const bool used_gpus = std::any_of(session.ranks.begin(), session.ranks.end(), [](const auto& r) {
    return !r.gpu.empty() || r.nccl.has_value() || r.nvml.has_value();
  });
  for (const auto& entry : NvmlReportJson(session)) {
    const std::string node = Clean(entry["node"].get<std::string>());
    if (entry.contains("error")) {
      if (!used_gpus) continue;
      out += "  NVML on " + node + ": " + paint.Yellow(Clean(entry["error"].get<std::string>())) +
             "\n";
      continue;
    }
    for (const auto& g : entry["gpus"]) {
      std::string line = "  node " + node + " GPU " + std::to_string(g["index"].get<int>()) + " " +
                         Clean(g["name"].get<std::string>()) + " " +
                         Clean(g["bus_id"].get<std::string>()) + ": PCIe";
      auto link = [](int gen, int width) {
        return (gen < 0 ? std::string("gen ?") : "gen " + std::to_string(gen)) + " x" +
               (width < 0 ? std::string("?") : std::to_string(width));
      };
      const std::string now =
          link(g["pcie_gen_current"].get<int>(), g["pcie_width_current"].get<int>());
      const std::string max = link(g["pcie_gen_max"].get<int>(), g["pcie_width_max"].get<int>());
      line +=
          " " + (g["pcie_degraded"].get<bool>() ? paint.Yellow(now + " (max " + max + ")") : now);
      const int up = g["nvlinks_up"].get<int>();
      const int total = g["nvlinks_total"].get<int>();
      if (total > 0) {
        const std::string nvlink =
            "NVLink " + std::to_string(up) + "/" + std::to_string(total) + " up";
        line += ", " + (up < total ? paint.Yellow(nvlink) : nvlink);
      }
      out += line + "\n";
    }
  }
  if (!out.empty() && out.find("NCCL") != 0) out = paint.Bold("GPU topology") + "\n" + out;
  return out;
}

}  // namespace

std::string BuildReportText(const Session& session, const std::vector<Finding>& findings,
                            bool color) {
  return BuildReportText(session, findings, BuildGpuReport(session),
                         SummarizeCollectives(MatchCollectives(session)), color);
}

std::string BuildReportText(const Session& session, const std::vector<Finding>& findings,
                            const GpuReport& gpu_report, const CollectiveOverview& collectives,
                            bool color) {
  Painter paint(color);
  std::string out = Header(session, paint);
  out += "\n" + FindingsSection(session, findings, collectives, paint);
  std::string gpu = GpuSection(session, gpu_report, paint);
  if (!gpu.empty()) out += "\n" + gpu;
  std::string clocks = session.SampledFromOutsideOnly() ? ProcessSection(session, paint)
                                                        : ClockSection(session, paint);
  if (!clocks.empty()) out += "\n" + clocks;
  std::string notices = NoticeSection(session, paint);
  if (!notices.empty()) out += "\n" + notices;
  return out;
}

}  // namespace rankscope
