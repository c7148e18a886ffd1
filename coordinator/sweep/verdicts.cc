#include "coordinator/sweep/verdicts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "coordinator/sweep/sweep_defaults.h"
#include "core/format.h"
#include "core/robust_stats.h"

namespace rankscope {
namespace {

// The numeric keys of a check's entry in config/sweep.json.
constexpr std::pair<const char*, std::optional<double> CheckLimits::*> kLimitFields[] = {
    {"warn_below", &CheckLimits::warn_below},
    {"fail_below", &CheckLimits::fail_below},
    {"warn_above", &CheckLimits::warn_above},
    {"fail_above", &CheckLimits::fail_above},
    {"peer_warn_below", &CheckLimits::peer_warn_below},
    {"peer_fail_below", &CheckLimits::peer_fail_below},
    {"peer_warn_above", &CheckLimits::peer_warn_above},
    {"peer_fail_above", &CheckLimits::peer_fail_above},
    {"trend_warn_below", &CheckLimits::trend_warn_below},
    {"trend_fail_below", &CheckLimits::trend_fail_below},
    {"trend_warn_increase", &CheckLimits::trend_warn_increase},
    {"trend_fail_increase", &CheckLimits::trend_fail_increase},
};

// One check's entry of config/sweep.json; `where` names it in errors ("checks.mem.bandwidth").
Result<CheckLimits> ParseLimits(const nlohmann::json& entry, const std::string& where,
                                const std::string& source, const CheckLimits& base) {
  if (!entry.is_object())
    return Result<CheckLimits>::Error(source + ": " + where + " is not an object");
  CheckLimits limits = base;
  for (const auto& [key, value] : entry.items()) {
    if (key == "abs") {
      if (!value.is_boolean()) {
        return Result<CheckLimits>::Error(source + ": " + where + ".abs is not true/false");
      }
      limits.abs = value.get<bool>();
      continue;
    }
    std::optional<double>* field = nullptr;
    for (const auto& [field_name, member] : kLimitFields) {
      if (key == field_name) field = &(limits.*member);
    }
    if (field == nullptr) {
      return Result<CheckLimits>::Error(source + ": " + where + ": unknown key '" + key + "'");
    }
    if (!value.is_number()) {
      return Result<CheckLimits>::Error(source + ": " + where + "." + key + " is not a number");
    }
    *field = value.get<double>();
  }
  return limits;
}

void Raise(CheckVerdict* c, SweepStatus s, const std::string& reason) {
  if (s > c->status) {
    c->status = s;
    c->reason = reason;
  }
}

}  // namespace

std::string FormatSweepValue(double v, const std::string& unit, bool compact) {
  if (unit == "bytes_per_second" && v >= 1e12) {
    return FormatDouble(compact ? "%.2f TB/s" : "%.3f TB/s", v / 1e12);
  }
  if (unit == "bytes_per_second") return FormatDouble(compact ? "%.1f GB/s" : "%.2f GB/s", v / 1e9);
  if (unit == "bytes") return FormatBytes(static_cast<Bytes>(std::max(0.0, v)));
  if (unit == "ratio") return FormatDouble("%.1f%%", v * 100);
  if (unit == "flops" && v >= 1e12) {
    return FormatDouble(compact ? "%.1f TF/s" : "%.2f TFLOP/s", v / 1e12);
  }
  if (unit == "flops") return FormatDouble(compact ? "%.1f GF/s" : "%.2f GFLOP/s", v / 1e9);
  if (unit == "seconds") return FormatDuration(static_cast<DurationNs>(v * 1e9));
  if (unit == "celsius") return FormatDouble("%.0f C", v);
  if (unit == "watts") return FormatDouble("%.0f W", v);
  if (unit == "total") return FormatDouble("%g", v);
  return FormatDouble("%g", v) + (compact || unit.empty() ? "" : " " + unit);
}

const char* SweepStatusName(SweepStatus s) {
  switch (s) {
    case SweepStatus::kPass:
      return "pass";
    case SweepStatus::kWarn:
      return "warn";
    case SweepStatus::kFail:
      return "fail";
  }
  return "?";
}

Result<SweepThresholds> ParseSweepThresholds(const std::string& text, const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Result<SweepThresholds>::Error(source + ": not a JSON object");
  }
  SweepThresholds out;
  if (j.contains("checks") && !j["checks"].is_object()) {
    return Result<SweepThresholds>::Error(source + ": \"checks\" is not an object");
  }
  const nlohmann::json checks = j.contains("checks") ? j["checks"] : nlohmann::json::object();
  for (const auto& [name, entry] : checks.items()) {
    Result<CheckLimits> limits = ParseLimits(entry, "checks." + name, source, CheckLimits{});
    if (!limits.ok()) return limits.status();
    out.checks[name] = limits.value();
  }
  if (!j.contains("models")) return out;
  if (!j["models"].is_object()) {
    return Result<SweepThresholds>::Error(source + ": \"models\" is not an object");
  }
  for (const auto& [model, entries_json] : j["models"].items()) {
    if (!entries_json.is_object()) {
      return Result<SweepThresholds>::Error(source + ": models." + model + " is not an object");
    }
    auto& entries = out.models[model];
    for (const auto& [name, entry] : entries_json.items()) {
      // Parsed on their own: For() lays them over the general entry when judging.
      Result<CheckLimits> limits =
          ParseLimits(entry, "models." + model + "." + name, source, CheckLimits{});
      if (!limits.ok()) return limits.status();
      entries[name] = limits.value();
    }
  }
  return out;
}

