// Dataloader skew: ranks that spend consistently more time in data loading (NVTX ranges whose
// name looks like data/load/batch/input) per training step than the other ranks do. In a
// synchronous data-parallel job that time is paid by everyone at the next collective. Pure
// function over a session (durations only, so clock alignment does not matter).
#pragma once

#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "coordinator/findings.h"
#include "coordinator/session.h"
#include "coordinator/windows.h"
#include "core/time.h"

namespace rankscope {

struct DataloaderOptions {
  // Outermost ranges matching step_pattern are the steps, counted in order per rank (step k of
  // one rank is step k of every rank). A rank without step ranges uses its successive data ranges.
  std::regex step_pattern{"^step", std::regex::icase};
  // Data-loading ranges (a step range never counts as one).
  std::regex data_pattern{"data|load|batch|input", std::regex::icase};

  // A step is skewed when the rank's data time exceeds the other ranks' median in that step by
  // more than max(min_excess, noise_k * robust sigma of the other ranks' step-to-step variation);
  // the rank is reported when at least min_frac_steps of its steps are skewed.
  DurationNs min_excess = 1 * kNsPerMs;
  double noise_k = 5.0;
  double min_frac_steps = 0.5;
  int min_steps = 3;  // fewer shared steps than this: no judgement
  // Critical when the median excess is above this fraction of the rank's median step time.
  double critical_step_fraction = 0.20;
};

// One rank's data-loading time, step by step: what the analysis judges. Steps are the outermost
// step ranges, each owning the time since the previous one ended (loading often runs between
// them); the data time is the time data ranges cover there (on the step's thread when data
// ranges run on step threads at all). A rank without step ranges takes each stretch of
// overlapping data ranges as one step's loading; one without data ranges but with step ranges
// and CUPTI records, the time from a step's start to its first kernel launch (or first kernel,
// where launches were not traced).
struct StepSeries {
  int rank = -1;
  bool from_step_ranges = false;
  bool from_first_kernel = false;
  std::vector<DurationNs> data;               // per step
  std::vector<DurationNs> step_time;          // per step (step ranges only)
  std::map<std::string, DurationNs> by_name;  // data time per range name, over all steps
  bool operator==(const StepSeries&) const = default;
};

// The series of every rank with at least one step, over the whole run.
std::vector<StepSeries> StepSeriesOf(const Session& session, const DataloaderOptions& options);

// The same, window by window (coordinator/windows.h): each rank's records fed as its agent
// uploads them at each cut (SplitIntoWindows), the fold holding only what a step still to come
// may read; which of the three readings a rank gets is decided at the end, from what its whole
// run had. *peak_held (when not null): the most ranges and GPU records held across a cut,
// summed over the ranks.
std::vector<StepSeries> StepSeriesByWindow(const Session& session, const WindowSplit& split,
                                           const DataloaderOptions& options,
                                           size_t* peak_held = nullptr);

// The fold behind it, fed every rank's upload of one window at a time (as Session::ranks).
class StepSeriesFold {
 public:
  StepSeriesFold(const Session& session, const DataloaderOptions& options);  // its ranks' ids
  ~StepSeriesFold();
  StepSeriesFold(const StepSeriesFold&) = delete;
  StepSeriesFold& operator=(const StepSeriesFold&) = delete;
  void Add(const std::vector<RankUpload>& window);
  std::vector<StepSeries> Take();  // after the last window
  size_t peak_held() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Findings of kind "dataloader_skew", at most one per rank; a clean run gives none. cost_ns is the
// rank's total excess data time (a lower bound on what the job loses to it).
std::vector<Finding> FindDataloaderSkew(const Session& session, const DataloaderOptions& options);

// The same over series already taken (StepSeriesOf, StepSeriesByWindow).
std::vector<Finding> FindDataloaderSkew(const Session& session, std::vector<StepSeries> series,
                                        const DataloaderOptions& options);

}  // namespace rankscope
