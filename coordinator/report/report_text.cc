#include "coordinator/report/report_text.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "coordinator/analysis/kernel_reports.h"
#include "coordinator/collective_matcher.h"
#include "coordinator/report/collective_waits.h"
#include "coordinator/report/finding_evidence.h"
#include "coordinator/report/gpu_json.h"
#include "coordinator/report/report_format.h"

namespace rankscope {

namespace {

// What fits on one screen; the rest is in report.html / report.json. Each section has its own
// cap; then the whole report, final pointer line included, is held to kMaxLines (see
// FitToScreen).
constexpr size_t kMaxLines = 50;
constexpr size_t kMaxFindings = 6;
constexpr size_t kEvidenceWidth = 90;  // characters
constexpr size_t kMaxClockRows = 12;
constexpr size_t kMaxNotices = 10;
constexpr size_t kMaxShapeRows = 4;     // NCCL communicator x call shape lines
constexpr size_t kMaxAbnormalRows = 4;  // GPUs / nodes whose links run below their best
constexpr size_t kMaxGroupRows = 2;     // per kind: nodes with one topology, GPUs with one link,
                                        // topology dumps or NVML that failed alike
// What the clock, GPU and notice sections keep (rows) before a more important one is cut.
constexpr size_t kCompactRows = 2;

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

// A section rendered at some size: its text, and whether anything was left out of it.
struct Rendered {
  std::string text;
  bool cut = false;
};

size_t CountLines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// "1 call shape", "3 call shapes".
std::string Plural(size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// "node n1", "nodes n1, n2, n3", "8 nodes (n1, n2, ...)"; the names are already cleaned.
std::string NodeList(const std::vector<std::string>& nodes) {
  if (nodes.size() == 1) return "node " + nodes[0];
  if (nodes.size() <= 3) return "nodes " + Join(nodes, ", ");
  return std::to_string(nodes.size()) + " nodes (" + nodes[0] + ", " + nodes[1] + ", ...)";
}

// The first `shown` findings worst first (at most kMaxFindings), each with its key evidence and
// first next command.
Rendered FindingsSection(const Session& session, const RecordFacts& facts,
                         const std::vector<Finding>& findings, const CollectiveOverview& overview,
                         const Painter& paint, size_t shown) {
  if (findings.empty() && session.partial) {
    // Not a clean bill: what is missing may hold the problem (a rank that died, lost records).
    return {paint.Yellow("No problems found in the data kept") +
                ", but the session is PARTIAL (see above): " +
                DescribeWhatWasChecked(session, facts, overview) + ".\n",
            false};
  }
  if (findings.empty()) {
    return {paint.Green("No problems found") + ": " +
                DescribeWhatWasChecked(session, facts, overview) + ".\n",
            false};
  }
  shown = std::min(shown, kMaxFindings);
  std::string out =
      paint.Bold("Findings") + " (" + std::to_string(findings.size()) + ", worst first)\n";
  std::vector<const Finding*> ordered = FindingsWorstFirst(findings);
  for (size_t i = 0; i < ordered.size() && i < shown; ++i) {
    const Finding& f = *ordered[i];
    char confidence[32];
    std::snprintf(confidence, sizeof(confidence), "confidence %.2f", f.confidence);
    out += "  " + SeverityTag(f.severity, paint) + " " + Clean(std::string(f.KindName()));
    std::string where = Where(f);
    if (!where.empty()) out += "  " + where;
    // Cost 0: what it costs the job was not measured (a topology fact, an outside sample).
    out += paint.Dim(std::string("  ") + confidence + "  cost " +
                     (f.cost_ns > 0 ? FormatDuration(f.cost_ns) : std::string("not measured"))) +
           "\n";
    out += "    " + Clean(f.summary) + "\n";
    // As much evidence as fits on one line; the rest is in report.json and report.html.
    std::string evidence;
    auto entries = ReadableEvidence(EvidenceJson(f), 0);
    size_t entry_count = 0;
    for (; entry_count < entries.size(); ++entry_count) {
      std::string entry =
          Clean(entries[entry_count].first) + "=" + Clean(entries[entry_count].second);
      if (entry_count > 0 && evidence.size() + entry.size() + 2 > kEvidenceWidth) break;
      evidence += (entry_count > 0 ? ", " : "") + entry;
    }
    if (entry_count < entries.size()) {
      evidence += " (+" + std::to_string(entries.size() - entry_count) + ")";
    }
    if (!evidence.empty()) out += paint.Dim("    evidence: " + evidence) + "\n";
    if (!f.kernel_verdicts.empty()) {
      out += "    kernel (ncu): " + Clean(DescribeVerdict(f.kernel_verdicts.front())) + "\n";
    }
    if (!f.next_steps.empty()) {
      out += "    next: " + paint.Bold(Clean(f.next_steps.front().command)) + "\n";
    }
  }
  const bool cut = ordered.size() > shown;
  if (cut) {
    out += paint.Dim("  ... " + std::to_string(ordered.size() - shown) +
                     " more findings in report.html") +
           "\n";
  }
  return {out, cut};
}

// Ranks seen from outside only: their processes' CPU and I/O over the window, a row per rank (the
// first `max_rows`, at most kMaxClockRows), in place of the clock table (no call timings to
// align).
Rendered ProcessSection(const Session& session, const Painter& paint, size_t max_rows) {
  if (max_rows == 0) return {"", true};
  max_rows = std::min(max_rows, kMaxClockRows);
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
    if (++shown > max_rows) break;
    const ProcessTreeStats& p = *r.proc;
    const double cpu = static_cast<double>(p.cpu_user_ns + p.cpu_system_ns) / kNsPerSec;
    out += "  " + Pad(std::to_string(r.id.rank), 6) + Pad(Clean(r.id.node).substr(0, 12), 14) +
           Pad(FormatDouble("%.0f%%", seconds > 0 ? 100 * cpu / seconds : 0), 8) +
           Pad(FormatBytes(static_cast<Bytes>(p.rchar)), 12) +
           Pad(p.io_unreadable ? "?" : FormatBytes(static_cast<Bytes>(p.read_bytes)), 14) +
           FormatDuration(p.blkio_delay_ns) + "\n";
  }
  const bool cut = shown > max_rows;
  if (cut) out += paint.Dim("  ... more ranks in report.json") + "\n";
  return {out, cut};
}

// At most `max_rows` ranks (and kMaxClockRows); with more ranks than that, the least
// trustworthy clocks.
Rendered ClockSection(const Session& session, const Painter& paint, size_t max_rows) {
  if (session.ranks.empty()) return {};
  if (max_rows == 0) return {"", true};
  max_rows = std::min(max_rows, kMaxClockRows);
  // With many ranks, show the ones whose clocks are least trustworthy: unfitted first, then
  // the largest uncertainty, since those are what limit cross-rank comparisons.
  std::vector<const RankData*> rows;
  for (const RankData& r : session.ranks) rows.push_back(&r);
  size_t hidden = 0;
  DurationNs hidden_max_uncertainty = 0;
  if (rows.size() > max_rows) {
    std::stable_sort(rows.begin(), rows.end(), [](const RankData* a, const RankData* b) {
      if (a->clock_fitted != b->clock_fitted) return !a->clock_fitted;
      return a->clock.uncertainty_ns > b->clock.uncertainty_ns;
    });
    hidden = rows.size() - max_rows;
    for (size_t i = max_rows; i < rows.size(); ++i) {
      hidden_max_uncertainty = std::max(hidden_max_uncertainty, rows[i]->clock.uncertainty_ns);
    }
    rows.resize(max_rows);
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
  return {out, hidden > 0};
}

// `notices` severe first (CollectNotices' order otherwise), at most `max_rows` of them (and
// kMaxNotices).
Rendered NoticeSection(const std::vector<RankNotice>& notices, const Painter& paint,
                       size_t max_rows) {
  if (notices.empty()) return {};
  if (max_rows == 0) return {"", true};
  max_rows = std::min(max_rows, kMaxNotices);
  std::string out = paint.Bold("Notices") + "\n";
  for (size_t i = 0; i < notices.size() && i < max_rows; ++i) {
    const RankNotice& n = notices[i];
    std::string text = (n.who.empty() ? "" : Clean(n.who) + ": ") + Clean(n.text);
    out += n.severe ? "  " + paint.Red("!") + " " + text + "\n" : "  - " + text + "\n";
  }
  const bool cut = notices.size() > max_rows;
  if (cut) {
    out += paint.Dim("  ... " + std::to_string(notices.size() - max_rows) +
                     " more notices in report.json") +
           "\n";
  }
  return {out, cut};
}

// The reports of the tools ranks ran under: per rank where it is and, for ncu, a line per
// kernel (its verdict), or why there is none; at most `max_rows` lines below the title.
Rendered ToolSection(const std::vector<RankKernelReport>& reports, const Painter& paint,
                     size_t max_rows) {
  if (reports.empty()) return {};
  if (max_rows == 0) return {"", true};
  std::vector<std::string> lines;
  for (const RankKernelReport& r : reports) {
    const std::string where = r.host.empty() ? r.path : r.host + ":" + r.path;
    lines.push_back(DescribeToolRank(r) + ": " + where);
    if (!r.error.empty()) lines.push_back("  " + paint.Yellow("no report") + ": " + r.error);
    for (const KernelAnalysis& k : r.kernels) {
      const KernelVerdict v = VerdictOf(k);
      lines.push_back("  " + v.kernel + ": " + v.bound + " (" + v.why + ")");
    }
    if (!r.kernels.empty()) {
      lines.push_back(
          paint.Dim("  stalls, occupancy, the roofline: report.html, or rankscope "
                    "inspect ncu " +
                    r.path + " --html rank" + std::to_string(r.rank) + "_kernel.html"));
    }
  }
  std::string out = paint.Bold("Nsight tools") + "\n";
  for (size_t i = 0; i < lines.size() && i < max_rows; ++i) out += "  " + Clean(lines[i]) + "\n";
  const bool cut = lines.size() > max_rows;
  if (cut) out += paint.Dim("  ... the rest in report.json (tool_reports)") + "\n";
  return {out, cut};
}

// What the live checks printed while the job ran: at most `max_rows` lines, stalls first.
Rendered LiveSection(const Session& session, const Painter& paint, size_t max_rows) {
  std::vector<std::string> lines;
  for (const StallFinding& f : session.live_stalls)
    lines.push_back("stalled: " + StallFindingLine(f));
  for (const LiveFinding& f : session.live_findings) lines.push_back(LiveFindingLine(f));
  if (lines.empty()) return {};
  if (max_rows == 0) return {"", true};
  std::string out =
      paint.Bold("Seen live") +
      paint.Dim(" (while the job ran, over seconds; the findings weigh the whole run)") + "\n";
  for (size_t i = 0; i < lines.size() && i < max_rows; ++i) out += "  - " + lines[i] + "\n";
  const bool cut = lines.size() > max_rows;
  if (cut) {
    out += paint.Dim("  ... " + std::to_string(lines.size() - max_rows) + " more in report.json") +
           "\n";
  }
  return {out, cut};
}

// One NCCL communicator x call shape line, and how much data its calls moved (what ranks it:
// the shapes that moved the most are where the job's communication time goes).
struct ShapeRow {
  size_t comm = 0;   // index into GpuLines::comms
  std::string text;  // "" for a communicator that logged no calls
  double traffic = 0;
};

// The GPU section's lines, computed once; GpuSection picks how many of each to show.
struct GpuLines {
  std::string nccl_title;          // "" when no rank reported NCCL
  std::vector<std::string> comms;  // a line per communicator
  std::vector<ShapeRow> shapes;    // most traffic first
  std::string kernels;             // launch latency over the ranks; "" without CUPTI launches
  // Nodes with the same topology, GPUs of one model with the same links: a line per group.
  std::vector<std::string> groups;
  size_t hidden_groups = 0;
  // Worst first: GPUs whose PCIe link trained down or with NVLinks down, then nodes with PCIe
  // links below their peers.
  std::vector<std::string> abnormal;
  size_t abnormal_gpus = 0;  // how many of `abnormal` are GPUs (they come first)
  std::vector<std::string> errors;
  size_t hidden_errors = 0;

  bool empty() const {
    return nccl_title.empty() && kernels.empty() && groups.empty() && abnormal.empty() &&
           errors.empty();
  }
  // The detail rows (shapes and abnormal GPUs/nodes) GpuSection can show at most.
  size_t full_size() const {
    return std::max<size_t>(
        1, std::min(shapes.size(), kMaxShapeRows) + std::min(abnormal.size(), kMaxAbnormalRows));
  }
};

// Appends a line per group of `items` (node or GPU names keyed by their description), the
// largest groups first, at most kMaxGroupRows; counts the rest in `hidden`.
void AddGroups(const std::vector<std::pair<std::string, std::string>>& items,
               const std::function<std::string(const std::string& description,
                                               const std::vector<std::string>& members)>& line,
               std::vector<std::string>* out, size_t* hidden) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // in first-seen order
  for (const auto& item : items) {
    const std::string& description = item.first;
    const std::string& member = item.second;
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == description; });
    if (it == groups.end()) {
      groups.push_back({description, {member}});
    } else {
      it->second.push_back(member);
    }
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  for (size_t i = 0; i < groups.size(); ++i) {
    if (i < kMaxGroupRows) {
      out->push_back(line(groups[i].first, groups[i].second));
    } else {
      ++*hidden;
    }
  }
}

// The same failure on several nodes is one line naming them, at most kMaxGroupRows per kind.
void AddErrors(const std::vector<std::pair<std::string, std::string>>& node_errors,
               const std::string& what, const Painter& paint, GpuLines* out) {
  AddGroups(
      node_errors,
      [&](const std::string& error, const std::vector<std::string>& nodes) {
        return "  " + what + " on " + NodeList(nodes) + ": " + paint.Yellow(error) + "\n";
      },
      &out->errors, &out->hidden_errors);
}

std::string PcieLink(int gen, int width) {
  return (gen < 0 ? std::string("gen ?") : "gen " + std::to_string(gen)) + " x" +
         (width < 0 ? std::string("?") : std::to_string(width));
}

// How much of its best a GPU's links lost, 0 (none) to 1 (all): the worse of its NVLinks down
// and its PCIe bandwidth (a generation about doubles the per-lane rate).
double LinkLoss(const nlohmann::json& g) {
  double loss = 0;
  const int up = g["nvlinks_up"].get<int>();
  const int total = g["nvlinks_total"].get<int>();
  if (total > 0 && up < total) loss = static_cast<double>(total - up) / total;
  const int gen = g["pcie_gen_current"].get<int>();
  const int gen_max = g["pcie_gen_max"].get<int>();
  const int width = g["pcie_width_current"].get<int>();
  const int width_max = g["pcie_width_max"].get<int>();
  if (g["pcie_degraded"].get<bool>() && gen > 0 && gen_max > 0 && width > 0 && width_max > 0) {
    const double kept = static_cast<double>(width) / width_max / (1 << std::max(0, gen_max - gen));
    loss = std::max(loss, 1 - kept);
  }
  return loss;
}

void AddNccl(const nlohmann::json& nccl, const Painter& paint, GpuLines* out) {
  if (nccl.is_null()) return;
  out->nccl_title =
      paint.Bold("NCCL") + paint.Dim(" " + Clean(nccl.value("version", std::string()))) + "\n";
  for (const auto& c : nccl["communicators"]) {
    std::string transports;
    for (const auto& [kind, n] : c["transports"].items()) {
      transports += (transports.empty() ? "" : ", ") + Clean(kind);
    }
    std::string line = "  comm " + Clean(c["comm_id"].get<std::string>()) + "  " +
                       std::to_string(c["nranks"].get<int>()) + " ranks";
    if (c["nnodes"].is_number())
      line += " on " + std::to_string(c["nnodes"].get<int>()) + " node(s)";
    if (c["channels"].is_number()) {
      line += ", " + std::to_string(c["channels"].get<int>()) + " channels";
    }
    line += ", " + (transports.empty() ? std::string("no transports logged") : transports);
    const size_t comm = out->comms.size();
    out->comms.push_back(line + "\n");
    if (c["shapes"].empty()) out->shapes.push_back({comm, "", 0});
    for (const auto& shape : c["shapes"]) {
      // Strings from NCCL's log: cleaned, and a missing protocol is no crash.
      std::string tuning = shape["algo"].is_string()
                               ? Clean(shape["algo"].get<std::string>()) + "/" +
                                     (shape.contains("proto") && shape["proto"].is_string()
                                          ? Clean(shape["proto"].get<std::string>())
                                          : std::string("?"))
                               : "untuned";
      std::string busbw;
      if (shape["busbw_gbps"].is_number()) {
        busbw = FormatDouble("  busbw %.1f GB/s", shape["busbw_gbps"].get<double>());
      }
      if (shape["stream_busbw_gbps"].is_number()) {
        // Back-to-back calls: the GPU gap between kernels counts (nccl-tests' loop figure).
        busbw += FormatDouble(", %.1f GB/s call to call", shape["stream_busbw_gbps"].get<double>());
        busbw += FormatDouble(" (%.1f us between kernels)", shape["gap_us"].get<double>());
      }
      const int calls = shape["calls"].get<int>();
      const int64_t bytes = shape["bytes"].get<int64_t>();
      out->shapes.push_back(
          {comm,
           paint.Dim("    " + std::to_string(calls) + " x " +
                     Clean(shape["op"].get<std::string>()) + " " + FormatBytes(bytes) + " " +
                     Clean(shape["datatype"].get<std::string>()) + "  " + tuning + busbw) +
               "\n",
           static_cast<double>(calls) * static_cast<double>(bytes)});
    }
  }
  std::stable_sort(out->shapes.begin(), out->shapes.end(),
                   [](const ShapeRow& a, const ShapeRow& b) { return a.traffic > b.traffic; });
}

// Launch latency over the ranks with CUPTI launch records: the median rank's median, and the
// rank whose GPU waits most on its CPU (smallest latency).
void AddKernels(const GpuReport& gpu_report, const Painter& paint, GpuLines* out) {
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
  if (latency.empty()) return;
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
    line +=
        "; NCCL kernels queued " + FormatDuration(queue[queue.size() / 2]) + " after their launch";
  }
  out->kernels = paint.Dim(line) + "\n";
}

