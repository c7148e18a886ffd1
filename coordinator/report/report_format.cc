#include "coordinator/report/report_format.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "coordinator/completeness.h"

namespace rankscope {

namespace {

// "3-7, 9, 12-13".

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string ReadableValue(const std::string& key, const nlohmann::json& value) {
  // Durations: "..._ns", and rates of them such as "..._ns_per_instance".
  if (value.is_number() && (EndsWith(key, "_ns") || key.find("_ns_per_") != std::string::npos)) {
    return FormatDuration(static_cast<DurationNs>(std::llround(value.get<double>())));
  }
  if (value.is_number_float()) return FormatDouble("%.4g", value.get<double>());
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    std::string out;
    size_t shown = 0;
    for (const nlohmann::json& item : value) {
      if (shown == 8) {
        out += ", ... (" + std::to_string(value.size()) + " in all)";
        break;
      }
      if (shown++ > 0) out += ", ";
      out += ReadableValue(key, item);
    }
    return out;
  }
  std::string dumped = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (dumped.size() > 80) dumped = dumped.substr(0, 77) + "...";
  return dumped;
}

}  // namespace

std::string FormatSignedDuration(DurationNs d) {
  return d > 0 ? "+" + FormatDuration(d) : FormatDuration(d);
}

std::string FormatClockOffset(DurationNs d) {
  if (d > -kNsPerSec && d < kNsPerSec) return FormatSignedDuration(d);
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%+.6f s", static_cast<double>(d) / 1e9);
  return buffer;
}

std::vector<const Finding*> FindingsWorstFirst(const std::vector<Finding>& findings) {
  std::vector<const Finding*> out;
  out.reserve(findings.size());
  for (const Finding& f : findings) out.push_back(&f);
  std::stable_sort(out.begin(), out.end(), [](const Finding* a, const Finding* b) {
    if (a->severity != b->severity) return a->severity > b->severity;
    if (a->cost_ns != b->cost_ns) return a->cost_ns > b->cost_ns;
    return a->confidence > b->confidence;
  });
  return out;
}

int CountNodes(const Session& session) {
  std::set<std::string> nodes;
  for (const RankData& r : session.ranks) nodes.insert(r.id.node);
  return static_cast<int>(nodes.size());
}

std::string SignalName(int signal) {
  switch (signal) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGALRM:
      return "SIGALRM";
    case SIGTERM:
      return "SIGTERM";
    case SIGXCPU:
      return "SIGXCPU";
    default:
      return "signal " + std::to_string(signal);
  }
}

std::string DescribeExit(const RankData& rank) {
  if (rank.term_signal != 0) {
    std::string out = "killed by " + SignalName(rank.term_signal);
    if (rank.exit_code.has_value()) out += " (exit code " + std::to_string(*rank.exit_code) + ")";
    return out;
  }
  if (rank.exit_code.has_value() && *rank.exit_code != 0) {
    return "exited with code " + std::to_string(*rank.exit_code);
  }
  if (rank.exit_unseen) return "ended without exit() (status not seen)";
  return "";
}

std::vector<RankNotice> CollectNotices(const Session& session) {
  std::vector<RankNotice> out;
  auto add = [&out](int rank, const std::string& node, const std::string& text, bool severe) {
    RankNotice n;
    n.rank = rank;
    n.node = node;
    n.text = text;
    n.severe = severe;
    out.push_back(std::move(n));
  };
  if (const MissingRanks missing = FindMissingRanks(session); missing.count > 0) {
    add(-1, "",
        (missing.count == 1 ? "rank " : "ranks ") + missing.ranges +
            " never registered: no data from them",
        true);
  }

  for (const RankData& r : session.ranks) {
    std::string exit = DescribeExit(r);
    if (!exit.empty()) add(r.id.rank, r.id.node, exit, true);
    if (!r.finished) {
      add(r.id.rank, r.id.node,
          "its final batch never arrived: the data from its last moments is missing", true);
    }
    if (r.dropped_records > 0) {
      add(r.id.rank, r.id.node,
          std::to_string(r.dropped_records) +
              " records dropped (buffers full): counts and times are incomplete",
          true);
    }
    if (!r.clock_fitted && !r.clock_error.empty()) {
      add(r.id.rank, r.id.node, "clock not fitted: " + r.clock_error, false);
    }
    for (const std::string& notice : r.notices) {
      add(r.id.rank, r.id.node, notice, false);
    }
  }
  for (const std::string& note : session.analysis_notes) add(-1, "", note, false);

  // One notice per distinct text, in first-seen order, naming every rank that gave it.
  std::vector<RankNotice> merged;
  std::map<std::pair<std::string, bool>, size_t> index;
  std::vector<std::vector<int>> ranks;
  std::vector<std::vector<std::string>> nodes;
  for (RankNotice& n : out) {
    auto [it, added] = index.try_emplace({n.text, n.severe}, merged.size());
    if (added) {
      merged.push_back(n);
      ranks.emplace_back();
      nodes.emplace_back();
    }
    if (n.rank < 0) continue;
    auto& who = ranks[it->second];
    if (std::find(who.begin(), who.end(), n.rank) == who.end()) who.push_back(n.rank);
    auto& seen = nodes[it->second];
    if (!n.node.empty() && std::find(seen.begin(), seen.end(), n.node) == seen.end()) {
      seen.push_back(n.node);
    }
  }
  for (size_t i = 0; i < merged.size(); ++i) {
    if (ranks[i].empty()) continue;
    std::string where;
    if (nodes[i].size() > 4) {
      where = std::to_string(nodes[i].size()) + " nodes";
    } else {
      for (const std::string& node : nodes[i]) where += (where.empty() ? "" : ", ") + node;
    }
    merged[i].who = (ranks[i].size() == 1 ? "rank " : "ranks ") + FormatRankList(ranks[i]) +
                    (where.empty() ? "" : " (" + where + ")");
  }
  return merged;
}

