// Clock math: NTP-style four-timestamp samples between an agent and the coordinator, and the
// fitted model that maps an agent's CLOCK_MONOTONIC onto the coordinator's. Pure functions.
#pragma once

#include <span>
#include <string>

#include "core/status.h"
#include "core/time.h"

namespace rankscope {

// One exchange: the agent sends at t1 (agent clock), the coordinator receives at t2 and
// replies at t3 (coordinator clock), the agent receives the reply at t4 (agent clock).
struct ClockSample {
  TimeNs t1 = 0;
  TimeNs t2 = 0;
  TimeNs t3 = 0;
  TimeNs t4 = 0;

  // Round trip minus the coordinator's processing time.
  DurationNs Delay() const { return (t4 - t1) - (t3 - t2); }
  // Estimated coordinator-minus-agent clock difference; exact if the path is symmetric,
  // otherwise wrong by at most Delay()/2.
  DurationNs Offset() const { return ((t2 - t1) + (t3 - t4)) / 2; }
  // The agent-clock time the sample describes.
  TimeNs LocalMid() const { return t1 + (t4 - t1) / 2; }
};

struct ClockFitOptions {
  // Samples are grouped into windows of this length; only the lowest-delay ones of each window
  // are used, since queueing only ever adds delay (and asymmetric error).
  DurationNs window = 2 * kNsPerSec;
  double keep_fraction = 0.25;  // of each window, the lowest-delay fraction kept (at least 1)
  // Below this span of kept samples drift is not estimated (it would be mostly noise).
  DurationNs min_span_for_drift = 10 * kNsPerSec;
  double max_abs_drift_ppm = 500.0;  // crystal oscillators drift tens of ppm; more is an error
};

// Maps one agent's clock onto the coordinator's: coord = local + offset(local), with
// offset(local) = offset_ns + drift_ppm * 1e-6 * (local - ref_local).
struct ClockModel {
  TimeNs ref_local = 0;
  DurationNs offset_ns = 0;  // at ref_local: added to a local reading gives coordinator time
  double drift_ppm = 0.0;
  DurationNs uncertainty_ns = 0;  // how far off a converted time may be (≈ best delay / 2)
  int samples_used = 0;
  int samples_total = 0;

  TimeNs ToCoordinator(TimeNs local) const;
  // The identity model (coordinator-local clocks, or no samples at all).
  static ClockModel Identity() { return ClockModel{}; }
};

// Fits a model from samples in any order. Fails if no sample is usable (negative delays only,
// or none at all); the message says how many were rejected and why.
Result<ClockModel> FitClockModel(std::span<const ClockSample> samples,
                                 const ClockFitOptions& options = {});

}  // namespace rankscope