// Each node's topology dump (the first rank's of the node): a line per group of nodes that look
// the same; nodes with PCIe links below their peers one by one.
void AddTopology(const Session& session, const Painter& paint, GpuLines* out,
                 std::vector<std::string>* slow_nodes) {
  std::vector<std::pair<std::string, std::string>> same;    // (description, node)
  std::vector<std::pair<std::string, std::string>> errors;  // (error, node)
  std::vector<std::string> seen;
  for (const auto& entry : TopologyReportJson(session)) {
    std::string node = Clean(entry["node"].get<std::string>());
    if (std::find(seen.begin(), seen.end(), node) != seen.end()) continue;
    seen.push_back(node);
    if (entry.contains("error")) {
      errors.emplace_back(Clean(entry["error"].get<std::string>()), node);
      continue;
    }
    const auto& t = entry["topology"];
    std::string description = std::to_string(t["gpus"].size()) + " GPU(s), ";
    description += t["all_gpus_nvlink_connected"].get<bool>() ? "all pairs on NVLink"
                                                              : "some GPU pairs share only PCIe";
    description += ", " + std::to_string(t["nics"].size()) + " NIC(s)";
    if (!t["slow_pcie_links"].empty()) {
      slow_nodes->push_back("  node " + node + ": " + description + ", " +
                            paint.Yellow(std::to_string(t["slow_pcie_links"].size()) +
                                         " PCIe link(s) below their peers") +
                            "\n");
    } else {
      same.emplace_back(description, node);
    }
  }
  AddGroups(
      same,
      [](const std::string& description, const std::vector<std::string>& nodes) {
        return "  " + NodeList(nodes) + ": " + description + "\n";
      },
      &out->groups, &out->hidden_groups);
  AddErrors(errors, "topology", paint, out);
}

