// trace.json: the session as a Chrome / Perfetto trace (the JSON "Trace Event Format"), for
// ui.perfetto.dev or chrome://tracing. One process per rank, one track per thread, NVTX ranges
// and MPI calls as slices, NVTX marks as instants, and flow arrows joining the ranks' halves of
// each collective instance. GPU activity from CUPTI gets a track per CUDA stream below the
// rank's threads (kernels, copies, memsets; NCCL collectives on their kernel's stream), CUDA API
// calls sit on their host thread, and an arrow joins each launch to what it launched.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/report/record_facts.h"
#include "coordinator/session.h"
#include "coordinator/session_matches.h"

namespace rankscope {

// Large sessions: a trace.json of millions of events does not open in a browser, and the records
// it draws would be held until the end of the run, so ChooseTraceWindow picks what to keep and
// BuildChromeTrace writes only the records that overlap it. For a training loop with NVTX step
// ranges that is a sample of whole steps, every rank's records during each kept step; without step
// ranges, one stretch of the run's middle.

// One step: the ranks' k-th step ranges (outermost NVTX ranges named like "step", counted per
// rank as report.html's step heatmap and worst-step timeline count them), from the earliest
// rank's start to the latest rank's end on the aligned axis.
struct TraceStep {
  size_t index = 0;  // k
  TimeNs start = 0;
  TimeNs end = 0;
};

// What trace.json keeps of a session over its event budget.
struct TraceWindow {
  // The span written: the window, or the first kept step's start to the last one's end.
  TimeNs start = 0;
  TimeNs end = 0;
  size_t events_total = 0;  // slices and instants in the whole session
  size_t events_kept = 0;   // of those, overlapping what is kept
  // Whole steps kept, in step order; empty when a window of the middle is kept.
  std::vector<TraceStep> steps;
  size_t steps_total = 0;  // steps in the session (also set when none could be kept whole)
  // The step whose collective calls hold the most waiting (report.html's worst step), when kept.
  std::optional<size_t> worst_step;
};

// The trace of an aligned session and its matches (MatchSession on the same session), as JSON
// text. Timestamps are microseconds since session.start, printed with three decimals so
// nanoseconds survive exactly.
//
// Slices on one track always nest properly, as Perfetto requires: when a slice partially
// overlaps an earlier one on its thread (e.g. a start/end NVTX range across an MPI call), it
// moves to a synthetic track of the same process named "<thread> (overlap N)". Each complete
// instance gets one flow chain with a unique id: "s" on the first rank to arrive, "t" on the
// ones in between, "f" (binding to the enclosing slice) on the last; all bind to that rank's
// MPI slice.
//
// With a `window`, only records overlapping its steps (or its span) are written, an instance's
// flow chain only when every member's slice is, and metadata.window says what was kept, out of
// how much, and how to get everything.
std::string BuildChromeTrace(const Session& session, const SessionMatches& matches,
                             const std::optional<TraceWindow>& window = std::nullopt);

// The same trace given to `sink` in pieces of about a MiB as it is built, so it is never held
// whole (a GPU rank's 85 s made a 450 MB trace; built in a string it was the end of the run's
// peak memory). False as soon as the sink returns false: nothing more is given to it.
bool StreamChromeTrace(const Session& session, const SessionMatches& matches,
                       const std::optional<TraceWindow>& window,
                       const std::function<bool(std::string_view)>& sink);

// The slices and instants trace.json would hold for the whole session.
size_t CountTraceEvents(const Session& session);

// nullopt when the session has at most max_events events (or max_events is 0). Otherwise, when
// every rank that made collective calls has step ranges: whole steps, as many as fit in
// max_events (a step costs every event overlapping its span). The step with the most waiting in
// its collectives (from `matches`, MatchSession of the same session), the first and the last
// come first, in that order, each when it fits (a first step that absorbed start-up may not);
// then as many steps evenly spaced from the first to the last as fit with them. Without step
// ranges, or when not one of those three fits whole: the window of the run's middle that holds
// max_events events (by start time).
std::optional<TraceWindow> ChooseTraceWindow(const Session& session, const SessionMatches& matches,
                                             size_t max_events);

// Calls its argument with (start, end) of every record that trace.json would write (a slice or
// an instant), in any order: a loaded session's records, or a stored one's read from its file.
using TraceEventFn = std::function<void(TimeNs start, TimeNs end)>;
using EachTraceEvent = std::function<void(const TraceEventFn&)>;
EachTraceEvent EventsOf(const Session& session);

// The same from the session's facts and its events, for a session whose records are not held.
std::optional<TraceWindow> ChooseTraceWindow(const Session& session, const SessionMatches& matches,
                                             size_t max_events, const RecordFacts& facts,
                                             const EachTraceEvent& events);

// What a window keeps, as disjoint time intervals in order: a record overlapping one of them
// (its start at or before the interval's end, its end at or after the interval's start) is
// written.
std::vector<std::pair<TimeNs, TimeNs>> KeptIntervals(const TraceWindow& window);

// One line for report.txt and the trace's metadata: what trace.json holds of the session, and
// that --full-trace writes everything. Starts with "trace.json holds ".
std::string DescribeTraceWindow(const TraceWindow& window);

// The default budget. trace.json costs 150-400 bytes per event as the writer prints it, flow
// arrows and track names included (measured: 190 B on a 64-rank x 500-step MPI + NVTX session
// of coordinator/testing/scale_sim.h, 157 B on the 2xH200 NCCL benchmark fixture with CUPTI
// kernels, 401 B on the 2xH200 PyTorch fixture with launch records, whose kernels carry long
// template names and an arrow from their launch each; trace_json_test checks the MPI + NVTX
// figure). A hundred thousand events is 15-40 MB of JSON, which ui.perfetto.dev opens in
// seconds, and about 15 MB of records the writers hold at the end of a run: the largest part of
// the end-of-run memory that does not shrink with the windows, so it is kept small and fixed
// (docs/design.md, "Cost bounded by the window"). That is a couple of hundred steps of a PyTorch
// loop of 260 kernels a step, thousands of an MPI loop. A million events (150-400 MB) is about
// what a browser tab still parses; --full-trace writes everything.
inline constexpr size_t kDefaultMaxTraceEvents = 100'000;

// The MPI function name of a collective: "MPI_Allreduce", "MPI_Ireduce_scatter_block", ...
// "ncclAllReduce" etc., for collectives joined from NCCL logs and kernels.
std::string NcclFunctionName(CollectiveOp op);
std::string MpiFunctionName(CollectiveOp op, bool nonblocking);

}  // namespace rankscope