std::string DescribeWhatWasChecked(const Session& session, const RecordFacts& facts,
                                   const CollectiveOverview& overview) {
  std::string ranks =
      std::to_string(session.ranks.size()) + (session.ranks.size() == 1 ? " rank" : " ranks");
  if (session.SampledFromOutsideOnly()) {
    return "sampled from outside (no call timings): the CPU and I/O of " + ranks +
           " over the window, none standing apart from the others";
  }
  size_t p2p = 0, other = 0;
  for (const RankRecordFacts& r : facts.ranks) {
    p2p += r.p2p;
    other += r.mpi_calls;
  }
  // Point-to-point calls and the other MPI calls (MPI-IO, one-sided), as "; 3200 point-to-point
  // calls and 12 other MPI calls".
  std::string calls;
  if (p2p > 0) calls += std::to_string(p2p) + " point-to-point calls";
  if (other > 0) {
    calls += (calls.empty() ? "" : " and ") + std::to_string(other) + " other MPI calls";
  }
  if (overview.instances == 0) {
    size_t ranges = 0;
    for (const RankRecordFacts& r : facts.ranks) ranges += r.ranges;
    if (!calls.empty()) return calls + " across " + ranks;
    return "no MPI collectives recorded; " + std::to_string(ranges) + " NVTX ranges across " +
           ranks;
  }
  // Most frequent ops first, so the sentence leads with what dominated the run.
  std::vector<std::pair<std::string, int64_t>> ops(overview.by_op.begin(), overview.by_op.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (size_t i = 0; i < ops.size() && i < 3; ++i) {
    if (i > 0) out += (i + 1 == std::min<size_t>(ops.size(), 3)) ? " and " : ", ";
    out += std::to_string(ops[i].second) + " " + ops[i].first;
  }
  if (ops.size() > 3) out += " (+" + std::to_string(ops.size() - 3) + " more ops)";
  out += overview.instances == 1 ? " instance" : " instances";
  if (overview.complete < overview.instances) {
    out += " (" + std::to_string(overview.complete) + " complete)";
  }
  if (!calls.empty()) out += ", " + calls;
  out += " across " + ranks;
  if (overview.max_median_lateness_rank >= 0) {
    out += "; max median lateness " + FormatDuration(overview.max_median_lateness) + " (rank " +
           std::to_string(overview.max_median_lateness_rank) + ")";
  }
  return out;
}

namespace {

// Nested objects read as dotted keys ("cause.range"), a few levels deep.
void Flatten(const std::string& prefix, const nlohmann::json& object, int depth,
             std::vector<std::pair<std::string, std::string>>& out) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it.value().is_object() && depth < 3) {
      Flatten(key, it.value(), depth + 1, out);
    } else {
      out.emplace_back(key, ReadableValue(it.key(), it.value()));
    }
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ReadableEvidence(const nlohmann::json& evidence,
                                                                  size_t max_entries) {
  std::vector<std::pair<std::string, std::string>> out;
  if (evidence.is_object()) {
    Flatten("", evidence, 0, out);
  } else if (!evidence.is_null()) {
    out.emplace_back("evidence", ReadableValue("", evidence));
  }
  if (max_entries != 0 && out.size() > max_entries) out.resize(max_entries);
  return out;
}

}  // namespace rankscope