// NVML of each node (the first rank's of the node): a line per group of GPUs of one model whose
// links all run the same, the GPUs whose links run below their best one by one, worst first.
void AddNvml(const Session& session, const RecordFacts& facts, const Painter& paint, GpuLines* out,
             std::vector<std::string>* abnormal_gpus) {
  // A node without a driver is not news on a CPU job: NVML errors only when the job used GPUs.
  bool used_gpus = false;
  for (size_t r = 0; r < session.ranks.size(); ++r) {
    used_gpus |= facts.ranks[r].gpu > 0 || session.ranks[r].nccl.has_value() ||
                 session.ranks[r].nvml.has_value();
  }
  // (description, node) per healthy GPU: grouped by model and link, counted per node.
  std::vector<std::pair<std::string, std::string>> healthy;
  std::vector<std::pair<double, std::string>> abnormal;     // (link loss, line)
  std::vector<std::pair<std::string, std::string>> errors;  // (error, node)
  std::vector<std::string> seen;
  for (const auto& entry : NvmlReportJson(session)) {
    const std::string node = Clean(entry["node"].get<std::string>());
    if (std::find(seen.begin(), seen.end(), node) != seen.end()) continue;
    seen.push_back(node);
    if (entry.contains("error")) {
      if (used_gpus) errors.emplace_back(Clean(entry["error"].get<std::string>()), node);
      continue;
    }
    for (const auto& g : entry["gpus"]) {
      const std::string name = Clean(g["name"].get<std::string>());
      const std::string now =
          PcieLink(g["pcie_gen_current"].get<int>(), g["pcie_width_current"].get<int>());
      const bool degraded = g["pcie_degraded"].get<bool>();
      const int up = g["nvlinks_up"].get<int>();
      const int total = g["nvlinks_total"].get<int>();
      const std::string nvlink =
          total > 0 ? "NVLink " + std::to_string(up) + "/" + std::to_string(total) + " up" : "";
      if (!degraded && up >= total) {
        healthy.emplace_back(name + "\n" + now + (nvlink.empty() ? "" : ", " + nvlink), node);
        continue;
      }
      std::string line = "  node " + node + " GPU " + std::to_string(g["index"].get<int>()) + " " +
                         name + " " + Clean(g["bus_id"].get<std::string>()) + ": PCIe ";
      const std::string max =
          PcieLink(g["pcie_gen_max"].get<int>(), g["pcie_width_max"].get<int>());
      line += degraded ? paint.Yellow(now + " (max " + max + ")") : now;
      if (!nvlink.empty()) line += ", " + (up < total ? paint.Yellow(nvlink) : nvlink);
      abnormal.emplace_back(LinkLoss(g), line + "\n");
    }
  }
  // Group key "model\nlinks"; the line counts the GPUs and names their nodes once each.
  AddGroups(
      healthy,
      [](const std::string& key, const std::vector<std::string>& gpu_nodes) {
        std::vector<std::string> nodes;
        for (const std::string& n : gpu_nodes) {
          if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
        }
        const size_t split = key.find('\n');
        return "  " + std::to_string(gpu_nodes.size()) + " x " + key.substr(0, split) + " on " +
               NodeList(nodes) + ": PCIe " + key.substr(split + 1) + "\n";
      },
      &out->groups, &out->hidden_groups);
  std::stable_sort(abnormal.begin(), abnormal.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [loss, line] : abnormal) abnormal_gpus->push_back(std::move(line));
  AddErrors(errors, "NVML", paint, out);
}