std::optional<CheckLimits> SweepThresholds::For(const std::string& name,
                                                const std::string& model) const {
  std::optional<CheckLimits> out;
  if (auto it = checks.find(name); it != checks.end()) out = it->second;
  if (model.empty()) return out;
  auto m = models.find(model);
  if (m == models.end()) return out;
  auto entry = m->second.find(name);
  if (entry == m->second.end()) return out;
  CheckLimits merged = out.value_or(CheckLimits{});
  const CheckLimits& over = entry->second;
  for (const auto& [field_name, member] : kLimitFields) {
    if (over.*member) merged.*member = over.*member;
  }
  if (over.abs) merged.abs = true;
  return merged;
}

const SweepThresholds& DefaultSweepThresholds() {
  static const SweepThresholds defaults = [] {
    Result<SweepThresholds> parsed = ParseSweepThresholds(kDefaultSweepConfig, "config/sweep.json");
    return parsed.ok() ? parsed.value() : SweepThresholds{};
  }();
  return defaults;
}

std::string NodeVerdict::Summary() const {
  if (!problem.empty()) return problem;
  for (const CheckVerdict& c : checks) {
    if (c.status == status && status != SweepStatus::kPass) return c.result.key() + ": " + c.reason;
  }
  return "all checks pass";
}

