#include "coordinator/analysis/dataloader_analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "coordinator/analysis/describe.h"
#include "coordinator/analysis/range_timeline.h"
#include "core/format.h"
#include "core/robust_stats.h"

namespace rankscope {
namespace {

// One rank's data time, step by step.
struct RankSteps {
  int rank = -1;
  bool from_step_ranges = false;
  bool from_first_kernel = false;     // no data ranges: time before the step's first kernel launch
  std::vector<DurationNs> data;       // per step: time covered by data ranges
  std::vector<DurationNs> step_time;  // per step: the window's length (step ranges only)
  std::map<std::string, DurationNs> by_name;  // data time per range name, over all steps
};

DurationNs UnionLength(std::vector<std::pair<TimeNs, TimeNs>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  DurationNs total = 0;
  TimeNs reach = std::numeric_limits<TimeNs>::min();
  for (const auto& [s, e] : intervals) {
    const TimeNs from = std::max(s, reach);
    if (e > from) {
      total += e - from;
      reach = e;
    }
  }
  return total;
}

// Without data ranges, but with step ranges and CUPTI records: per step, the time from the
// step's start (the previous step's end) to its first kernel launch call (cudaLaunchKernel,
// cuLaunchKernelEx, a graph launch), or its first kernel's start when launch calls were not
// traced. Host time before the GPU gets work: where a data loader shows.
void FirstKernelSteps(const RankData& rank, const std::vector<size_t>& outer, RankSteps* out) {
  std::vector<TimeNs> launches, kernels;
  for (const GpuActivityRecord& g : rank.gpu) {
    if (g.kind == GpuActivityKind::kRuntime && g.name.find("Launch") != std::string::npos) {
      launches.push_back(g.start);
    } else if (g.kind == GpuActivityKind::kKernel) {
      kernels.push_back(g.start);
    }
  }
  std::vector<TimeNs>& starts = launches.empty() ? kernels : launches;
  if (starts.empty()) return;
  std::sort(starts.begin(), starts.end());
  for (size_t k = 0; k < outer.size(); ++k) {
    const RangeRecord& step = rank.ranges[outer[k]];
    const TimeNs begin = k == 0 ? step.start : rank.ranges[outer[k - 1]].end;
    auto first = std::lower_bound(starts.begin(), starts.end(), begin);
    if (first == starts.end() || *first >= step.end) continue;  // no GPU work in this step
    out->data.push_back(*first - begin);
    out->step_time.push_back(std::max<DurationNs>(step.end - begin, 0));
    out->by_name["before the first kernel launch"] += *first - begin;
  }
  out->from_step_ranges = true;
  out->from_first_kernel = true;
}

RankSteps StepsOf(const RankData& rank, const DataloaderOptions& options) {
  RankSteps out;
  out.rank = rank.id.rank;
  // Names repeat every step; match each distinct one once.
  std::map<std::string, std::pair<bool, bool>> kind_by_name;  // name -> (is step, is data)
  std::vector<size_t> steps, data;
  for (size_t i = 0; i < rank.ranges.size(); ++i) {
    const std::string& name = rank.ranges[i].name;
    auto it = kind_by_name.find(name);
    if (it == kind_by_name.end()) {
      const bool is_step = std::regex_search(name, options.step_pattern);
      const bool is_data = !is_step && std::regex_search(name, options.data_pattern);
      it = kind_by_name.emplace(name, std::make_pair(is_step, is_data)).first;
    }
    if (it->second.first) steps.push_back(i);
    if (it->second.second) data.push_back(i);
  }
  auto by_start = [&](size_t a, size_t b) {
    const RangeRecord& ra = rank.ranges[a];
    const RangeRecord& rb = rank.ranges[b];
    return ra.start != rb.start ? ra.start < rb.start : ra.end > rb.end;
  };
  std::sort(steps.begin(), steps.end(), by_start);
  std::sort(data.begin(), data.end(), by_start);
  auto outer_steps = [&] {
    std::vector<size_t> outer;
    for (size_t i : steps) {
      const RangeRecord& r = rank.ranges[i];
      if (!outer.empty() && r.end <= rank.ranges[outer.back()].end) continue;  // nested
      outer.push_back(i);
    }
    return outer;
  };
  if (data.empty()) {
    if (!steps.empty() && !rank.gpu.empty()) FirstKernelSteps(rank, outer_steps(), &out);
    return out;
  }

  if (steps.empty()) {
    // Each stretch of overlapping data ranges is one step's loading.
    std::vector<std::pair<TimeNs, TimeNs>> group;
    TimeNs reach = std::numeric_limits<TimeNs>::min();
    auto flush = [&] {
      if (!group.empty()) out.data.push_back(UnionLength(group));
      group.clear();
    };
    for (size_t i : data) {
      const RangeRecord& r = rank.ranges[i];
      if (r.start >= reach) flush();
      group.emplace_back(r.start, r.end);
      out.by_name[r.name] += r.end - r.start;
      reach = std::max(reach, r.end);
    }
    flush();
    return out;
  }

  out.from_step_ranges = true;
  const std::vector<size_t> outer = outer_steps();
  // Loading often happens between step ranges (`for batch in loader:` outside the annotated
  // step), so a step owns the time since the previous step ended.
  const RangeTimeline timeline(&rank.ranges);
  const bool data_on_step_threads = std::any_of(data.begin(), data.end(), [&](size_t i) {
    return std::any_of(outer.begin(), outer.end(),
                       [&](size_t s) { return rank.ranges[s].tid == rank.ranges[i].tid; });
  });
  for (size_t k = 0; k < outer.size(); ++k) {
    const RangeRecord& step = rank.ranges[outer[k]];
    const TimeNs begin = k == 0 ? step.start : rank.ranges[outer[k - 1]].end;
    const TimeNs end = step.end;
    std::optional<uint32_t> tid;
    if (data_on_step_threads) tid = step.tid;
    std::vector<std::pair<TimeNs, TimeNs>> clipped;
    for (size_t i : timeline.Overlapping(begin, end, tid)) {
      const RangeRecord& r = rank.ranges[i];
      if (!kind_by_name.at(r.name).second) continue;
      const TimeNs s = std::max(r.start, begin);
      const TimeNs e = std::min(r.end, end);
      if (e <= s) continue;
      clipped.emplace_back(s, e);
      out.by_name[r.name] += e - s;
    }
    out.data.push_back(UnionLength(std::move(clipped)));
    out.step_time.push_back(std::max<DurationNs>(end - begin, 0));
  }
  return out;
}

std::string NamesLabel(const std::vector<std::pair<DurationNs, std::string>>& names) {
  std::string out = "'" + names[0].second + "'";
  // A second name is worth showing only when it carries a real share of the time.
  if (names.size() > 1 && names[1].first * 4 >= names[0].first)
    out += " and '" + names[1].second + "'";
  return out;
}

// The finding on one rank, with its figures `v` (frac_skewed, median_step and range_names
// filled in here).
Finding MakeFinding(const Session& session, const RankSteps& rank, DataloaderFigures v,
                    const DataloaderOptions& options) {
  Finding f = FindingOnRank(session, FindingKind::kDataloaderSkew, rank.rank);
  f.cost_ns = v.total_excess;
  const DurationNs median_step = MedianNs(rank.step_time);
  f.severity =
      rank.from_step_ranges && static_cast<double>(v.median_excess) >
                                   options.critical_step_fraction * static_cast<double>(median_step)
          ? Severity::kCritical
          : Severity::kWarning;
  const double frac = static_cast<double>(v.steps_skewed) / v.steps;
  const double margin = std::clamp(1.0 - 0.5 * static_cast<double>(v.threshold) /
                                             std::max(static_cast<double>(v.median_excess), 1.0),
                                   0.0, 1.0);
  f.confidence = std::clamp(frac * margin, 0.0, 1.0);

  std::vector<std::pair<DurationNs, std::string>> names;
  for (const auto& [name, ns] : rank.by_name) names.emplace_back(ns, name);
  std::sort(names.begin(), names.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> name_list;
  for (const auto& n : names) name_list.push_back(n.second);

  f.step_source = rank.from_first_kernel  ? StepSource::kFirstKernelLaunch
                  : rank.from_step_ranges ? StepSource::kStepRanges
                                          : StepSource::kDataRanges;
  v.frac_skewed = frac;
  if (rank.from_step_ranges) v.median_step = median_step;
  v.range_names = std::move(name_list);

  const std::string label = rank.from_first_kernel
                                ? "the part of each step before its first GPU kernel launch"
                                : NamesLabel(names);
  f.summary = RankLabel(session, rank.rank) + " spends " + FormatDuration(v.median_data) +
              " per step in " + label + " vs " + FormatDuration(v.others_median_data) +
              " on the other ranks (in " + std::to_string(v.steps_skewed) + "/" +
              std::to_string(v.steps) + " steps).";
  f.summary += ProcessEvidence(
      session, rank.rank, v.total_excess,
      {"the loader is I/O-heavy on this rank", "decoding or augmentation is CPU-bound",
       "the loader waits (sleep, network, a lock, or its worker processes)"},
      &f);

  f.focus = label;
  f.dataloader = std::move(v);
  return f;
}

}  // namespace

std::vector<Finding> FindDataloaderSkew(const Session& session, const DataloaderOptions& options) {
  std::vector<RankSteps> ranks;
  for (const RankData& r : session.ranks) {
    RankSteps steps = StepsOf(r, options);
    if (!steps.data.empty()) ranks.push_back(std::move(steps));
  }
  if (ranks.size() < 2) return {};

  // Per step k, the other ranks' median data time, for every rank that has step k.
  size_t max_steps = 0;
  for (const RankSteps& r : ranks) max_steps = std::max(max_steps, r.data.size());
  std::vector<std::vector<std::optional<double>>> others_median(
      ranks.size(), std::vector<std::optional<double>>(max_steps));
  for (size_t k = 0; k < max_steps; ++k) {
    std::vector<std::pair<double, size_t>> values;  // (data time, index in ranks)
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (k < ranks[i].data.size()) values.emplace_back(static_cast<double>(ranks[i].data[k]), i);
    }
    if (values.size() < 2) continue;
    std::sort(values.begin(), values.end());
    std::vector<double> sorted;
    for (const auto& v : values) sorted.push_back(v.first);
    for (size_t pos = 0; pos < values.size(); ++pos) {
      others_median[values[pos].second][k] = MedianWithout(sorted, pos);
    }
  }

