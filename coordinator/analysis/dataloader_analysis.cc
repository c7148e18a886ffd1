#include "coordinator/analysis/dataloader_analysis.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "coordinator/analysis/describe.h"
#include "coordinator/analysis/range_timeline.h"
#include "core/format.h"
#include "core/robust_stats.h"
#include "model/gpu/launch_latency.h"

namespace rankscope {
namespace {

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

// Whether a range name is a step's or a data range's (names repeat every step: each distinct
// one is matched once).
class RangeKinds {
 public:
  explicit RangeKinds(const DataloaderOptions& options) : options_(options) {}
  bool Step(const std::string& name) { return Of(name).first; }
  bool Data(const std::string& name) { return Of(name).second; }

 private:
  const std::pair<bool, bool>& Of(const std::string& name) {
    auto it = kinds_.find(name);
    if (it == kinds_.end()) {
      const bool is_step = std::regex_search(name, options_.step_pattern);
      const bool is_data = !is_step && std::regex_search(name, options_.data_pattern);
      it = kinds_.emplace(name, std::make_pair(is_step, is_data)).first;
    }
    return it->second;
  }
  const DataloaderOptions& options_;
  std::map<std::string, std::pair<bool, bool>> kinds_;
};

bool ByStart(const RangeRecord& a, const RangeRecord& b) {
  return a.start != b.start ? a.start < b.start : a.end > b.end;
}

// The outermost of `steps` (sorted by ByStart) that are not inside the one before (whose end is
// *last_end, carried between calls).
std::vector<const RangeRecord*> OuterSteps(const std::vector<const RangeRecord*>& steps,
                                           std::optional<TimeNs>* last_end) {
  std::vector<const RangeRecord*> outer;
  for (const RangeRecord* r : steps) {
    if (*last_end && r->end <= **last_end) continue;  // nested
    outer.push_back(r);
    *last_end = r->end;
  }
  return outer;
}

// The data time of one step [begin, end) on thread tid (every thread when nullopt): the union
// of the data ranges there, clipped; per name into *by_name.
DurationNs DataInStep(const RangeTimeline& timeline, RangeKinds* kinds, TimeNs begin, TimeNs end,
                      std::optional<uint32_t> tid, std::map<std::string, DurationNs>* by_name) {
  std::vector<std::pair<TimeNs, TimeNs>> clipped;
  for (size_t i : timeline.Overlapping(begin, end, tid)) {
    const RangeRecord& r = timeline.range(i);
    if (!kinds->Data(r.name)) continue;
    const TimeNs s = std::max(r.start, begin);
    const TimeNs e = std::min(r.end, end);
    if (e <= s) continue;
    clipped.emplace_back(s, e);
    (*by_name)[r.name] += e - s;
  }
  return UnionLength(std::move(clipped));
}

// The start times a step's first GPU work is read from: kernel launch calls (cudaLaunchKernel,
// cuLaunchKernelEx, a graph launch), and kernels' starts for when launches were not traced.
struct GpuStarts {
  std::vector<TimeNs> launches, kernels;
  // Where g's start goes: launches, kernels, or neither (nullptr).
  std::vector<TimeNs>* Of(const GpuActivityRecord& g) {
    if (IsKernelLaunch(g)) return &launches;
    return g.kind == GpuActivityKind::kKernel ? &kernels : nullptr;
  }
  void Add(const GpuActivityRecord& g) {
    if (std::vector<TimeNs>* into = Of(g)) into->push_back(g.start);
  }
  void Sort() {
    std::sort(launches.begin(), launches.end());
    std::sort(kernels.begin(), kernels.end());
  }
};

// The time from a step's start to the first of `starts` (sorted) in it; nullopt when there is no
// GPU work in the step.
std::optional<DurationNs> BeforeFirst(const std::vector<TimeNs>& starts, TimeNs begin, TimeNs end) {
  auto first = std::lower_bound(starts.begin(), starts.end(), begin);
  if (first == starts.end() || *first >= end) return std::nullopt;
  return *first - begin;
}

// One rank's series, folded step by step in every reading; which reading it gets is decided at
// the end (Take), from what the whole run had.
class StepFold {
 public:
  StepFold(int rank, const DataloaderOptions& options) : rank_(rank), kinds_(options) {}