GpuLines CollectGpuLines(const Session& session, const RecordFacts& facts,
                         const GpuReport& gpu_report, const Painter& paint) {
  GpuLines out;
  AddNccl(gpu_report.nccl, paint, &out);
  AddKernels(gpu_report, paint, &out);
  std::vector<std::string> slow_nodes;
  AddTopology(session, paint, &out, &slow_nodes);
  AddNvml(session, facts, paint, &out, &out.abnormal);
  out.abnormal_gpus = out.abnormal.size();
  out.abnormal.insert(out.abnormal.end(), slow_nodes.begin(), slow_nodes.end());
  return out;
}

// NCCL communicators (from the ranks' logs) by call shape, launch latency, and each node's
// topology and GPUs in groups; at most `detail_rows` shapes and abnormal GPUs/nodes together
// (half each when both have more), at most kMaxShapeRows and kMaxAbnormalRows of each.
Rendered GpuSection(const GpuLines& gpu, const Painter& paint, size_t detail_rows) {
  if (gpu.empty()) return {};
  if (detail_rows == 0) return {"", true};
  size_t abnormal = std::min({gpu.abnormal.size(), kMaxAbnormalRows, (detail_rows + 1) / 2});
  const size_t shapes = std::min({gpu.shapes.size(), kMaxShapeRows, detail_rows - abnormal});
  abnormal = std::min({gpu.abnormal.size(), kMaxAbnormalRows, detail_rows - shapes});
  bool cut = false;

  // Without NCCL logs the section is about the machines.
  std::string out = gpu.nccl_title.empty() ? paint.Bold("GPU topology") + "\n" : gpu.nccl_title;
  if (!gpu.nccl_title.empty()) {
    // The shown shapes under their communicators, the communicator of the largest first.
    std::vector<size_t> comm_order;
    for (size_t i = 0; i < shapes; ++i) {
      if (std::find(comm_order.begin(), comm_order.end(), gpu.shapes[i].comm) == comm_order.end()) {
        comm_order.push_back(gpu.shapes[i].comm);
      }
    }
    for (size_t comm : comm_order) {
      out += gpu.comms[comm];
      for (size_t i = 0; i < shapes; ++i) {
        if (gpu.shapes[i].comm == comm) out += gpu.shapes[i].text;
      }
    }
    size_t hidden_shapes = 0;
    for (size_t i = shapes; i < gpu.shapes.size(); ++i) {
      hidden_shapes += !gpu.shapes[i].text.empty();
    }
    const size_t hidden_comms = gpu.comms.size() - comm_order.size();
    if (hidden_shapes > 0 || hidden_comms > 0) {
      cut = true;
      std::vector<std::string> parts;
      if (hidden_shapes > 0) parts.push_back(Plural(hidden_shapes, "more call shape"));
      if (hidden_comms > 0) parts.push_back(Plural(hidden_comms, "more communicator"));
      out += paint.Dim("  ... " + Join(parts, ", ") + " in report.html / report.json") + "\n";
    }
  }
  out += gpu.kernels;
  for (const std::string& line : gpu.groups) out += line;
  for (size_t i = 0; i < abnormal; ++i) out += gpu.abnormal[i];
  for (const std::string& line : gpu.errors) out += line;
  std::vector<std::string> hidden;
  const size_t shown_gpus = std::min(abnormal, gpu.abnormal_gpus);
  if (gpu.abnormal_gpus > shown_gpus) {
    hidden.push_back(Plural(gpu.abnormal_gpus - shown_gpus, "more GPU") + " with degraded links");
  }
  const size_t hidden_nodes = gpu.abnormal.size() - std::max(abnormal, gpu.abnormal_gpus);
  if (hidden_nodes > 0) {
    hidden.push_back(Plural(hidden_nodes, "more node") + " with slow PCIe links");
  }
  if (gpu.hidden_groups > 0) hidden.push_back(Plural(gpu.hidden_groups, "more node/GPU group"));
  if (gpu.hidden_errors > 0) hidden.push_back(Plural(gpu.hidden_errors, "more error"));
  if (!hidden.empty()) {
    cut = true;
    out += paint.Dim("  ... " + Join(hidden, ", ") + " in report.html / report.json") + "\n";
  }
  return {out, cut};
}