  // Each rank's step-to-step variation around its own median: the noise a healthy rank shows.
  // (Deviations from the other ranks' median would vanish with two ranks.)
  std::vector<std::vector<double>> deviations(ranks.size());
  std::vector<DurationNs> median_data(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    median_data[i] = MedianNs(ranks[i].data);
    for (DurationNs d : ranks[i].data) {
      deviations[i].push_back(static_cast<double>(d - median_data[i]));
    }
  }

  std::vector<Finding> findings;
  for (size_t i = 0; i < ranks.size(); ++i) {
    std::vector<double> excess, reference;
    for (size_t k = 0; k < ranks[i].data.size(); ++k) {
      if (!others_median[i][k].has_value()) continue;
      reference.push_back(*others_median[i][k]);
      excess.push_back(static_cast<double>(ranks[i].data[k]) - *others_median[i][k]);
    }
    DataloaderFigures v;
    v.steps = static_cast<int>(excess.size());
    if (v.steps < options.min_steps) continue;
    auto count_above = [&](double threshold) {
      return static_cast<int>(
          std::count_if(excess.begin(), excess.end(), [&](double x) { return x > threshold; }));
    };
    const auto min_excess = static_cast<double>(options.min_excess);
    // Cheap pre-check before pooling the other ranks' deviations.
    if (count_above(min_excess) < options.min_frac_steps * v.steps) continue;
    std::vector<double> pooled;
    for (size_t o = 0; o < ranks.size(); ++o) {
      if (o != i) pooled.insert(pooled.end(), deviations[o].begin(), deviations[o].end());
    }
    v.noise = static_cast<DurationNs>(std::llround(RobustSigma(std::move(pooled))));
    const double threshold = std::max(min_excess, options.noise_k * static_cast<double>(v.noise));
    v.threshold = static_cast<DurationNs>(std::llround(threshold));
    v.steps_skewed = count_above(threshold);
    if (v.steps_skewed < options.min_frac_steps * v.steps || v.steps_skewed == 0) continue;
    v.median_data = median_data[i];
    v.others_median_data = static_cast<DurationNs>(std::llround(Median(reference)));
    v.median_excess = static_cast<DurationNs>(std::llround(Median(excess)));
    double total = 0;
    for (double x : excess) total += std::max(x, 0.0);
    v.total_excess = static_cast<DurationNs>(std::llround(total));
    findings.push_back(MakeFinding(session, ranks[i], std::move(v), options));
  }
  return findings;
}

}  // namespace rankscope