  // The records of one stretch of the run: the ranges that overlap it and the GPU activity
  // starting in it, from the last step's end on (CarryFrom), and which of its step and data
  // ranges end in it (`owned`: those not read before).
  void Add(const std::vector<RangeRecord>& ranges, const std::vector<GpuActivityRecord>& gpu,
           const std::function<bool(const RangeRecord&)>& owned) {
    const RangeTimeline timeline(&ranges);
    GpuStarts starts;
    for (const GpuActivityRecord& g : gpu) starts.Add(g);
    starts.Sort();
    any_gpu_ |= !gpu.empty();
    any_launch_ |= !starts.launches.empty();
    any_kernel_ |= !starts.kernels.empty();
    std::vector<const RangeRecord*> steps, data;
    for (const RangeRecord& r : ranges) {
      if (!owned(r)) continue;
      if (kinds_.Step(r.name)) steps.push_back(&r);
      if (kinds_.Data(r.name)) data.push_back(&r);
    }
    auto by_start = [](const RangeRecord* a, const RangeRecord* b) { return ByStart(*a, *b); };
    std::sort(steps.begin(), steps.end(), by_start);
    std::sort(data.begin(), data.end(), by_start);
    for (const RangeRecord* r : data) {
      data_tids_.insert(r->tid);
      AddToStretch(*r);
    }
    any_step_ |= !steps.empty();
    std::optional<TimeNs> previous_end = last_outer_end_;  // a step owns the time since it
    for (const RangeRecord* step : OuterSteps(steps, &last_outer_end_)) {
      step_tids_.insert(step->tid);
      const TimeNs begin = previous_end.value_or(step->start);
      previous_end = step->end;
      const TimeNs end = step->end;
      const DurationNs step_time = std::max<DurationNs>(end - begin, 0);
      on_thread_.data.push_back(
          DataInStep(timeline, &kinds_, begin, end, step->tid, &on_thread_.by_name));
      any_thread_.data.push_back(
          DataInStep(timeline, &kinds_, begin, end, std::nullopt, &any_thread_.by_name));
      on_thread_.step_time.push_back(step_time);
      any_thread_.step_time.push_back(step_time);
      for (auto [source, into] :
           {std::pair{&starts.launches, &launch_}, std::pair{&starts.kernels, &kernel_}}) {
        if (std::optional<DurationNs> before = BeforeFirst(*source, begin, end)) {
          into->data.push_back(*before);
          into->step_time.push_back(step_time);
          into->by_name["before the first kernel launch"] += *before;
        }
      }
    }
  }

  // The end of the last outermost step so far: the next step's time begins there.
  std::optional<TimeNs> last_step_end() const { return last_outer_end_; }

  StepSeries Take() {
    FlushStretch();
    StepSeries out;
    if (!any_data_) {
      if (!any_step_ || !any_gpu_ || (!any_launch_ && !any_kernel_)) return out;
      out = any_launch_ ? std::move(launch_) : std::move(kernel_);
      out.from_step_ranges = true;
      out.from_first_kernel = true;
    } else if (!any_step_) {
      out = std::move(stretches_);
    } else {
      const bool data_on_step_threads =
          std::any_of(data_tids_.begin(), data_tids_.end(),
                      [&](uint32_t t) { return step_tids_.count(t) > 0; });
      out = data_on_step_threads ? std::move(on_thread_) : std::move(any_thread_);
      out.from_step_ranges = true;
    }
    out.rank = rank_;
    return out;
  }