std::vector<NodeVerdict> JudgeSweep(const std::vector<SweepNodeInput>& nodes,
                                    const SweepThresholds& thresholds) {
  // Every node's figures per peer group, for the peer comparison: a node figure is compared
  // with the same figure (name and subject) of the other nodes; a GPU figure with the same
  // check on every GPU of the same model on the other nodes.
  auto group_of = [](const SweepCheckResult& r) {
    return r.model.empty() ? r.key() : r.name + "@" + r.model;
  };
  std::map<std::string, std::vector<std::pair<size_t, double>>> by_group;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const SweepCheckResult& r : nodes[i].results) {
      if (r.error.empty()) by_group[group_of(r)].emplace_back(i, r.value);
    }
  }
  std::vector<NodeVerdict> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const SweepNodeInput& in = nodes[i];
    NodeVerdict v;
    v.node = in.node;
    if (!in.answered) {
      v.status = SweepStatus::kFail;
      v.problem = "did not answer: " + in.problem;
      out.push_back(std::move(v));
      continue;
    }
    for (const SweepCheckResult& r : in.results) {
      // The anchor is an input of clock.offset, not a figure of its own.
      if (r.name == "clock.realtime_minus_monotonic") continue;
      CheckVerdict c;
      c.result = r;
      if (!r.error.empty()) {
        Raise(&c, SweepStatus::kFail, r.error);
        v.checks.push_back(std::move(c));
        continue;
      }
      if (const std::optional<CheckLimits> limits = thresholds.For(r.name, r.model)) {
        const CheckLimits& l = *limits;
        const double x = l.abs ? std::fabs(r.value) : r.value;
        const std::string shown = FormatSweepValue(r.value, r.unit);
        if (l.fail_below && x < *l.fail_below) {
          Raise(&c, SweepStatus::kFail, shown + " < " + FormatSweepValue(*l.fail_below, r.unit));
        } else if (l.warn_below && x < *l.warn_below) {
          Raise(&c, SweepStatus::kWarn, shown + " < " + FormatSweepValue(*l.warn_below, r.unit));
        }
        if (l.fail_above && x > *l.fail_above) {
          Raise(&c, SweepStatus::kFail, shown + " > " + FormatSweepValue(*l.fail_above, r.unit));
        } else if (l.warn_above && x > *l.warn_above) {
          Raise(&c, SweepStatus::kWarn, shown + " > " + FormatSweepValue(*l.warn_above, r.unit));
        }
        std::vector<double> peers;
        for (const auto& [node, value] : by_group[group_of(r)]) {
          if (node != i) peers.push_back(value);
        }
        const bool by_peers =
            l.peer_warn_below || l.peer_fail_below || l.peer_warn_above || l.peer_fail_above;
        if (by_peers && peers.size() >= 2) {
          const double median = Median(peers);
          c.peer_median = median;
          // Against peers at 0 (no errors anywhere else), any count is infinitely more.
          const double ratio = median > 0    ? r.value / median
                               : r.value > 0 ? std::numeric_limits<double>::infinity()
                                             : 1.0;
          const std::string why =
              (std::isinf(ratio) ? shown + " where the other nodes' median is "
                                 : shown + " is " + FormatDouble("%.0f%%", ratio * 100) +
                                       " of the other nodes' median ") +
              FormatSweepValue(median, r.unit) + (r.model.empty() ? "" : " (" + r.model + ")");
          if ((l.peer_fail_below && ratio < *l.peer_fail_below) ||
              (l.peer_fail_above && ratio > *l.peer_fail_above)) {
            Raise(&c, SweepStatus::kFail, why);
          } else if ((l.peer_warn_below && ratio < *l.peer_warn_below) ||
                     (l.peer_warn_above && ratio > *l.peer_warn_above)) {
            Raise(&c, SweepStatus::kWarn, why);
          }
        }
      }
      v.status = std::max(v.status, c.status);
      v.checks.push_back(std::move(c));
    }
    for (const CheckVerdict& c : v.checks) v.status = std::max(v.status, c.status);
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<SweepCheckResult> ClockChecks(const std::vector<SweepCheckResult>& results,
                                          const Result<ClockModel>& fit,
                                          double coordinator_realtime_minus_monotonic) {
  auto anchor = std::find_if(results.begin(), results.end(), [](const SweepCheckResult& r) {
    return r.name == "clock.realtime_minus_monotonic" && r.error.empty();
  });
  if (anchor == results.end()) return {};
  if (!fit.ok()) {
    return {{"clock.offset", "", 0, "seconds", "no clock fit: " + fit.status().message(), ""}};
  }
  // node realtime = node mono + a_node; coordinator mono = node mono + offset; so at one
  // instant node realtime - coordinator realtime = a_node - offset - a_coordinator.
  const double offset_s = static_cast<double>(fit.value().offset_ns) / 1e9;
  const double wall_offset = anchor->value - offset_s - coordinator_realtime_minus_monotonic;
  const double uncertainty = static_cast<double>(fit.value().uncertainty_ns) / 1e9;
  return {{"clock.offset", "", wall_offset, "seconds", "",
           "wall clock minus the coordinator's, ±" + FormatSweepValue(uncertainty, "seconds")},
          {"clock.uncertainty", "", uncertainty, "seconds", "",
           std::to_string(fit.value().samples_used) + " of " +
               std::to_string(fit.value().samples_total) + " clock samples used"}};
}

void ApplyTrends(const SweepPast& past, const SweepThresholds& thresholds,
                 std::vector<NodeVerdict>* nodes) {
  for (NodeVerdict& n : *nodes) {
    for (CheckVerdict& c : n.checks) {
      if (!c.result.error.empty()) continue;
      const std::optional<CheckLimits> limits = thresholds.For(c.result.name, c.result.model);
      if (!limits) continue;
      const CheckLimits& l = *limits;
      const bool falls = l.trend_warn_below || l.trend_fail_below;
      const bool rises = l.trend_warn_increase || l.trend_fail_increase;
      if (!falls && !rises) continue;
      auto values = past.find({n.node, c.result.key()});
      if (values == past.end() || values->second.empty()) continue;
      const std::vector<double>& history = values->second;
      const std::string over = " over its last " + std::to_string(history.size()) + " sweeps";
      const SweepStatus before = c.status;
      if (rises) {
        // A counter only grows: any rise past the node's highest earlier figure is new damage.
        const double most = *std::max_element(history.begin(), history.end());
        const double rise = c.result.value - most;
        const std::string why = "trend: " + FormatSweepValue(c.result.value, c.result.unit) +
                                ", up " + FormatSweepValue(rise, c.result.unit) +
                                " from this node's highest " +
                                FormatSweepValue(most, c.result.unit) + over;
        if (l.trend_fail_increase && rise > *l.trend_fail_increase) {
          Raise(&c, SweepStatus::kFail, why);
        } else if (l.trend_warn_increase && rise > *l.trend_warn_increase) {
          Raise(&c, SweepStatus::kWarn, why);
        }
      }
      if (falls && history.size() >= 2) {
        const double median = Median(history);
        c.past_median = median;
        if (median > 0) {
          const double ratio = c.result.value / median;
          const std::string why = "trend: " + FormatSweepValue(c.result.value, c.result.unit) +
                                  " is " + FormatDouble("%.0f%%", ratio * 100) +
                                  " of this node's median " +
                                  FormatSweepValue(median, c.result.unit) + over;
          if (l.trend_fail_below && ratio < *l.trend_fail_below) {
            Raise(&c, SweepStatus::kFail, why);
          } else if (l.trend_warn_below && ratio < *l.trend_warn_below) {
            Raise(&c, SweepStatus::kWarn, why);
          }
        }
      }
      if (c.status != before) c.trend = true;
      n.status = std::max(n.status, c.status);
    }
  }
}

