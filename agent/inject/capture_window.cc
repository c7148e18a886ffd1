#include "agent/inject/capture_window.h"

#include <charconv>

namespace rankscope::inject {
namespace {

bool ParseUint(std::string_view s, uint64_t* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

std::string Value(EnvLookup lookup, const char* name) {
  const char* v = lookup(name);
  return v != nullptr ? std::string(v) : std::string();
}

}  // namespace

std::string CaptureWindowConfig::Describe() const {
  switch (kind) {
    case Kind::kWholeRun:
      return "whole run";
    case Kind::kRange:
      return "while NVTX range '" + range + "' is open";
    case Kind::kSteps: {
      std::string text = "steps " + std::to_string(first_step) + "..";
      text += step_count == 0 ? "end" : std::to_string(first_step + step_count - 1);
      if (every > 1) text += ", every " + std::to_string(every) + "th";
      return text + " (NVTX range '" + step_range + "')";
    }
  }
  return "whole run";
}

CaptureWindowConfig CaptureWindowFromEnv(EnvLookup lookup) {
  CaptureWindowConfig c;
  const std::string range = Value(lookup, "RANKSCOPE_CAPTURE_RANGE");
  const std::string steps = Value(lookup, "RANKSCOPE_CAPTURE_STEPS");
  const std::string every = Value(lookup, "RANKSCOPE_CAPTURE_EVERY");
  if (const std::string step_range = Value(lookup, "RANKSCOPE_STEP_RANGE"); !step_range.empty()) {
    c.step_range = step_range;
  }
  if (!range.empty()) {
    c.kind = CaptureWindowConfig::Kind::kRange;
    c.range = range;
    if (!steps.empty() || !every.empty()) {
      c.problems.push_back("RANKSCOPE_CAPTURE_RANGE is set: RANKSCOPE_CAPTURE_STEPS/EVERY ignored");
    }
    return c;
  }
  if (steps.empty() && every.empty()) return c;
  if (!steps.empty()) {
    const size_t colon = steps.find(':');
    const std::string_view s(steps);
    bool ok = ParseUint(s.substr(0, colon), &c.first_step);
    if (ok && colon != std::string::npos) {
      ok = ParseUint(s.substr(colon + 1), &c.step_count) && c.step_count > 0;
    }
    if (!ok) {
      c.problems.push_back("RANKSCOPE_CAPTURE_STEPS=" + steps +
                           " is not FIRST or FIRST:COUNT (whole numbers, COUNT > 0); capturing "
                           "the whole run");
      CaptureWindowConfig whole;
      whole.problems = std::move(c.problems);
      return whole;
    }
  }
  if (!every.empty() && (!ParseUint(every, &c.every) || c.every == 0)) {
    c.problems.push_back("RANKSCOPE_CAPTURE_EVERY=" + every +
                         " is not a whole number > 0; capturing every step");
    c.every = 1;
  }
  c.kind = CaptureWindowConfig::Kind::kSteps;
  return c;
}

CaptureWindow::CaptureWindow(CaptureWindowConfig config)
    : config_(std::move(config)), on_(config_.kind == CaptureWindowConfig::Kind::kWholeRun) {}

bool CaptureWindow::on() const {
  std::lock_guard<std::mutex> lock(mu_);
  return on_;
}

bool CaptureWindow::StepWanted(uint64_t step) const {
  if (step < config_.first_step) return false;
  const uint64_t k = step - config_.first_step;
  if (config_.step_count != 0 && k >= config_.step_count) return false;
  return k % config_.every == 0;
}

CaptureWindow::Change CaptureWindow::Opened(std::string_view name) {
  using Kind = CaptureWindowConfig::Kind;
  if (config_.kind == Kind::kWholeRun) return Change::kNone;
  const std::string& watched = config_.kind == Kind::kRange ? config_.range : config_.step_range;
  if (name != watched) return Change::kNone;  // the common case: no lock
  std::lock_guard<std::mutex> lock(mu_);
  if (open_++ > 0) return Change::kNone;  // nested or concurrent: the outermost counts
  bool want = true;
  if (config_.kind == Kind::kSteps) want = StepWanted(steps_++);
  if (want == on_) return Change::kNone;
  on_ = want;
  return want ? Change::kOn : Change::kOff;
}

CaptureWindow::Change CaptureWindow::Closed(std::string_view name) {
  using Kind = CaptureWindowConfig::Kind;
  if (config_.kind == Kind::kWholeRun) return Change::kNone;
  const std::string& watched = config_.kind == Kind::kRange ? config_.range : config_.step_range;
  if (name != watched) return Change::kNone;
  std::lock_guard<std::mutex> lock(mu_);
  if (open_ == 0) return Change::kNone;  // a close without an open we saw
  if (--open_ > 0) return Change::kNone;
  // Between two captured steps stay on, so the gap (data loading, the optimizer) is captured
  // with them; after the last captured step of a run, off.
  const bool keep = config_.kind == Kind::kSteps && StepWanted(steps_);
  if (!on_ || keep) return Change::kNone;
  on_ = false;
  return Change::kOff;
}

}  // namespace rankscope::inject
