// When GPU activity is captured: the whole run (default), while an NVTX range of a given name is
// open, or for chosen steps (a step = one NVTX range of a given name, counted from 0 on its
// first opening). Outside the window CUPTI's activity kinds are disabled, so the program pays
// nothing for them there; NVTX ranges and MPI calls are always recorded (they are cheap, and the
// straggler analysis needs every collective).
//
//   RANKSCOPE_CAPTURE_RANGE=NAME      capture while a range NAME is open (any thread, nesting
//                                     counted), like nsys --capture-range=nvtx
//   RANKSCOPE_CAPTURE_STEPS=FIRST[:COUNT]  capture steps FIRST .. FIRST+COUNT-1 (COUNT omitted:
//                                     to the end)
//   RANKSCOPE_CAPTURE_EVERY=N         of those steps, capture every Nth (sampling for very
//                                     kernel-heavy jobs; default 1)
//   RANKSCOPE_STEP_RANGE=NAME         the range that marks a step (default "step")
//
// Pure: state in, transitions out; thread-safe (NVTX ranges open and close on any thread).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "agent/inject/cupti_config.h"

namespace rankscope::inject {

struct CaptureWindowConfig {
  enum class Kind { kWholeRun, kRange, kSteps };
  Kind kind = Kind::kWholeRun;
  std::string range;                // kRange: the range name
  std::string step_range = "step";  // kSteps: the range that marks a step
  uint64_t first_step = 0;
  uint64_t step_count = 0;  // 0: to the end
  uint64_t every = 1;
  // One line per variable that was set but unusable (ignored, with what is accepted).
  std::vector<std::string> problems;

  // "steps 10..14 of range 'step'", "while NVTX range 'train' is open", "whole run".
  std::string Describe() const;
};

// Reads the variables above. Never fails: bad values are ignored and named in `problems`.
CaptureWindowConfig CaptureWindowFromEnv(EnvLookup lookup);

class CaptureWindow {
 public:
  enum class Change { kNone, kOn, kOff };

  explicit CaptureWindow(CaptureWindowConfig config);

  // Whether capture is on now (before any range: on only for kWholeRun).
  bool on() const;
  // A range named `name` opened / closed. Returns the change of state it caused, if any.
  Change Opened(std::string_view name);
  Change Closed(std::string_view name);

  const CaptureWindowConfig& config() const { return config_; }

 private:
  bool StepWanted(uint64_t step) const;

  const CaptureWindowConfig config_;
  mutable std::mutex mu_;
  bool on_ = false;     // guarded by mu_
  int64_t open_ = 0;    // guarded by mu_: open ranges of the watched name
  uint64_t steps_ = 0;  // guarded by mu_: step ranges opened so far (outermost only)
};

}  // namespace rankscope::inject
