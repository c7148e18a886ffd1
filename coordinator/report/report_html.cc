#include "coordinator/report/report_html.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <unordered_map>

#include "coordinator/analysis/kernel_reports.h"
#include "coordinator/node_topologies.h"
#include "coordinator/report/collective_waits.h"
#include "coordinator/report/finding_evidence.h"
#include "coordinator/report/gpu_json.h"
#include "coordinator/report/report_format.h"
#include "coordinator/report/report_json.h"
#include "core/format.h"
#include "core/records.h"
#include "core/version.h"
#include "model/ncu/ncu_html.h"
#include "model/topology/pcie_link.h"
#include "model/topology/topology.h"

namespace rankscope {

namespace {

// The heatmap stays readable and the file small: beyond this many cells, consecutive
// instances are binned into one column showing their largest wait.
constexpr size_t kMaxHeatmapCells = 100'000;
constexpr size_t kMaxHeatmapColumns = 400;

constexpr char kStyle[] = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1200px;
 padding:0 16px;color:#1d2330;background:#fafbfc}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px;border-bottom:1px solid #dde1e6;
 padding-bottom:4px}
.meta{color:#555}.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;
 font-size:12px;color:#fff;vertical-align:middle}
.complete{background:#2e7d32}.partial{background:#c62828}.critical{background:#c62828}
.warning{background:#ef8f00}.info{background:#1e6fb8}
.card{background:#fff;border:1px solid #dde1e6;border-left:5px solid #999;border-radius:6px;
 padding:10px 14px;margin:10px 0}
.card.critical{border-left-color:#c62828;background:#fff}.card.warning{border-left-color:#ef8f00;
 background:#fff}.card.info{border-left-color:#1e6fb8;background:#fff}
.card h3{margin:0 0 6px;font-size:15px}.where{color:#555;font-weight:normal}
.ok{background:#e8f5e9;border:1px solid #a5d6a7;border-radius:6px;padding:10px 14px}
.partial{background:#fff8e1;border:1px solid #ffcc80;border-radius:6px;padding:10px 14px}
table{border-collapse:collapse;background:#fff;font-size:13px}
table.matrix td{min-width:56px;text-align:right;font-size:11px}
table.bars td{padding:2px 6px}
th,td{border:1px solid #dde1e6;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f2f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
code{background:#f0f2f5;padding:1px 4px;border-radius:3px;font-size:12.5px;word-break:break-all}
.bad{color:#c62828;font-weight:600}.warn{color:#b26a00}.dim{color:#777}
ul.notices li.severe{color:#c62828}
.scroll{overflow-x:auto}svg text{font-size:10px;fill:#333}
)css";

std::string Num(int64_t v) { return std::to_string(v); }

std::string Printf(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

const char* SeverityClass(Severity s) { return SeverityName(s); }

std::string Header(const Session& session) {
  std::string job = session.job_id.empty() ? session.session_id : session.job_id;
  int nodes = CountNodes(session);
  std::string out = "<header><h1>rankscope report &mdash; job " + HtmlEscape(job) + " ";
  out += session.partial ? "<span class=\"badge partial\">PARTIAL</span>"
                         : "<span class=\"badge complete\">COMPLETE</span>";
  out += "</h1>\n<p class=\"meta\">";
  if (!session.launcher.empty())
    out += "launcher <b>" + HtmlEscape(session.launcher) + "</b> &middot; ";
  out += Num(static_cast<int64_t>(session.ranks.size()));
  if (session.world_size > 0 && static_cast<size_t>(session.world_size) != session.ranks.size()) {
    out += " of " + Num(session.world_size);
  }
  out += " ranks on " + Num(nodes) + (nodes == 1 ? " node" : " nodes") + " &middot; " +
         HtmlEscape(FormatDuration(std::max<DurationNs>(0, session.end - session.start)));
  if (session.launcher_exit_code.has_value()) {
    out += " &middot; launcher exit code " + Num(*session.launcher_exit_code);
  }
  if (!session.session_id.empty()) out += " &middot; session " + HtmlEscape(session.session_id);
  out += "</p>\n";
  if (!session.command.empty()) {
    std::string command;
    for (const std::string& word : session.command) {
      if (!command.empty()) command += ' ';
      command += word;
    }
    out += "<p class=\"meta\">command: <code>" + HtmlEscape(command) + "</code></p>\n";
  }
  if (session.partial && !session.partial_reasons.empty()) {
    out += "<p class=\"bad\">Partial session:</p><ul>";
    for (const std::string& reason : session.partial_reasons) {
      out += "<li>" + HtmlEscape(reason) + "</li>";
    }
    out += "</ul>\n";
  }
  return out + "</header>\n";
}

std::string FindingCard(const Finding& f) {
  const char* severity = SeverityClass(f.severity);
  std::string where;
  if (!f.ranks.empty()) {
    where += f.ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < f.ranks.size(); ++i) where += (i ? "," : "") + Num(f.ranks[i]);
  }
  if (!f.nodes.empty()) {
    where += where.empty() ? "on " : " on ";
    for (size_t i = 0; i < f.nodes.size(); ++i) where += (i ? "," : "") + f.nodes[i];
  }
  std::string out = std::string("<div class=\"card ") + severity + "\"><h3><span class=\"badge " +
                    severity + "\">" + severity + "</span> " +
                    HtmlEscape(std::string(f.KindName())) + " <span class=\"where\">" +
                    HtmlEscape(where) + "</span></h3>\n";
  out += "<p>" + HtmlEscape(f.summary) + "</p>\n";
  out += "<p class=\"meta\">confidence " + Printf("%.2f", f.confidence) + " &middot; cost " +
         (f.cost_ns > 0 ? HtmlEscape(FormatDuration(f.cost_ns)) : std::string("not measured")) +
         "</p>\n";
  auto evidence = ReadableEvidence(EvidenceJson(f), 0);
  if (!evidence.empty()) {
    out += "<details><summary>evidence</summary><table>";
    for (const auto& [key, value] : evidence) {
      out += "<tr><th>" + HtmlEscape(key) + "</th><td>" + HtmlEscape(value) + "</td></tr>";
    }
    out += "</table></details>\n";
  }
  for (const KernelVerdict& v : f.kernel_verdicts) {
    out += "<p><b>kernel (ncu)</b> " + HtmlEscape(DescribeVerdict(v)) +
           " <a href=\"#ncu\">roofline and stalls</a></p>\n";
  }
  if (!f.next_steps.empty()) {
    out += "<p><b>Next steps</b></p><ol>";
    for (const NextStep& step : f.next_steps) {
      out += "<li>" + HtmlEscape(step.tool) + ": <code>" + HtmlEscape(step.command) + "</code>";
      if (!step.look_for.empty())
        out += "<br><span class=\"dim\">look for: " + HtmlEscape(step.look_for) + "</span>";
      out += "</li>";
    }
    out += "</ol>\n";
  }
  return out + "</div>\n";
}

// "rank 2 (vm) was killed by signal 6 (Aborted); launcher exited with code 134".
std::string JoinedReasons(const Session& session) {
  std::string out;
  for (const std::string& r : session.partial_reasons) out += (out.empty() ? "" : "; ") + r;
  return out;
}

std::string FindingsSection(const Session& session, const RecordFacts& facts,
                            const CollectiveOverview& overview,
                            const std::vector<Finding>& findings) {
  std::string out = "<section id=\"findings\"><h2>Findings</h2>\n";
  if (findings.empty() && session.partial) {
    // Not a clean bill: what is missing may hold the problem (a rank that died, lost records).
    out +=
        "<div class=\"partial\"><b>No problems found in the data kept</b>, but the session "
        "is partial (" +
        HtmlEscape(JoinedReasons(session)) +
        "): " + HtmlEscape(DescribeWhatWasChecked(session, facts, overview)) + ".</div>\n";
  } else if (findings.empty()) {
    out += "<div class=\"ok\"><b>No problems found:</b> " +
           HtmlEscape(DescribeWhatWasChecked(session, facts, overview)) + ".</div>\n";
  }
  for (const Finding* f : FindingsWorstFirst(findings)) out += FindingCard(*f);
  return out + "</section>\n";
}

// White (no wait) to dark red (the largest wait in the map).
std::string HeatColor(double fraction) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  auto channel = [&](int from, int to) {
    return static_cast<int>(std::lround(from + (to - from) * fraction));
  };
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "#%02x%02x%02x", channel(255, 165), channel(247, 15),
                channel(240, 21));
  return buffer;
}

// The heatmap's cells: one row per rank (session order), `columns` columns; a cell is the wait,
// -1 where the rank had nothing in that column.
struct HeatGrid {
  size_t columns = 0;
  std::vector<DurationNs> cells;
  std::vector<std::string> labels;  // per column, for the hover text
  std::string axis;                 // under the map
  std::string missing;              // hover text of a -1 cell
  DurationNs max_wait = 0;
};

// Rank x step, when every rank that made collective calls has step ranges: the rank's k-th
// step's cell sums its waits in the collectives it entered during that step (steps grouped when
// there are more than fit). Nullopt otherwise.
std::optional<HeatGrid> GridBySteps(const Session& session, const RecordFacts& facts,
                                    const std::vector<CollectiveInstance>& instances,
                                    const std::unordered_map<int, size_t>& row_of,
                                    size_t max_columns) {
  const SessionSteps found = FindSessionSteps(session, facts);
  const size_t most = found.spans.size();
  if (most == 0) return std::nullopt;
  std::vector<const TimeSpans*> steps(session.ranks.size());
  for (size_t r = 0; r < session.ranks.size(); ++r) {
    steps[r] = &found.of_rank.at(session.ranks[r].id.rank);
  }
  HeatGrid g;
  const size_t per_column = (most + max_columns - 1) / max_columns;
  g.columns = (most + per_column - 1) / per_column;
  g.cells.assign(session.ranks.size() * g.columns, -1);
  for (size_t r = 0; r < session.ranks.size(); ++r) {
    for (size_t k = 0; k < steps[r]->size(); ++k) g.cells[r * g.columns + k / per_column] = 0;
  }
  for (const CollectiveInstance& inst : instances) {
    const std::vector<DurationNs> waits = MemberWaits(inst);
    for (size_t m = 0; m < inst.members.size(); ++m) {
      auto row = row_of.find(inst.members[m].rank);
      if (row == row_of.end()) continue;
      const std::optional<size_t> step = StepContaining(*steps[row->second], inst.members[m].enter);
      if (!step) continue;
      const size_t k = *step;
      DurationNs& cell = g.cells[row->second * g.columns + k / per_column];
      cell += waits[m];
      g.max_wait = std::max(g.max_wait, cell);
    }
  }
  g.labels.resize(g.columns);
  for (size_t c = 0; c < g.columns; ++c) {
    g.labels[c] = "step " + Num(static_cast<int64_t>(c * per_column));
    if (per_column > 1) g.labels[c] += "-" + Num(static_cast<int64_t>((c + 1) * per_column - 1));
  }
  g.missing = "did not run this step";
  g.axis = "steps (NVTX step ranges) &#8594; (" + Num(static_cast<int64_t>(most)) +
           (per_column > 1 ? ", " + Num(static_cast<int64_t>(per_column)) + " per column"
                           : std::string()) +
           ")";
  return g;
}

// Rank x collective instance in start order (instances grouped when there are more than fit):
// the cell is the rank's largest wait among the column's instances.
HeatGrid GridByInstances(const Session& session, const std::vector<CollectiveInstance>& instances,
                         const std::unordered_map<int, size_t>& row_of, size_t max_columns) {
  HeatGrid g;
  const size_t per_column = (instances.size() + max_columns - 1) / max_columns;
  g.columns = (instances.size() + per_column - 1) / per_column;
  g.cells.assign(session.ranks.size() * g.columns, -1);
  g.labels.resize(g.columns);
  for (size_t i = 0; i < instances.size(); ++i) {
    const CollectiveInstance& inst = instances[i];
    const size_t column = i / per_column;
    if (i % per_column == 0) {
      g.labels[column] = std::string(CollectiveOpName(inst.op)) + " seq " + Num(inst.seq);
      if (per_column > 1) g.labels[column] += " (+" + Num(per_column - 1) + " following)";
    }
    const std::vector<DurationNs> waits = MemberWaits(inst);
    for (size_t m = 0; m < inst.members.size(); ++m) {
      auto row = row_of.find(inst.members[m].rank);
      if (row == row_of.end()) continue;
      DurationNs& cell = g.cells[row->second * g.columns + column];
      cell = std::max(cell, waits[m]);
      g.max_wait = std::max(g.max_wait, waits[m]);
    }
  }
  g.missing = "not a member";
  g.axis = "instances in start order &#8594; (" + Num(static_cast<int64_t>(instances.size())) +
           (per_column > 1 ? ", " + Num(per_column) + " per column" : std::string()) + ")";
  return g;
}

std::string Heatmap(const Session& session, const RecordFacts& facts,
                    const std::vector<CollectiveInstance>& instances) {
  std::string out = "<section id=\"heatmap\"><h2>Wait inside collectives, per rank</h2>\n";
  if (instances.empty() || session.ranks.empty()) {
    return out + "<p class=\"dim\">No MPI collectives recorded.</p></section>\n";
  }
  std::unordered_map<int, size_t> row_of;
  for (size_t i = 0; i < session.ranks.size(); ++i) row_of.emplace(session.ranks[i].id.rank, i);
  const size_t max_columns =
      std::clamp<size_t>(kMaxHeatmapCells / session.ranks.size(), 50, kMaxHeatmapColumns);
  std::optional<HeatGrid> by_step = GridBySteps(session, facts, instances, row_of, max_columns);
  const HeatGrid grid =
      by_step ? std::move(*by_step) : GridByInstances(session, instances, row_of, max_columns);
  out += by_step ? "<p class=\"meta\">One row per rank, one column per step (the ranks' NVTX "
                   "step ranges). The colour is how long the rank waited, in that step's "
                   "collective calls, for the others to arrive (Scalasca wait states); a rank "
                   "whose row stays white while the others turn red is the one they wait for. "
                   "Hover a cell for numbers.</p>\n"
                 : "<p class=\"meta\">One row per rank, one column per collective instance in "
                   "start order. The colour is how long the rank waited in that call for the "
                   "others to arrive (Scalasca wait states); a rank whose row stays white while "
                   "the others turn red is the one they wait for. Hover a cell for numbers.</p>\n";
  const size_t columns = grid.columns;
  const std::vector<DurationNs>& cells = grid.cells;
  const DurationNs max_wait = grid.max_wait;
  std::vector<int> ranks;
  for (const RankData& r : session.ranks) ranks.push_back(r.id.rank);

  const int label_width = 150;
  const int cell_w = static_cast<int>(std::clamp<size_t>(900 / columns, 2, 16));
  const int cell_h = ranks.size() <= 32 ? 14 : (ranks.size() <= 128 ? 6 : 3);
  const int width = label_width + cell_w * static_cast<int>(columns) + 10;
  const int map_height = cell_h * static_cast<int>(ranks.size());
  const int height = map_height + 56;

  out += "<div class=\"scroll\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(width) +
         "\" height=\"" + Num(height) + "\" role=\"img\" aria-label=\"wait heatmap\">\n";
  out += "<defs><linearGradient id=\"heat\"><stop offset=\"0\" stop-color=\"" + HeatColor(0) +
         "\"/><stop offset=\"1\" stop-color=\"" + HeatColor(1) + "\"/></linearGradient></defs>\n";
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankData& rank = session.ranks[r];
    int y = static_cast<int>(r) * cell_h;
    if (cell_h >= 10) {
      out += "<text x=\"0\" y=\"" + Num(y + cell_h - 3) + "\">rank " + Num(rank.id.rank) + " " +
             HtmlEscape(rank.id.node.substr(0, 18)) + "</text>";
    }
    for (size_t c = 0; c < columns; ++c) {
      DurationNs wait = cells[r * columns + c];
      std::string fill =
          wait < 0
              ? "#e4e6ea"
              : HeatColor(max_wait > 0 ? static_cast<double>(wait) / static_cast<double>(max_wait)
                                       : 0.0);
      out += "<rect x=\"" + Num(label_width + static_cast<int64_t>(c) * cell_w) + "\" y=\"" +
             Num(y) + "\" width=\"" + Num(cell_w) + "\" height=\"" + Num(cell_h) + "\" fill=\"" +
             fill + "\"><title>rank " + Num(rank.id.rank) + ", " + HtmlEscape(grid.labels[c]) +
             ": " + (wait < 0 ? grid.missing : "waited " + FormatDuration(wait)) +
             "</title></rect>";
    }
    out += "\n";
  }
  int legend_y = map_height + 14;
  out +=
      "<text x=\"" + Num(label_width) + "\" y=\"" + Num(legend_y) + "\">" + grid.axis + "</text>\n";
  out += "<rect x=\"" + Num(label_width) + "\" y=\"" + Num(legend_y + 10) +
         "\" width=\"160\" height=\"10\" fill=\"url(#heat)\"/>";
  out += "<text x=\"" + Num(label_width) + "\" y=\"" + Num(legend_y + 32) + "\">0</text>";
  out += "<text x=\"" + Num(label_width + 130) + "\" y=\"" + Num(legend_y + 32) + "\">" +
         HtmlEscape(FormatDuration(max_wait)) + "</text>\n";
  return out + "</svg></div></section>\n";
}

// Who waited for whom (the blame model's first-order waits, rank x rank), and per rank where
// its time went: busy, waiting inside MPI, and the waiting it caused, with the what-if of each
// straggler. Up to kMaxMatrixRanks ranks: the ones that caused the most waiting.
std::string BlameSection(const Session& session, const BlameModel* blame) {
  if (blame == nullptr || blame->ranks.empty()) return "";
  constexpr size_t kMaxMatrixRanks = 32;
  std::vector<const RankBlame*> shown;
  for (const RankBlame& b : blame->ranks) shown.push_back(&b);
  std::stable_sort(shown.begin(), shown.end(),
                   [](const RankBlame* a, const RankBlame* b) { return a->caused > b->caused; });
  if (shown.size() > kMaxMatrixRanks) shown.resize(kMaxMatrixRanks);
  std::stable_sort(shown.begin(), shown.end(),
                   [](const RankBlame* a, const RankBlame* b) { return a->rank < b->rank; });
  std::string out =
      "<section id=\"blame\"><h2>Who waited for whom</h2>\n<p class=\"meta\">Rows wait, "
      "columns are waited for: the time the row's rank spent inside MPI calls waiting for the "
      "column's rank to arrive or send (first order; the findings' what-if follows the chains). "
      "The bars: each rank's time busy (working, or in MPI once its partners were there), "
      "waiting inside MPI, and the waiting it made the others do." +
      std::string(blame->ranks.size() > kMaxMatrixRanks
                      ? " The " + std::to_string(kMaxMatrixRanks) +
                            " ranks that caused the most waiting are shown."
                      : "") +
      "</p>\n";
  DurationNs max_wait = 0;
  for (const auto& [pair, ns] : blame->waits) max_wait = std::max(max_wait, ns);
  out += "<div class=\"scroll\"><table class=\"matrix\"><tr><th>waiter \\ waited for</th>";
  for (const RankBlame* c : shown) out += "<th>" + Num(c->rank) + "</th>";
  out += "</tr>\n";
  for (const RankBlame* w : shown) {
    out += "<tr><th>rank " + Num(w->rank) + "</th>";
    for (const RankBlame* c : shown) {
      auto it = blame->waits.find({w->rank, c->rank});
      const DurationNs ns = it == blame->waits.end() ? 0 : it->second;
      const double f = max_wait > 0 ? static_cast<double>(ns) / static_cast<double>(max_wait) : 0;
      // Dark cells get light text.
      out += "<td style=\"background:" + HeatColor(f) + (f > 0.6 ? ";color:#fff" : "") +
             "\" title=\"rank " + Num(w->rank) + " waited " + HtmlEscape(FormatDuration(ns)) +
             " for rank " + Num(c->rank) + "\">" +
             (ns > 0 ? HtmlEscape(FormatDuration(ns)) : std::string()) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</table></div>\n";

  // Bars, scaled to the span.
  const double span = static_cast<double>(std::max<DurationNs>(blame->span(), 1));
  const int bar = 420;
  auto width = [&](DurationNs ns) {
    return Num(static_cast<int64_t>(std::lround(bar * std::clamp(ns / span, 0.0, 1.0))));
  };
  out += "<table class=\"bars\"><tr><th>rank</th><th>busy / waiting in MPI (of " +
         HtmlEscape(FormatDuration(blame->span())) +
         ")</th><th>made the others wait</th><th>what-if</th></tr>\n";
  for (const RankBlame* b : shown) {
    const DurationNs busy = std::max<DurationNs>(b->busy, 0);
    std::string what_if;
    if (b->replayed && std::find(blame->stragglers.begin(), blame->stragglers.end(), b->rank) !=
                           blame->stragglers.end()) {
      what_if = "span " + FormatDuration(blame->span()) + " &rarr; about " +
                FormatDuration(b->what_if_span) + " like the others";
    }
    out += "<tr><td>" + Num(b->rank) + "</td><td><svg width=\"" + Num(bar) +
           "\" height=\"12\"><rect x=\"0\" y=\"0\" height=\"12\" width=\"" + width(busy) +
           "\" fill=\"#4a78b5\"><title>busy " + HtmlEscape(FormatDuration(busy)) +
           "</title></rect><rect x=\"" + width(busy) + "\" y=\"0\" height=\"12\" width=\"" +
           width(b->waited) + "\" fill=\"#e0a030\"><title>waiting in MPI " +
           HtmlEscape(FormatDuration(b->waited)) + "</title></rect></svg></td><td>" +
           HtmlEscape(FormatDuration(b->caused)) + "</td><td>" + what_if + "</td></tr>\n";
  }
  (void)session;
  return out + "</table></section>\n";
}

std::string RanksTable(const Session& session) {
  std::string out =
      "<section id=\"ranks\"><h2>Ranks and clocks</h2>\n"
      "<p class=\"meta\">coordinator time = local time + offset; a converted time may be off by "
      "the uncertainty.</p>\n<div class=\"scroll\"><table><tr><th>rank</th><th>node</th>"
      "<th>host</th><th>local rank</th><th>pid</th><th>exit</th><th>finished</th>"
      "<th>offset</th><th>&#177; uncertainty</th><th>drift</th><th>samples used/total</th>"
      "<th>clock</th></tr>\n";
  for (const RankData& r : session.ranks) {
    std::string exit = DescribeExit(r);
    if (exit.empty()) exit = r.exit_code.has_value() ? "0" : "unknown";
    bool crashed = r.term_signal != 0 || (r.exit_code.has_value() && *r.exit_code != 0);
    out +=
        "<tr><td class=\"num\">" + Num(r.id.rank) + "</td><td>" + HtmlEscape(r.id.node) +
        "</td><td>" + HtmlEscape(r.id.host) + "</td><td class=\"num\">" + Num(r.id.local_rank) +
        "</td><td class=\"num\">" + Num(r.id.program_pid) + "</td><td" +
        (crashed ? " class=\"bad\"" : "") + ">" + HtmlEscape(exit) + "</td><td" +
        (r.finished ? ">yes" : " class=\"bad\">no") + "</td><td class=\"num\">" +
        HtmlEscape(FormatClockOffset(r.clock.offset_ns)) + "</td><td class=\"num\">" +
        HtmlEscape(FormatDuration(r.clock.uncertainty_ns)) + "</td><td class=\"num\">" +
        Printf("%+.2f ppm", r.clock.drift_ppm) + "</td><td class=\"num\">" +
        Num(r.clock.samples_used) + "/" + Num(r.clock.samples_total) + "</td><td>" +
        (r.clock_fitted ? std::string("fitted")
                        : "<span class=\"warn\">not fitted</span> " + HtmlEscape(r.clock_error)) +
        "</td></tr>\n";
  }
  return out + "</table></div></section>\n";
}

std::string ActivityTable(const Session& session, const RecordFacts& facts,
                          const CollectiveOverview& overview) {
  std::unordered_map<int, const RankCollectiveStats*> stats;
  for (const RankCollectiveStats& s : overview.ranks) stats.emplace(s.rank, &s);
  std::string out =
      "<section id=\"activity\"><h2>Per-rank summary</h2>\n<div class=\"scroll\"><table><tr>"
      "<th>rank</th><th>node</th><th>collective calls</th><th>time in complete collectives</th>"
      "<th>waiting in them</th><th>arrived last</th><th>median lateness</th>"
      "<th>p2p calls</th><th>NVTX ranges</th><th>top NVTX range</th><th>marks</th>"
      "<th>dropped records</th></tr>\n";
  for (size_t i = 0; i < session.ranks.size(); ++i) {
    const RankData& r = session.ranks[i];
    const RankRecordFacts& counts = facts.ranks[i];
    auto it = stats.find(r.id.rank);
    RankCollectiveStats s = it != stats.end() ? *it->second : RankCollectiveStats{};
    auto [top_name, top_time] = TopRange(counts);
    out += "<tr><td class=\"num\">" + Num(r.id.rank) + "</td><td>" + HtmlEscape(r.id.node) +
           "</td><td class=\"num\">" + Num(static_cast<int64_t>(counts.collectives)) +
           "</td><td class=\"num\">" + HtmlEscape(FormatDuration(s.time_in_calls)) +
           "</td><td class=\"num\">" + HtmlEscape(FormatDuration(s.wait)) +
           "</td><td class=\"num\">" + Num(s.times_last) + "</td><td class=\"num\">" +
           HtmlEscape(FormatDuration(s.median_lateness)) + "</td><td class=\"num\">" +
           Num(static_cast<int64_t>(counts.p2p)) + "</td><td class=\"num\">" +
           Num(static_cast<int64_t>(counts.ranges)) + "</td><td>" +
           (top_name.empty() ? std::string()
                             : HtmlEscape(top_name) + " <span class=\"dim\">(" +
                                   HtmlEscape(FormatDuration(top_time)) + ")</span>") +
           "</td><td class=\"num\">" + Num(static_cast<int64_t>(counts.marks)) + "</td><td" +
           (r.dropped_records > 0 ? " class=\"num bad\">" : " class=\"num\">") +
           std::to_string(r.dropped_records) + "</td></tr>\n";
  }
  return out + "</table></div></section>\n";
}

std::string NoticesSection(const Session& session) {
  std::vector<RankNotice> notices = CollectNotices(session);
  if (notices.empty()) return "";
  std::string out = "<section id=\"notices\"><h2>Notices</h2><ul class=\"notices\">\n";
  for (const RankNotice& n : notices) {
    out += n.severe ? "<li class=\"severe\">" : "<li>";
    if (!n.who.empty()) out += HtmlEscape(n.who) + ": ";
    out += HtmlEscape(n.text) + "</li>\n";
  }
  return out + "</ul></section>\n";
}

// One collective call on a timeline row.
struct TimelineCall {
  CollectiveOp op = CollectiveOp::kUnknown;
  TimeNs enter = 0;
  TimeNs exit = 0;
  DurationNs wait = 0;
};

// One rank's row: its NVTX ranges in the window come from `rank` (when known), the calls are
// given.
struct TimelineRow {
  int rank = -1;
  const RankData* data = nullptr;
  std::vector<TimelineCall> calls;
};

// The rows on one aligned time axis [from, to]: per rank its NVTX ranges by depth (blue), then
// its calls (green, red while waiting for the others). `label` names the picture for screen
// readers.
std::string TimelineSvg(const std::vector<TimelineRow>& rows, TimeNs from, TimeNs to,
                        const std::string& label) {
  const double span = static_cast<double>(std::max<DurationNs>(1, to - from));
  constexpr int kLabel = 150, kWidth = 820, kRow = 12, kRankGap = 8, kDepths = 3;
  auto x = [&](TimeNs t) {
    return kLabel + static_cast<int>(std::lround(
                        std::clamp(static_cast<double>(t - from) / span, 0.0, 1.0) * kWidth));
  };
  std::string svg;
  int y = 0;
  static const char* kRangeColors[kDepths] = {"#9ecae1", "#c6dbef", "#deebf7"};
  for (const TimelineRow& row : rows) {
    svg += "<text x=\"0\" y=\"" + Num(y + 10) + "\">rank " + Num(row.rank) +
           (row.data != nullptr && !row.data->id.node.empty() ? " " + HtmlEscape(row.data->id.node)
                                                              : "") +
           "</text>";
    if (row.data != nullptr) {
      for (const RangeRecord& r : row.data->ranges) {
        if (r.end < from || r.start > to || r.depth >= kDepths) continue;
        const int x0 = x(r.start), x1 = std::max(x(r.end), x0 + 1);
        svg += "<rect x=\"" + Num(x0) + "\" y=\"" + Num(y + static_cast<int>(r.depth) * kRow) +
               "\" width=\"" + Num(x1 - x0) + "\" height=\"" + Num(kRow - 1) + "\" fill=\"" +
               kRangeColors[r.depth] + "\"><title>" + HtmlEscape(r.name) + ": " +
               HtmlEscape(FormatDuration(r.end - r.start)) + "</title></rect>";
        if (x1 - x0 > 40) {
          svg += "<text x=\"" + Num(x0 + 2) + "\" y=\"" +
                 Num(y + static_cast<int>(r.depth) * kRow + 9) + "\">" + HtmlEscape(r.name) +
                 "</text>";
        }
      }
    }
    const int call_y = y + kDepths * kRow;
    for (const TimelineCall& call : row.calls) {
      const int x0 = x(call.enter), x_wait = x(call.enter + call.wait);
      const int x1 = std::max(x(call.exit), x0 + 1);
      svg += "<rect x=\"" + Num(x0) + "\" y=\"" + Num(call_y) + "\" width=\"" + Num(x1 - x0) +
             "\" height=\"" + Num(kRow - 1) + "\" fill=\"#74c476\"><title>" +
             HtmlEscape(std::string(CollectiveOpName(call.op))) + ": " +
             HtmlEscape(FormatDuration(call.exit - call.enter)) + ", waited " +
             HtmlEscape(FormatDuration(call.wait)) + "</title></rect>";
      if (x_wait > x0) {
        svg += "<rect x=\"" + Num(x0) + "\" y=\"" + Num(call_y) + "\" width=\"" + Num(x_wait - x0) +
               "\" height=\"" + Num(kRow - 1) + "\" fill=\"#de2d26\"><title>rank " + Num(row.rank) +
               " waiting " + HtmlEscape(FormatDuration(call.wait)) + "</title></rect>";
      }
    }
    svg += "\n";
    y += (kDepths + 1) * kRow + kRankGap;
  }
  svg += "<text x=\"" + Num(kLabel) + "\" y=\"" + Num(y + 8) + "\">" +
         HtmlEscape(FormatDuration(0)) + "</text><text x=\"" + Num(kLabel + kWidth - 60) +
         "\" y=\"" + Num(y + 8) + "\">" + HtmlEscape(FormatDuration(to - from)) + "</text>";
  return "<div class=\"scroll\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         Num(kLabel + kWidth + 10) + "\" height=\"" + Num(y + 12) +
         "\" role=\"img\" aria-label=\"" + HtmlEscape(label) + "\">\n" + svg + "\n</svg></div>";
}

// When every rank that made collective calls has NVTX step ranges: the step (k-th step range of
// each rank, as in the heatmap) whose collective calls hold the most summed wait, drawn across
// every rank over that step's window (the earliest start to the latest end of the ranks' k-th
// steps). The first step absorbs start-up and is skipped when there are more than two. Beyond
// kMaxTimelineRanks ranks, the latest arrivals (up to a quarter of the rows) and then the ranks
// that waited longest in that step's calls are drawn.
// Empty without step ranges or without any wait in a step.
// *drawn (when not null): the span the timeline covers, when there is one.
std::string WorstStepTimeline(const Session& session, const RecordFacts& facts,
                              const std::vector<CollectiveInstance>& instances,
                              std::pair<TimeNs, TimeNs>* drawn = nullptr) {
  constexpr size_t kMaxTimelineRanks = 64;
  const SessionSteps steps = FindSessionSteps(session, facts);
  const size_t most = steps.spans.size();
  const std::vector<DurationNs> step_wait = WaitPerStep(steps, instances);
  const std::optional<size_t> worst_step = MostWaitingStep(step_wait);
  if (!worst_step) return "";
  const size_t worst = *worst_step;
  TimeNs from = steps.spans[worst].first, to = steps.spans[worst].second;
  std::unordered_map<int, size_t> row_of;
  for (size_t r = 0; r < session.ranks.size(); ++r) row_of.emplace(session.ranks[r].id.rank, r);
  // Every rank's calls in the window; what it waited and how late it arrived in the step's
  // calls pick the rows when there are too many.
  std::vector<TimelineRow> rows(session.ranks.size());
  std::vector<DurationNs> wait(session.ranks.size(), 0), lateness(session.ranks.size(), 0);
  for (size_t r = 0; r < session.ranks.size(); ++r) {
    rows[r].rank = session.ranks[r].id.rank;
    rows[r].data = &session.ranks[r];
  }
  for (const CollectiveInstance& inst : instances) {
    if (inst.members.empty()) continue;
    const std::vector<DurationNs> waits = MemberWaits(inst);
    TimeNs first_enter = inst.members.front().enter;
    for (const CollectiveParticipant& p : inst.members)
      first_enter = std::min(first_enter, p.enter);
    for (size_t m = 0; m < inst.members.size(); ++m) {
      const CollectiveParticipant& p = inst.members[m];
      auto row = row_of.find(p.rank);
      if (row == row_of.end() || p.exit < from || p.enter > to) continue;
      rows[row->second].calls.push_back({inst.op, p.enter, p.exit, waits[m]});
      if (StepContaining(steps.of_rank.at(p.rank), p.enter) == worst) {
        wait[row->second] += waits[m];
        if (inst.complete) lateness[row->second] += p.enter - first_enter;
      }
    }
  }
  size_t left_out = 0;
  if (rows.size() > kMaxTimelineRanks) {
    // The latest arrivals first (the ranks the others wait for; a quarter of the rows at
    // most), then the ranks that waited most.
    std::vector<size_t> order(rows.size());
    for (size_t r = 0; r < order.size(); ++r) order[r] = r;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return lateness[a] > lateness[b]; });
    size_t late = 0;
    while (late < kMaxTimelineRanks / 4 && lateness[order[late]] > 0) ++late;
    std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(late), order.end(),
                     [&](size_t a, size_t b) { return wait[a] > wait[b]; });
    order.resize(kMaxTimelineRanks);
    std::sort(order.begin(), order.end());  // back to session order
    std::vector<TimelineRow> kept;
    for (size_t r : order) kept.push_back(std::move(rows[r]));
    left_out = rows.size() - kept.size();
    rows = std::move(kept);
  }
  const std::string step = "step " + Num(static_cast<int64_t>(worst));
  const std::string span = FormatDuration(from - session.start) + " to " +
                           FormatDuration(to - session.start) + " into the session";
  std::string out =
      "<section id=\"worst\"><h2>The step with the most waiting: " + HtmlEscape(step) + " (" +
      HtmlEscape(span) + ")</h2>\n<p class=\"meta\">" + HtmlEscape(step) + " of " +
      Num(static_cast<int64_t>(most)) + " (the ranks' NVTX step ranges), " +
      HtmlEscape(FormatDuration(to - from)) + " long: the ranks waited " +
      HtmlEscape(FormatDuration(step_wait[worst])) +
      " in total in its collective calls. Rows per rank: NVTX ranges by depth "
      "(blue), then the calls (green; red while waiting for the others), on the "
      "aligned time axis.</p>\n";
  if (left_out > 0) {
    out += "<p class=\"meta\">Showing the " + Num(static_cast<int64_t>(rows.size())) +
           " ranks that arrived latest or waited longest in this step's calls; " +
           Num(static_cast<int64_t>(left_out)) + " other ranks are left out.</p>\n";
  }
  to += (to - from) / 50;
  if (drawn != nullptr) *drawn = {from, to};
  return out + TimelineSvg(rows, from, to, "worst step timeline") + "</section>\n";
}

// The complete instance where the members waited longest in total (not counting each
// communicator's first), drawn across all its ranks on the aligned time axis from the previous
// instance of its communicator (or a window as long as the longest wait before it) to its last
// exit. Empty when there is no complete instance with waiting.
std::string WorstInstanceTimeline(const Session& session,
                                  const std::vector<CollectiveInstance>& instances,
                                  std::pair<TimeNs, TimeNs>* drawn = nullptr) {
  const CollectiveInstance* worst = nullptr;
  DurationNs worst_wait = 0;
  size_t worst_index = 0;
  // The first instance of each communicator absorbs start-up (connection setup, late
  // launches): skipped when the communicator has more.
  std::map<uint64_t, int> count;
  for (const CollectiveInstance& inst : instances) ++count[inst.comm_id];
  std::map<uint64_t, bool> seen;
  for (size_t i = 0; i < instances.size(); ++i) {
    const bool first = !seen[instances[i].comm_id];
    seen[instances[i].comm_id] = true;
    if (first && count[instances[i].comm_id] > 2) continue;
    if (!instances[i].complete || instances[i].members.size() < 2) continue;
    DurationNs total = 0;
    for (DurationNs w : MemberWaits(instances[i])) total += w;
    if (worst == nullptr || total > worst_wait) {
      worst = &instances[i];
      worst_wait = total;
      worst_index = i;
    }
  }
  if (worst == nullptr || worst_wait <= 0) return "";
  const std::vector<DurationNs> waits = MemberWaits(*worst);
  TimeNs first_enter = worst->members.front().enter;
  TimeNs last_exit = worst->members.front().exit;
  DurationNs longest_wait = 0;
  std::vector<TimelineRow> rows;
  for (size_t m = 0; m < worst->members.size(); ++m) {
    const CollectiveParticipant& p = worst->members[m];
    first_enter = std::min(first_enter, p.enter);
    last_exit = std::max(last_exit, p.exit);
    longest_wait = std::max(longest_wait, waits[m]);
    rows.push_back({p.rank, session.FindRank(p.rank), {{worst->op, p.enter, p.exit, waits[m]}}});
  }
  TimeNs from = first_enter - std::max<DurationNs>(longest_wait, kNsPerMs);
  for (size_t i = worst_index; i-- > 0;) {  // the previous instance of the same communicator
    if (instances[i].comm_id != worst->comm_id) continue;
    TimeNs prev_exit = instances[i].members.front().exit;
    for (const CollectiveParticipant& p : instances[i].members)
      prev_exit = std::min(prev_exit, p.exit);
    if (prev_exit < first_enter) from = prev_exit;
    break;
  }
  const TimeNs to = last_exit + (last_exit - from) / 50;
  if (drawn != nullptr) *drawn = {from, to};
  return "<section id=\"worst\"><h2>The instance with the most waiting</h2>\n<p class=\"meta\">" +
         HtmlEscape(std::string(CollectiveOpName(worst->op))) + " seq " +
         Num(static_cast<int64_t>(worst->seq)) + ": the ranks waited " +
         HtmlEscape(FormatDuration(worst_wait)) +
         " in total. Rows per rank: NVTX ranges by depth (blue), then the call (green; red while "
         "waiting for the others), on the aligned time axis.</p>\n" +
         TimelineSvg(rows, from, to, "worst instance timeline") + "</section>\n";
}

// Per rank with CUPTI kernels: how many, GPU time, launch latency (kernel start - its launch
// call's end: small when the GPU waits for the CPU) and NCCL queue time (NCCL kernel start - its
// launch). Empty without kernels.
std::string KernelsTable(const Session& session, const GpuReport& gpu) {
  if (gpu.by_rank.empty()) return "";
  auto distribution = [](const nlohmann::json& d) -> std::string {
    if (!d.is_object()) return "<td class=\"dim\">&mdash;</td>";
    return "<td class=\"num\">" + HtmlEscape(FormatDuration(d["median_ns"].get<int64_t>())) +
           " <span class=\"dim\">p99 " + HtmlEscape(FormatDuration(d["p99_ns"].get<int64_t>())) +
           ", " + Num(d["samples"].get<int64_t>()) + "</span></td>";
  };
  std::string rows;
  for (const auto& [rank, g] : gpu.by_rank) {
    const RankData* data = session.FindRank(rank);
    rows += "<tr><td>rank " + Num(rank) + "</td><td>" +
            HtmlEscape(data != nullptr ? data->id.node : std::string()) +
            "</td><td class=\"num\">" + Num(g["kernels"].get<int64_t>()) +
            "</td><td class=\"num\">" +
            HtmlEscape(FormatDuration(g["kernel_time_ns"].get<int64_t>())) + "</td>" +
            distribution(g["launch_latency"]) + distribution(g["nccl_queue"]) + "</tr>\n";
  }
  return "<h3>Kernels and launch latency (CUPTI)</h3>\n<p class=\"meta\">Launch latency is "
         "kernel start minus the end of its launch call: microseconds when the GPU waits for "
         "the CPU (launch-bound), milliseconds when work queues on the GPU. NCCL queue is an NCCL "
         "kernel's start minus its launch.</p>\n<div class=\"scroll\"><table><tr><th>rank</th>"
         "<th>node</th><th>kernels</th><th>GPU time</th><th>launch latency (median)</th>"
         "<th>NCCL queue (median)</th></tr>\n" +
         rows + "</table></div>\n";
}

// A GPU pair's cell in the node's GPU matrix, as `nvidia-smi topo -m` prints it: NV# for direct
// NVLinks, NV# and "NVSwitch" for the NVSwitch fabric (# = the fewer of the two GPUs' links into
// it), NVB through another GPU, else the PCIe path (PHB/SYS, through the CPU, as a warning).
std::string GpuPairCell(const NodeTopology& topo, const GpuPair& pair) {
  auto switch_links = [&](int gpu) {
    int n = 0;
    for (const TopoNvLink& l : topo.gpus[static_cast<size_t>(gpu)].nvlinks) {
      if (l.target_class == PciClass::kNvSwitch) n += l.count;
    }
    return n;
  };
  switch (pair.nvlink) {
    case NvLinkReach::kDirect:
      return "<td title=\"direct NVLink\">NV" + Num(pair.direct_nvlinks) + "</td>";
    case NvLinkReach::kNvSwitch: {
      const int links = std::min(switch_links(pair.gpu_a), switch_links(pair.gpu_b));
      return "<td title=\"through the NVSwitch fabric\">" +
             (links > 0 ? "NV" + Num(links) + " " : std::string()) + "NVSwitch</td>";
    }
    case NvLinkReach::kViaGpu:
      return "<td title=\"NVLink through another GPU\">NVB</td>";
    case NvLinkReach::kNone:
      break;
  }
  const bool through_cpu = pair.pcie == PciePath::kHostBridge || pair.pcie == PciePath::kCrossCpu;
  return std::string("<td") + (through_cpu ? " class=\"warn\"" : "") + " title=\"PCIe only\">" +
         HtmlEscape(std::string(PciePathName(pair.pcie))) + "</td>";
}

// One node's topology without its name: the GPU matrix with each GPU's nearest NIC, the NICs,
// and the PCIe links below their peers.
std::string NodeTopologyTables(const NodeTopology& topo) {
  std::string out;
  const size_t n = topo.gpus.size();
  if (n > 0) {
    std::vector<const GpuPair*> pair_of(n * n, nullptr);
    for (const GpuPair& p : topo.gpu_pairs) {
      const auto a = static_cast<size_t>(p.gpu_a), b = static_cast<size_t>(p.gpu_b);
      if (a < n && b < n) pair_of[a * n + b] = pair_of[b * n + a] = &p;
    }
    out += "<div class=\"scroll\"><table><tr><th></th>";
    for (const TopoGpu& g : topo.gpus) out += "<th>GPU" + Num(g.dev) + "</th>";
    out += "<th>nearest NIC</th><th>NIC path</th><th>NUMA</th><th>PCIe to CPU</th></tr>\n";
    for (size_t i = 0; i < n; ++i) {
      const TopoGpu& g = topo.gpus[i];
      out += "<tr><th>GPU" + Num(g.dev) + " <span class=\"dim\">" + HtmlEscape(g.bus_id) +
             "</span></th>";
      for (size_t j = 0; j < n; ++j) {
        if (i == j) {
          out += "<td class=\"dim\">X</td>";
        } else if (pair_of[i * n + j] == nullptr) {
          out += "<td class=\"dim\">?</td>";
        } else {
          out += GpuPairCell(topo, *pair_of[i * n + j]);
        }
      }
      // Nearest first in PciePath's order; an unknown path only when nothing else is known.
      const GpuNicPath* nearest = nullptr;
      auto rank = [](PciePath p) { return p == PciePath::kUnknown ? 99 : static_cast<int>(p); };
      for (const GpuNicPath& p : topo.gpu_nic_paths) {
        if (static_cast<size_t>(p.gpu) != i) continue;
        if (nearest == nullptr || rank(p.pcie) < rank(nearest->pcie)) nearest = &p;
      }
      if (nearest == nullptr) {
        out += "<td class=\"dim\">none</td><td></td>";
      } else {
        out += "<td>" + HtmlEscape(topo.nics[static_cast<size_t>(nearest->nic)].name) + "</td><td" +
               (nearest->through_cpu() ? " class=\"warn\">" : ">") +
               HtmlEscape(std::string(PciePathName(nearest->pcie))) +
               (nearest->through_cpu() ? " (through the CPU)" : "") + "</td>";
      }
      out += "<td class=\"num\">" + (g.numa_id ? Num(*g.numa_id) : std::string("?")) + "</td><td>" +
             HtmlEscape(FormatPcieLink(g.pcie_path_to_cpu)) + "</td></tr>\n";
    }
    out += "</table></div>\n";
  }
  if (!topo.nics.empty()) {
    out +=
        "<div class=\"scroll\"><table><tr><th>NIC</th><th>speed</th><th>bus id</th>"
        "<th>NUMA</th><th>GPUDirect RDMA</th></tr>\n";
    for (const TopoNic& nic : topo.nics) {
      out += "<tr><td>" + HtmlEscape(nic.name) + "</td><td class=\"num\">" +
             (nic.speed_mbps ? HtmlEscape(FormatDouble("%g Gb/s", *nic.speed_mbps / 1000.0))
                             : std::string("?")) +
             "</td><td>" +
             (nic.bus_id.empty() ? std::string("<span class=\"dim\">not PCI</span>")
                                 : HtmlEscape(nic.bus_id)) +
             "</td><td class=\"num\">" + (nic.numa_id ? Num(*nic.numa_id) : std::string("?")) +
             "</td><td>" + (nic.gdr ? (*nic.gdr ? "yes" : "no") : "?") + "</td></tr>\n";
    }
    out += "</table></div>\n";
  }
  if (!topo.slow_pcie_links.empty()) {
    out += "<p class=\"warn\">PCIe links below their peers:</p><ul>";
    for (const SlowPcieLink& s : topo.slow_pcie_links) {
      PcieLink best;
      best.gen = s.peers_max_gen;
      best.width_lanes = s.peers_max_width_lanes;
      out += "<li class=\"warn\">" + HtmlEscape(std::string(PciClassName(s.device_class))) + " " +
             HtmlEscape(s.bus_id) + ": " + HtmlEscape(FormatPcieLink(s.link)) + ", its peers " +
             HtmlEscape(FormatPcieLink(best)) + "</li>";
    }
    out += "</ul>\n";
  }
  return out;
}

// Each node's NCCL topology dump (the first rank's of the node), nodes that look the same shown
// once; dumps that do not parse say why. Empty when no rank sent one.
std::string TopologySection(const Session& session) {
  constexpr size_t kMaxNodeNames = 8;
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // tables -> nodes
  for (const auto& [node, dump] : ParseNodeTopologies(session)) {
    std::string tables = dump.topology ? NodeTopologyTables(*dump.topology)
                                       : "<p class=\"warn\">the topology dump does not parse: " +
                                             HtmlEscape(dump.error) + "</p>\n";
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == tables; });
    if (it == groups.end()) {
      groups.emplace_back(std::move(tables), std::vector<std::string>{node});
    } else {
      it->second.push_back(node);
    }
  }
  if (groups.empty()) return "";
  std::string out =
      "<h3>Node topology (NCCL topology dump)</h3>\n<p class=\"meta\">GPU to GPU as nvidia-smi "
      "topo -m prints it: NV# = that many direct NVLinks, NVSwitch = through the NVSwitch "
      "fabric, NVB = NVLink through another GPU; PCIe only: PIX = one PCIe switch, PXB = several "
      "switches, PHB = through the CPU's host bridge, SYS = across CPUs (the last two in "
      "orange).</p>\n";
  for (const auto& [tables, nodes] : groups) {
    std::string names;
    for (size_t i = 0; i < nodes.size() && i < kMaxNodeNames; ++i) {
      names += (i ? ", " : "") + nodes[i];
    }
    if (nodes.size() > kMaxNodeNames) {
      names += " and " + Num(static_cast<int64_t>(nodes.size() - kMaxNodeNames)) + " more";
    }
    out += "<h4>" + std::string(nodes.size() > 1 ? "nodes " : "node ") + HtmlEscape(names) +
           (nodes.size() > 1 ? ": same topology" : "") + "</h4>\n" + tables;
  }
  return out;
}

// NCCL: per communicator, bus bandwidth by call shape (kernel time and call to call); then each
// node's GPUs as NVML saw them, each node's topology dump, and the kernels. Empty when the
// session has none of these.
std::string GpuSection(const Session& session, const GpuReport& gpu) {
  std::string out;
  const nlohmann::json& nccl = gpu.nccl;
  if (nccl.is_object()) {
    out += "<h3>NCCL " + HtmlEscape(nccl["version"].get<std::string>()) + "</h3>\n";
    for (const auto& c : nccl["communicators"]) {
      std::string transports;
      for (const auto& [kind, n] : c["transports"].items()) {
        transports += (transports.empty() ? "" : ", ") + kind + " &times;" + Num(n.get<int>());
      }
      out += "<p class=\"meta\">communicator " + HtmlEscape(c["comm_id"].get<std::string>()) +
             ": " + Num(c["nranks"].get<int>()) + " ranks, " +
             (transports.empty() ? std::string("no transports logged") : transports) +
             "</p>\n<div class=\"scroll\"><table><tr><th>op</th><th>size</th><th>type</th>"
             "<th>algo/proto</th><th>calls</th><th>busbw (kernel)</th><th>busbw (call to "
             "call)</th><th>gap between kernels</th></tr>\n";
      for (const auto& shape : c["shapes"]) {
        auto gbps = [](const nlohmann::json& v) {
          return v.is_number() ? Printf("%.1f GB/s", v.get<double>()) : std::string("&ndash;");
        };
        const std::string tuning =
            shape["algo"].is_string()
                ? shape["algo"].get<std::string>() + "/" + shape["proto"].get<std::string>()
                : "";
        out += "<tr><td>" + HtmlEscape(shape["op"].get<std::string>()) + "</td><td class=\"num\">" +
               HtmlEscape(FormatBytes(shape["bytes"].get<int64_t>())) + "</td><td>" +
               HtmlEscape(shape["datatype"].get<std::string>()) + "</td><td>" + HtmlEscape(tuning) +
               "</td><td class=\"num\">" + Num(shape["calls"].get<int>()) +
               "</td><td class=\"num\">" + gbps(shape["busbw_gbps"]) + "</td><td class=\"num\">" +
               gbps(shape["stream_busbw_gbps"]) + "</td><td class=\"num\">" +
               (shape["gap_us"].is_number() ? Printf("%.1f us", shape["gap_us"].get<double>())
                                            : std::string("&ndash;")) +
               "</td></tr>\n";
      }
      out += "</table></div>\n";
    }
  }
  const nlohmann::json nvml = NvmlReportJson(session);
  bool any_gpu = false;
  std::string rows;
  for (const auto& node : nvml) {
    if (!node.contains("gpus")) continue;
    for (const auto& g : node["gpus"]) {
      any_gpu = true;
      const bool degraded = g["pcie_degraded"].get<bool>();
      const int up = g["nvlinks_up"].get<int>();
      const int total = g["nvlinks_total"].get<int>();
      rows += "<tr><td>" + HtmlEscape(node["node"].get<std::string>()) + "</td><td class=\"num\">" +
              Num(g["index"].get<int>()) + "</td><td>" + HtmlEscape(g["name"].get<std::string>()) +
              "</td><td>" + HtmlEscape(g["bus_id"].get<std::string>()) + "</td><td" +
              (degraded ? " class=\"bad\"" : "") + ">gen " + Num(g["pcie_gen_current"].get<int>()) +
              " x" + Num(g["pcie_width_current"].get<int>()) + " (max gen " +
              Num(g["pcie_gen_max"].get<int>()) + " x" + Num(g["pcie_width_max"].get<int>()) +
              ")</td><td" + (up < total ? " class=\"bad\">" : ">") +
              (total > 0 ? Num(up) + "/" + Num(total) : std::string("none")) + "</td></tr>\n";
    }
  }
  if (any_gpu) {
    out +=
        "<h3>GPUs (NVML, best link seen during the run)</h3>\n<div class=\"scroll\"><table>"
        "<tr><th>node</th><th>GPU</th><th>name</th><th>bus id</th><th>PCIe</th>"
        "<th>NVLinks up</th></tr>\n" +
        rows + "</table></div>\n";
  }
  out += TopologySection(session);
  out += KernelsTable(session, gpu);
  if (out.empty()) return "";
  return "<section id=\"gpu\"><h2>GPU and NCCL</h2>\n" + out + "</section>\n";
}

}  // namespace

std::optional<std::pair<TimeNs, TimeNs>> TimelineSpan(
    const Session& session, const RecordFacts& facts,
    const std::vector<CollectiveInstance>& instances) {
  std::pair<TimeNs, TimeNs> span;
  if (!WorstStepTimeline(session, facts, instances, &span).empty()) return span;
  if (!WorstInstanceTimeline(session, instances, &span).empty()) return span;
  return std::nullopt;
}

// The reports of ranks run under Nsight tools: ncu's kernels on the roofline chart, each with its
// verdict and stall bars (model/ncu/ncu_html.h), and where every report is. Empty without any.
std::string ToolSection(const Session& session) {
  const std::vector<RankKernelReport> reports = SessionKernelReports(session);
  if (reports.empty()) return "";
  std::string out = "<section id=\"ncu\"><h2>Nsight Compute and Nsight Systems</h2>\n<ul>";
  std::vector<KernelAnalysis> all;
  for (const RankKernelReport& r : reports) {
    out += "<li>" + HtmlEscape(DescribeToolRank(r)) + ": <code>" +
           HtmlEscape(r.host.empty() ? r.path : r.host + ":" + r.path) + "</code>" +
           (r.error.empty() ? "" : " &mdash; " + HtmlEscape(r.error)) + "</li>";
    all.insert(all.end(), r.kernels.begin(), r.kernels.end());
  }
  out += "</ul>\n";
  out += RooflineSvg(all);
  for (const KernelAnalysis& k : all) {
    const KernelVerdict v = VerdictOf(k);
    out += "<h3>" + HtmlEscape(v.kernel) + ": " + HtmlEscape(v.bound) + "</h3>\n<p>" +
           HtmlEscape(v.why) + "</p>\n" + StallBarsSvg(k);
    if (!v.fix.empty()) out += "<p>" + HtmlEscape(v.stall) + ": " + HtmlEscape(v.fix) + "</p>\n";
  }
  return out + "</section>\n";
}

std::string BuildReportHtml(const Session& session,
                            const std::vector<CollectiveInstance>& instances,
                            const std::vector<Finding>& findings) {
  return BuildReportHtml(session, instances, findings, BuildGpuReport(session));
}

std::string BuildReportHtml(const Session& session,
                            const std::vector<CollectiveInstance>& instances,
                            const std::vector<Finding>& findings, const GpuReport& gpu,
                            const BlameModel* blame, const RecordFacts* given_facts) {
  const RecordFacts gathered = given_facts ? RecordFacts{} : GatherRecordFacts(session);
  const RecordFacts& facts = given_facts ? *given_facts : gathered;
  CollectiveOverview overview = SummarizeCollectives(instances);
  std::string job = session.job_id.empty() ? session.session_id : session.job_id;
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      // The page needs nothing from outside and runs no script: say so to the browser, so that
      // even an escaping bug could not load or execute anything.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>rankscope &mdash; job " +
      HtmlEscape(job) + "</title>\n<style>" + kStyle + "</style></head>\n<body>\n";
  out += Header(session);
  out += FindingsSection(session, facts, overview, findings);
  out += BlameSection(session, blame);
  out += Heatmap(session, facts, instances);
  std::string timeline = WorstStepTimeline(session, facts, instances);
  out += timeline.empty() ? WorstInstanceTimeline(session, instances) : timeline;
  out += ToolSection(session);
  out += GpuSection(session, gpu);
  out += RanksTable(session);
  out += ActivityTable(session, facts, overview);
  out += NoticesSection(session);
  out += "<footer><p class=\"dim\">rankscope " + std::string(kRankscopeVersion) +
         " &middot; machine-readable: "
         "report.json (" +
         std::string(kReportSchemaId) + "), timeline: trace.json (ui.perfetto.dev)</p></footer>\n";
  return out + "</body></html>\n";
}

}  // namespace rankscope
