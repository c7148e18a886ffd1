#include "coordinator/sweep/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/format.h"

namespace rankscope {
namespace {

std::string Shown(const CheckVerdict& c) {
  return c.result.error.empty() ? FormatSweepValue(c.result.value, c.result.unit, true) : "error";
}

std::string PromEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\\' || ch == '"') out += '\\';
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out += ch;
  }
  return out;
}

// HtmlEscape for text that may come from a launcher's log: XML 1.0 allows no control
// characters but tab and newline (logs carry ESC, CR), so those become '?'.
std::string XmlEscape(const std::string& s) {
  std::string text = s;
  for (char& ch : text) {
    if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n') ch = '?';
  }
  return HtmlEscape(text);
}

// The grid column a figure falls in: its key, but one column per GPU check for all of a node's
// GPUs (eight GPUs would make eight columns of every check).
std::string GridColumn(const SweepCheckResult& r) { return r.model.empty() ? r.key() : r.name; }

// Every grid column in first-seen order.
std::vector<std::string> CheckKeys(const std::vector<NodeVerdict>& nodes) {
  std::vector<std::string> keys;
  for (const NodeVerdict& n : nodes) {
    for (const CheckVerdict& c : n.checks) {
      if (std::find(keys.begin(), keys.end(), GridColumn(c.result)) == keys.end()) {
        keys.push_back(GridColumn(c.result));
      }
    }
  }
  return keys;
}

// The figure a grid cell shows: the node's only figure in that column or, for a GPU check, the
// GPU with the worst verdict and, among equals, the one farthest from the node's other GPUs'
// median (the odd one out).
const CheckVerdict* FindCheck(const NodeVerdict& n, const std::string& column) {
  std::vector<const CheckVerdict*> in;
  std::vector<double> values;
  for (const CheckVerdict& c : n.checks) {
    if (GridColumn(c.result) != column) continue;
    in.push_back(&c);
    if (c.result.error.empty()) values.push_back(c.result.value);
  }
  if (in.empty()) return nullptr;
  std::sort(values.begin(), values.end());
  const double median = values.empty() ? 0 : values[values.size() / 2];
  auto odd = [median](const CheckVerdict* c) {
    return c->result.error.empty() ? std::abs(c->result.value - median) : 0.0;
  };
  return *std::max_element(in.begin(), in.end(),
                           [&odd](const CheckVerdict* a, const CheckVerdict* b) {
                             if (a->status != b->status) return a->status < b->status;
                             return odd(a) < odd(b);
                           });
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

// A cell's text: the figure, and which GPU it is when the column holds several.
std::string Cell(const CheckVerdict& c) {
  std::string cell = Shown(c);
  if (!c.result.model.empty()) cell += " " + c.result.subject;
  return cell;
}

}  // namespace

std::string SweepMetricName(const std::string& check, const std::string& unit) {
  std::string name = "rankscope_sweep_";
  for (char ch : check) name += (ch == '.' || ch == '-' || ch == ':') ? '_' : ch;
  const std::string suffix = unit == "ratio" || unit == "flops" ? "" : unit;
  if (!suffix.empty() && (name.size() < suffix.size() ||
                          name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)) {
    name += "_" + suffix;
  }
  return name;
}