 private:
  // Each stretch of overlapping data ranges is one step's loading (ranges without step ranges).
  void AddToStretch(const RangeRecord& r) {
    any_data_ = true;
    if (r.start >= reach_) FlushStretch();
    group_.emplace_back(r.start, r.end);
    stretches_.by_name[r.name] += r.end - r.start;
    reach_ = std::max(reach_, r.end);
  }
  void FlushStretch() {
    if (!group_.empty()) stretches_.data.push_back(UnionLength(group_));
    group_.clear();
  }

  int rank_;
  RangeKinds kinds_;
  bool any_step_ = false, any_data_ = false, any_gpu_ = false, any_launch_ = false,
       any_kernel_ = false;
  std::set<uint32_t> step_tids_, data_tids_;
  std::optional<TimeNs> last_outer_end_;  // of the outermost steps so far
  StepSeries on_thread_, any_thread_;     // data ranges on the step's thread, on any thread
  StepSeries launch_, kernel_;            // before the first kernel launch, or kernel
  StepSeries stretches_;                  // stretches of data ranges
  std::vector<std::pair<TimeNs, TimeNs>> group_;
  TimeNs reach_ = std::numeric_limits<TimeNs>::min();
};

// A rank's StepFold fed one window at a time as its agent uploads it: the ranges that ended in
// the window and those open at its cut (cut short there, RangeOpenAtCut), and the GPU activity
// that began in it. A step is read in the window it ends in, from the ranges and GPU starts since
// its time began (the last outermost step's end; the first step's own start), so the fold holds
// what a later step may still read: the ranges ending after, and the GPU starts at or after, the
// earliest point a step still to come can begin from (the last step's end; before any, the start
// of the earliest step open at the cut, else the cut).
class StepWindowFold {
 public:
  StepWindowFold(int rank, const DataloaderOptions& options)
      : fold_(rank, options), kinds_(options) {}

  void Add(std::vector<RangeRecord> ended, const std::vector<RangeRecord>& open,
           std::vector<GpuActivityRecord> gpu, TimeNs cut) {
    std::vector<RangeRecord> ranges = std::move(held_ranges_);
    const size_t owned_from = ranges.size();
    ranges.insert(ranges.end(), std::make_move_iterator(ended.begin()),
                  std::make_move_iterator(ended.end()));
    const size_t whole = ranges.size();
    ranges.insert(ranges.end(), open.begin(), open.end());
    std::vector<GpuActivityRecord> starts = std::move(held_gpu_);
    starts.insert(starts.end(), std::make_move_iterator(gpu.begin()),
                  std::make_move_iterator(gpu.end()));
    const RangeRecord* owned_begin = ranges.data() + owned_from;
    const RangeRecord* owned_end = ranges.data() + whole;
    fold_.Add(ranges, starts,
              [&](const RangeRecord& r) { return &r >= owned_begin && &r < owned_end; });

    // Where a step still to come can begin: the last step's end, or before any, the start of a
    // step open at the cut (one that starts after the cut reads only what comes after it).
    std::vector<TimeNs> begins;
    if (const std::optional<TimeNs> last = fold_.last_step_end()) {
      begins.push_back(*last);
    } else {
      for (const RangeRecord& r : open) {
        if (kinds_.Step(r.name)) begins.push_back(r.start);
      }
    }
    const TimeNs from = begins.empty() ? cut : *std::min_element(begins.begin(), begins.end());
    ranges.erase(ranges.begin() + static_cast<std::ptrdiff_t>(whole), ranges.end());
    std::erase_if(ranges, [&](const RangeRecord& r) { return r.end <= from; });
    held_ranges_ = std::move(ranges);
    held_gpu_ = FirstStarts(starts, begins);
  }

  size_t held() const { return held_ranges_.size() + held_gpu_.size(); }
  StepSeries Take() { return fold_.Take(); }