// A section below the header, rendered at `size` rows (its own unit: findings, notices, ...).
struct Part {
  std::function<Rendered(size_t)> render;
  size_t full = 0;     // the size it asks for
  size_t compact = 0;  // kept until every less important section is down to its compact size
  size_t size = 0;
  Rendered rendered;
};

// Shrinks `parts` (given most important first) until the report takes at most `budget` lines,
// a blank line above each non-empty part: first every part down to its compact size, least
// important first, then down to nothing, least important first. Then hands back what is left a
// row at a time, most important first.
void FitToScreen(std::vector<Part*> parts, size_t budget) {
  auto lines = [&] {
    size_t n = 0;
    for (const Part* p : parts) {
      if (!p->rendered.text.empty()) n += 1 + CountLines(p->rendered.text);
    }
    return n;
  };
  auto resize = [](Part* p, size_t size) {
    p->size = size;
    p->rendered = p->render(size);
  };
  for (Part* p : parts) resize(p, p->full);
  for (bool to_compact : {true, false}) {
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
      Part* p = *it;
      const size_t floor = to_compact ? std::min(p->compact, p->full) : 0;
      while (lines() > budget && p->size > floor) resize(p, p->size - 1);
    }
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (Part* p : parts) {
      if (p->size >= p->full) continue;
      resize(p, p->size + 1);
      if (lines() <= budget) {
        grew = true;
      } else {
        resize(p, p->size - 1);
      }
    }
  }
}

}  // namespace