std::string SweepReportText(const SweepRunInfo& run, const std::vector<NodeVerdict>& nodes) {
  int counts[3] = {0, 0, 0};
  for (const NodeVerdict& n : nodes) ++counts[static_cast<int>(n.status)];
  std::string out = "rankscope sweep " + run.id + "  level " + run.level + "  " +
                    std::to_string(nodes.size()) + " nodes  " +
                    FormatDouble("%.1f s", run.duration_s) + "\n";
  out += "  " + std::to_string(counts[0]) + " pass, " + std::to_string(counts[1]) + " warn, " +
         std::to_string(counts[2]) + " fail\n\n";
  // The grid: one column per check key, in first-seen order.
  const std::vector<std::string> keys = CheckKeys(nodes);
  size_t node_width = 6;
  for (const NodeVerdict& n : nodes) node_width = std::max(node_width, n.node.size() + 2);
  std::vector<size_t> widths;
  for (const std::string& k : keys) widths.push_back(std::max<size_t>(k.size() + 2, 16));
  out += Pad("node", node_width) + Pad("verdict", 9);
  for (size_t i = 0; i < keys.size(); ++i) out += Pad(keys[i], widths[i]);
  out += "\n";
  for (const NodeVerdict& n : nodes) {
    std::string line = Pad(n.node, node_width) + Pad(SweepStatusName(n.status), 9);
    for (size_t i = 0; i < keys.size(); ++i) {
      const CheckVerdict* c = FindCheck(n, keys[i]);
      std::string cell = "-";
      if (c != nullptr) {
        cell = c->status == SweepStatus::kPass ? Shown(*c) : Cell(*c);
        if (c->status != SweepStatus::kPass) cell += c->status == SweepStatus::kFail ? " !!" : " !";
      }
      line += Pad(cell, widths[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  bool header = false;
  for (const NodeVerdict& n : nodes) {
    if (n.status == SweepStatus::kPass) continue;
    if (!header) {
      out += "\nProblems\n";
      header = true;
    }
    if (!n.problem.empty()) {
      out +=
          "  " + std::string(SweepStatusName(n.status)) + "  " + n.node + ": " + n.problem + "\n";
    }
    for (const CheckVerdict& c : n.checks) {
      if (c.status == SweepStatus::kPass) continue;
      out += "  " + std::string(SweepStatusName(c.status)) + "  " + n.node + " " + c.result.key() +
             ": " + c.reason + (c.result.detail.empty() ? "" : " (" + c.result.detail + ")") + "\n";
    }
  }
  for (const std::string& note : run.notes) out += "note: " + note + "\n";
  return out;
}

std::string SweepReportJson(const SweepRunInfo& run, const std::vector<NodeVerdict>& nodes) {
  nlohmann::json j;
  j["sweep"] = {{"id", run.id},
                {"level", run.level},
                {"started_unix_s", run.started_unix_s},
                {"duration_s", run.duration_s},
                {"exit_code", SweepExitCode(nodes)},
                {"notes", run.notes}};
  nlohmann::json list = nlohmann::json::array();
  for (const NodeVerdict& n : nodes) {
    nlohmann::json node = {
        {"node", n.node}, {"status", SweepStatusName(n.status)}, {"summary", n.Summary()}};
    if (!n.problem.empty()) node["problem"] = n.problem;
    nlohmann::json checks = nlohmann::json::array();
    for (const CheckVerdict& c : n.checks) {
      nlohmann::json check = {{"name", c.result.name},
                              {"subject", c.result.subject},
                              {"status", SweepStatusName(c.status)},
                              {"unit", c.result.unit},
                              {"detail", c.result.detail}};
      if (!c.result.model.empty()) check["model"] = c.result.model;
      if (c.result.error.empty()) {
        check["value"] = c.result.value;
      } else {
        check["error"] = c.result.error;
      }
      if (!c.reason.empty()) check["reason"] = c.reason;
      if (c.peer_median) check["peer_median"] = *c.peer_median;
      if (c.past_median) check["past_median"] = *c.past_median;
      if (c.trend) check["trend"] = true;
      checks.push_back(std::move(check));
    }
    node["checks"] = std::move(checks);
    list.push_back(std::move(node));
  }
  j["nodes"] = std::move(list);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string SweepReportHtml(const SweepRunInfo& run, const std::vector<NodeVerdict>& nodes) {
  const std::vector<std::string> keys = CheckKeys(nodes);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'\">\n<title>rankscope sweep " +
      XmlEscape(run.id) +
      "</title>\n<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:right;white-space:nowrap}"
      "th{background:#f4f4f4}td.node{text-align:left;font-weight:bold}"
      ".pass{background:#e6f4ea}.warn{background:#fff4cc}.fail{background:#fbd5d5}"
      ".none{color:#999}</style></head><body>\n<h1>rankscope sweep</h1>\n<p>" +
      XmlEscape(run.id) + " &middot; level " + XmlEscape(run.level) + " &middot; " +
      std::to_string(nodes.size()) + " nodes &middot; " + FormatDouble("%.1f s", run.duration_s) +
      "</p>\n<table>\n<tr><th>node</th><th>verdict</th>";
  for (const std::string& k : keys) out += "<th>" + XmlEscape(k) + "</th>";
  out += "</tr>\n";
  for (const NodeVerdict& n : nodes) {
    const std::string status = SweepStatusName(n.status);
    out += "<tr><td class=\"node\">" + XmlEscape(n.node) + "</td><td class=\"" + status +
           "\" title=\"" + XmlEscape(n.Summary()) + "\">" + status + "</td>";
    for (const std::string& k : keys) {
      const CheckVerdict* c = FindCheck(n, k);
      if (c == nullptr) {
        out += "<td class=\"none\">-</td>";
        continue;
      }
      std::string title = c->reason.empty() ? c->result.detail : c->reason;
      if (!c->result.error.empty()) title = c->result.error;
      if (!c->result.model.empty())
        title = c->result.subject + " (" + c->result.model + "): " + title;
      out += "<td class=\"" + std::string(SweepStatusName(c->status)) + "\" title=\"" +
             XmlEscape(title) + "\">" + XmlEscape(Shown(*c)) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</table>\n";
  std::string problems;
  for (const NodeVerdict& n : nodes) {
    if (n.status == SweepStatus::kPass) continue;
    if (!n.problem.empty()) {
      problems += "<li class=\"" + std::string(SweepStatusName(n.status)) + "\">" +
                  XmlEscape(n.node + ": " + n.problem) + "</li>\n";
    }
    for (const CheckVerdict& c : n.checks) {
      if (c.status == SweepStatus::kPass) continue;
      problems += "<li class=\"" + std::string(SweepStatusName(c.status)) + "\">" +
                  XmlEscape(n.node + " " + c.result.key() + ": " + c.reason) + "</li>\n";
    }
  }
  if (!problems.empty()) out += "<h2>Problems</h2>\n<ul>\n" + problems + "</ul>\n";
  for (const std::string& note : run.notes) out += "<p>note: " + XmlEscape(note) + "</p>\n";
  return out + "</body></html>\n";
}

std::string SweepPrometheus(const SweepRunInfo& run, const std::vector<NodeVerdict>& nodes) {
  std::string out;
  // Figures in unit "total" only grow (lifetime ECC counts): counters, named ..._total.
  auto family = [&out](const std::string& name, const std::string& help) {
    const bool counter = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + (counter ? " counter" : " gauge") +
           "\n";
  };
  family("rankscope_sweep_timestamp_seconds", "When the last sweep started (Unix time).");
  out += "rankscope_sweep_timestamp_seconds " + FormatDouble("%.3f", run.started_unix_s) + "\n";
  family("rankscope_sweep_node_status", "Node verdict of the last sweep: 0 pass, 1 warn, 2 fail.");
  for (const NodeVerdict& n : nodes) {
    out += "rankscope_sweep_node_status{node=\"" + PromEscape(n.node) + "\"} " +
           std::to_string(static_cast<int>(n.status)) + "\n";
  }
  family("rankscope_sweep_check_status",
         "Check verdict of the last sweep: 0 pass, 1 warn, 2 fail.");
  for (const NodeVerdict& n : nodes) {
    for (const CheckVerdict& c : n.checks) {
      out += "rankscope_sweep_check_status{node=\"" + PromEscape(n.node) + "\",check=\"" +
             PromEscape(c.result.name) + "\",subject=\"" + PromEscape(c.result.subject) + "\"} " +
             std::to_string(static_cast<int>(c.status)) + "\n";
    }
  }
  // One family per check figure, all series of a family together (the format requires it).
  std::map<std::string, std::vector<std::string>> series;
  std::map<std::string, std::string> help;
  for (const NodeVerdict& n : nodes) {
    for (const CheckVerdict& c : n.checks) {
      if (!c.result.error.empty()) continue;
      const std::string name = SweepMetricName(c.result.name, c.result.unit);
      help[name] = "rankscope sweep check " + c.result.name + " (" + c.result.unit + ").";
      std::string labels = "node=\"" + PromEscape(n.node) + "\"";
      if (!c.result.subject.empty()) labels += ",subject=\"" + PromEscape(c.result.subject) + "\"";
      series[name].push_back(name + "{" + labels + "} " + FormatDouble("%.9g", c.result.value));
    }
  }
  for (const auto& [name, lines] : series) {
    family(name, help[name]);
    for (const std::string& l : lines) out += l + "\n";
  }
  return out;
}

std::string SweepJUnit(const SweepRunInfo& run, const std::vector<NodeVerdict>& nodes) {
  std::string out =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"rankscope sweep " +
      XmlEscape(run.id) + "\">\n";
  for (const NodeVerdict& n : nodes) {
    int failures = 0, errors = 0;
    for (const CheckVerdict& c : n.checks) failures += c.status == SweepStatus::kFail;
    errors += n.problem.empty() ? 0 : 1;
    const size_t tests = n.checks.size() + (n.problem.empty() ? 0 : 1);
    out += "  <testsuite name=\"" + XmlEscape(n.node) + "\" tests=\"" + std::to_string(tests) +
           "\" failures=\"" + std::to_string(failures) + "\" errors=\"" + std::to_string(errors) +
           "\">\n";
    if (!n.problem.empty()) {
      out += "    <testcase classname=\"" + XmlEscape(n.node) + "\" name=\"node\">\n" +
             "      <error message=\"" + XmlEscape(n.problem) + "\"/>\n    </testcase>\n";
    }
    for (const CheckVerdict& c : n.checks) {
      out += "    <testcase classname=\"" + XmlEscape(n.node) + "\" name=\"" +
             XmlEscape(c.result.key()) + "\">\n";
      if (c.status == SweepStatus::kFail) {
        out += "      <failure message=\"" + XmlEscape(c.reason) + "\"/>\n";
      } else if (c.status == SweepStatus::kWarn) {
        out += "      <system-out>warn: " + XmlEscape(c.reason) + "</system-out>\n";
      }
      out += "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  return out + "</testsuites>\n";
}

}  // namespace rankscope