std::vector<SweepCheckResult> PairChecksFor(const std::string& node,
                                            const std::vector<PairResult>& pairs) {
  const PairResult* best = nullptr;
  std::string detail, errors;
  int mine = 0;
  for (const PairResult& p : pairs) {
    if (p.a != node && p.b != node) continue;
    ++mine;
    const std::string& peer = p.a == node ? p.b : p.a;
    if (!p.error.empty()) {
      errors += (errors.empty() ? "" : "; ") + ("with " + peer + ": " + p.error);
      continue;
    }
    detail += (detail.empty() ? "" : ", ") +
              ("to " + peer + " " + FormatSweepValue(p.latency_s, "seconds") + " " +
               FormatSweepValue(p.bandwidth, "bytes_per_second"));
    if (best == nullptr || p.latency_s < best->latency_s) best = &p;
  }
  if (mine == 0) return {};
  if (best == nullptr) return {{"mpi.pingpong", "", 0, "", errors, ""}};
  double bandwidth = 0;
  for (const PairResult& p : pairs) {
    if ((p.a == node || p.b == node) && p.error.empty())
      bandwidth = std::max(bandwidth, p.bandwidth);
  }
  if (!errors.empty()) detail += "; failed " + errors;
  std::vector<SweepCheckResult> out = {
      {"mpi.latency", "", best->latency_s, "seconds", "", "best pair; " + detail},
      {"mpi.bandwidth", "", bandwidth, "bytes_per_second", "", "best pair; " + detail}};
  // NCCL across the pair's GPUs, judged the same way: by the node's best pair.
  const PairResult* best_nccl = nullptr;
  std::string nccl_detail, nccl_errors;
  for (const PairResult& p : pairs) {
    if ((p.a != node && p.b != node) || !p.error.empty()) continue;
    const std::string& peer = p.a == node ? p.b : p.a;
    if (!p.nccl_error.empty()) {
      nccl_errors += (nccl_errors.empty() ? "" : "; ") + ("with " + peer + ": " + p.nccl_error);
    } else if (p.nccl_busbw > 0) {
      nccl_detail += (nccl_detail.empty() ? "" : ", ") +
                     ("to " + peer + " " + FormatSweepValue(p.nccl_busbw, "bytes_per_second") +
                      " over " + std::to_string(p.nccl_gpus) + " GPUs");
      if (best_nccl == nullptr || p.nccl_busbw > best_nccl->nccl_busbw) best_nccl = &p;
    }
  }
  if (best_nccl != nullptr) {
    if (!nccl_errors.empty()) nccl_detail += "; failed " + nccl_errors;
    out.push_back({"nccl.pair_busbw", "", best_nccl->nccl_busbw, "bytes_per_second", "",
                   "best pair's all-reduce bus bandwidth; " + nccl_detail});
  } else if (!nccl_errors.empty()) {
    out.push_back({"nccl.pair_busbw", "", 0, "", nccl_errors, ""});
  }
  return out;
}

std::optional<std::string> DrainReason(const NodeVerdict& node) {
  if (!node.problem.empty()) return std::nullopt;
  for (const CheckVerdict& c : node.checks) {
    if (c.status == SweepStatus::kFail && c.result.error.empty()) {
      return c.result.key() + ": " + c.reason;
    }
  }
  return std::nullopt;
}

int SweepExitCode(const std::vector<NodeVerdict>& nodes) {
  SweepStatus worst = SweepStatus::kPass;
  for (const NodeVerdict& n : nodes) worst = std::max(worst, n.status);
  return static_cast<int>(worst);
}

}  // namespace rankscope