 private:
  // A step reads of the GPU records only its first launch and first kernel (BeforeFirst): of
  // `gpu`, the first of each at or after each of `begins`.
  static std::vector<GpuActivityRecord> FirstStarts(const std::vector<GpuActivityRecord>& gpu,
                                                    const std::vector<TimeNs>& begins) {
    std::vector<const GpuActivityRecord*> first;
    GpuStarts kinds;
    for (TimeNs begin : begins) {
      for (const std::vector<TimeNs>* kind : {&kinds.launches, &kinds.kernels}) {
        const GpuActivityRecord* best = nullptr;
        for (const GpuActivityRecord& g : gpu) {
          if (kinds.Of(g) == kind && g.start >= begin && (!best || g.start < best->start)) {
            best = &g;
          }
        }
        if (best && std::find(first.begin(), first.end(), best) == first.end()) {
          first.push_back(best);
        }
      }
    }
    std::vector<GpuActivityRecord> out;
    for (const GpuActivityRecord* g : first) out.push_back(*g);
    return out;
  }

  StepFold fold_;
  RangeKinds kinds_;
  std::vector<RangeRecord> held_ranges_;
  std::vector<GpuActivityRecord> held_gpu_;
};

std::string NamesLabel(const std::vector<std::pair<DurationNs, std::string>>& names) {
  std::string out = "'" + names[0].second + "'";
  // A second name is worth showing only when it carries a real share of the time.
  if (names.size() > 1 && names[1].first * 4 >= names[0].first)
    out += " and '" + names[1].second + "'";
  return out;
}

// The finding on one rank, with its figures `v` (frac_skewed, median_step and range_names
// filled in here).
Finding MakeFinding(const Session& session, const StepSeries& rank, DataloaderFigures v,
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

std::vector<StepSeries> StepSeriesOf(const Session& session, const DataloaderOptions& options) {
  std::vector<StepSeries> out;
  for (const RankData& r : session.ranks) {
    StepFold fold(r.id.rank, options);
    fold.Add(r.ranges, r.gpu, [](const RangeRecord&) { return true; });
    StepSeries steps = fold.Take();
    if (!steps.data.empty()) out.push_back(std::move(steps));
  }
  return out;
}

struct StepSeriesFold::State {
  std::vector<StepWindowFold> folds;
  size_t peak = 0;
};

StepSeriesFold::StepSeriesFold(const Session& session, const DataloaderOptions& options)
    : state_(std::make_unique<State>()) {
  for (const RankData& r : session.ranks) state_->folds.emplace_back(r.id.rank, options);
}
StepSeriesFold::~StepSeriesFold() = default;

void StepSeriesFold::Add(const std::vector<RankUpload>& window) {
  size_t held = 0;
  for (size_t i = 0; i < window.size(); ++i) {
    const RankUpload& u = window[i];
    state_->folds[i].Add(u.records.ranges, u.open_ranges, u.records.gpu, u.cut);
    held += state_->folds[i].held();
  }
  state_->peak = std::max(state_->peak, held);
}

std::vector<StepSeries> StepSeriesFold::Take() {
  std::vector<StepSeries> out;
  for (StepWindowFold& fold : state_->folds) {
    StepSeries steps = fold.Take();
    if (!steps.data.empty()) out.push_back(std::move(steps));
  }
  return out;
}

size_t StepSeriesFold::peak_held() const { return state_->peak; }

std::vector<StepSeries> StepSeriesByWindow(const Session& session, const WindowSplit& split,
                                           const DataloaderOptions& options, size_t* peak_held) {
  StepSeriesFold fold(session, options);
  for (size_t w = 0; w < split.size(); ++w) fold.Add(UploadsOf(session, split, w));
  if (peak_held != nullptr) *peak_held = fold.peak_held();
  return fold.Take();
}

std::vector<Finding> FindDataloaderSkew(const Session& session, const DataloaderOptions& options) {
  return FindDataloaderSkew(session, StepSeriesOf(session, options), options);
}

std::vector<Finding> FindDataloaderSkew(const Session& session, std::vector<StepSeries> ranks,
                                        const DataloaderOptions& options) {
  if (ranks.size() < 2) return {};

  // Per step k, the other ranks' median data time, for every rank that has step k.
  size_t max_steps = 0;
  for (const StepSeries& r : ranks) max_steps = std::max(max_steps, r.data.size());
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
