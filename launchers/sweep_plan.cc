#include "launchers/sweep_plan.h"

#include <algorithm>
#include <sstream>

namespace rankscope {

std::vector<SinfoNode> ParseSinfoNodes(const std::string& text) {
  std::vector<SinfoNode> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t a = line.find('|');
    const size_t b = a == std::string::npos ? a : line.find('|', a + 1);
    if (b == std::string::npos || a == 0) continue;
    SinfoNode n{line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)};
    auto same = [&n](const SinfoNode& o) { return o.name == n.name; };
    if (std::none_of(out.begin(), out.end(), same)) out.push_back(std::move(n));
  }
  return out;
}

std::vector<SweepTarget> PlanSweepNodes(const std::vector<std::string>& requested,
                                        const std::vector<SinfoNode>& known) {
  std::vector<std::string> names = requested;
  if (names.empty()) {
    for (const SinfoNode& n : known) names.push_back(n.name);
  }
  std::vector<SweepTarget> out;
  for (const std::string& name : names) {
    SweepTarget t;
    t.node = name;
    auto it = std::find_if(known.begin(), known.end(),
                           [&name](const SinfoNode& n) { return n.name == name; });
    if (it == known.end()) {
      t.fail = true;
      t.why_not = "unknown to SLURM (sinfo does not list it)";
    } else {
      const std::string& s = it->state;
      const std::string why = it->reason.empty() || it->reason == "none" ? "" : ": " + it->reason;
      if (s.find("down") != std::string::npos || s.find("fail") != std::string::npos ||
          (!s.empty() && s.back() == '*')) {
        t.fail = true;
        t.drained = true;
        t.why_not = "node is down or not responding (sinfo: " + s + why + ")";
      } else if (s.rfind("drain", 0) == 0 || s.rfind("drng", 0) == 0) {
        t.drained = true;
        t.why_not = "not swept: already drained (sinfo: " + s + why + ")";
      } else {
        t.run = true;
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::string> ParseHostfile(const std::string& text) {
  std::vector<std::string> hosts;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string host;
    if (!(words >> host)) continue;
    host = host.substr(0, host.find(':'));
    if (!host.empty() && std::find(hosts.begin(), hosts.end(), host) == hosts.end()) {
      hosts.push_back(host);
    }
  }
  return hosts;
}

std::vector<std::vector<std::pair<size_t, size_t>>> PairRounds(size_t nodes) {
  std::vector<std::vector<std::pair<size_t, size_t>>> rounds;
  if (nodes < 2) return rounds;
  if (nodes == 2) return {{{0, 1}}};
  std::vector<std::pair<size_t, size_t>> ring;
  for (size_t i = 0; i < nodes; ++i) ring.emplace_back(i, (i + 1) % nodes);
  // Greedy: each pair into the first round where neither node is busy yet.
  for (const auto& pair : ring) {
    bool placed = false;
    for (auto& round : rounds) {
      const bool busy = std::any_of(round.begin(), round.end(), [&pair](const auto& p) {
        return p.first == pair.first || p.second == pair.first || p.first == pair.second ||
               p.second == pair.second;
      });
      if (!busy) {
        round.push_back(pair);
        placed = true;
        break;
      }
    }
    if (!placed) rounds.push_back({pair});
  }
  return rounds;
}

std::vector<std::string> DrainCommand(const std::string& node, const std::string& summary) {
  std::string reason = "rankscope: " + summary;
  if (reason.size() > 120) reason = reason.substr(0, 117) + "...";
  return {"scontrol", "update", "NodeName=" + node, "State=DRAIN", "Reason=" + reason};
}

}  // namespace rankscope