std::string BuildReportText(const Session& session, const std::vector<Finding>& findings,
                            bool color) {
  return BuildReportText(session, findings, BuildGpuReport(session),
                         SummarizeCollectives(MatchCollectives(session)), color);
}

std::string BuildReportText(const Session& session, const std::vector<Finding>& findings,
                            const GpuReport& gpu_report, const CollectiveOverview& collectives,
                            bool color, const RecordFacts* given_facts) {
  const RecordFacts gathered = given_facts ? RecordFacts{} : GatherRecordFacts(session);
  const RecordFacts& facts = given_facts ? *given_facts : gathered;
  Painter paint(color);
  const std::string header = Header(session, paint);
  const GpuLines gpu = CollectGpuLines(session, facts, gpu_report, paint);
  std::vector<RankNotice> notices = CollectNotices(session);
  // Severe notices (crashes, lost data) first: they change how far the findings can be trusted.
  std::stable_sort(notices.begin(), notices.end(),
                   [](const RankNotice& a, const RankNotice& b) { return a.severe > b.severe; });
  const bool outside_only = session.SampledFromOutsideOnly();

  Part findings_part{
      [&](size_t n) { return FindingsSection(session, facts, findings, collectives, paint, n); },
      kMaxFindings,
      kMaxFindings,
      0,
      {}};
  Part gpu_part{
      [&](size_t n) { return GpuSection(gpu, paint, n); }, gpu.full_size(), kCompactRows, 0, {}};
  Part clocks_part{[&](size_t n) {
                     return outside_only ? ProcessSection(session, paint, n)
                                         : ClockSection(session, paint, n);
                   },
                   kMaxClockRows,
                   kCompactRows,
                   0,
                   {}};
  const std::vector<RankKernelReport> tool_reports = SessionKernelReports(session);
  size_t tool_lines = 0;
  for (const RankKernelReport& r : tool_reports) {
    tool_lines += 1 + (r.error.empty() ? 0 : 1) + r.kernels.size() + (r.kernels.empty() ? 0 : 1);
  }
  Part tools_part{[&](size_t n) { return ToolSection(tool_reports, paint, n); },
                  tool_lines,
                  std::min<size_t>(tool_lines, 2),
                  0,
                  {}};
  Part notices_part{
      [&](size_t n) { return NoticeSection(notices, paint, n); }, kMaxNotices, kCompactRows, 0, {}};
  const size_t live_lines = session.live_stalls.size() + session.live_findings.size();
  Part live_part{[&](size_t n) { return LiveSection(session, paint, n); },
                 live_lines,
                 std::min<size_t>(live_lines, 2),
                 0,
                 {}};
  // What is cut first comes last: the clock table, then GPU details, then notices, then what was
  // seen live; findings only once everything else is gone. One line stays free for the pointer to
  // report.html.
  const size_t header_lines = CountLines(header);
  FitToScreen({&findings_part, &tools_part, &live_part, &notices_part, &gpu_part, &clocks_part},
              kMaxLines > header_lines + 1 ? kMaxLines - header_lines - 1 : 0);

  std::string out = header;
  bool cut = false;
  for (const Part* p :
       {&findings_part, &tools_part, &live_part, &gpu_part, &clocks_part, &notices_part}) {
    if (!p->rendered.text.empty()) out += "\n" + p->rendered.text;
    cut |= p->rendered.cut;
  }
  if (cut) {
    out += paint.Dim("Shortened to one screen: more in report.html, every figure in report.json") +
           "\n";
  }
  return out;
}

}  // namespace rankscope
