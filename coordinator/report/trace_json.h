// trace.json: the session as a Chrome / Perfetto trace (the JSON "Trace Event Format"), for
// ui.perfetto.dev or chrome://tracing. One process per rank, one track per thread, NVTX ranges
// and MPI calls as slices, NVTX marks as instants, and flow arrows joining the ranks' halves of
// each collective instance. GPU activity from CUPTI gets a track per CUDA stream below the
// rank's threads (kernels, copies, memsets; NCCL collectives on their kernel's stream), CUDA API
// calls sit on their host thread, and an arrow joins each launch to what it launched.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "coordinator/session.h"
#include "coordinator/session_matches.h"

namespace rankscope {

// The trace of an aligned session and its matches (MatchSession on the same session), as JSON text.
// Timestamps are microseconds since session.start, printed with three decimals so nanoseconds
// survive exactly.
//
// Slices on one track always nest properly, as Perfetto requires: when a slice partially
// overlaps an earlier one on its thread (e.g. a start/end NVTX range across an MPI call), it
// moves to a synthetic track of the same process named "<thread> (overlap N)". Each complete
// instance gets one flow chain with a unique id: "s" on the first rank to arrive, "t" on the
// ones in between, "f" (binding to the enclosing slice) on the last; all bind to that rank's
// MPI slice.
//
// Large sessions: with a `window`, only records that overlap it are written (a trace beyond a few
// million events does not open in a browser), and the metadata says so.
struct TraceWindow {
  TimeNs start = 0;
  TimeNs end = 0;
  size_t events_total = 0;  // slices and instants in the whole session
  size_t events_kept = 0;   // of those, in the window
};
std::string BuildChromeTrace(const Session& session, const SessionMatches& matches,
                             const std::optional<TraceWindow>& window = std::nullopt);

// The slices and instants trace.json would hold for the whole session.
size_t CountTraceEvents(const Session& session);

// nullopt when the session has at most max_events events (or max_events is 0); else the window of
// the run's middle that holds max_events of them (by start time), for BuildChromeTrace.
std::optional<TraceWindow> ChooseTraceWindow(const Session& session, size_t max_events);

// The default budget: about 1 GB of trace.json at the most, which Perfetto still opens.
inline constexpr size_t kDefaultMaxTraceEvents = 4'000'000;

// The MPI function name of a collective: "MPI_Allreduce", "MPI_Ireduce_scatter_block", ...
// "ncclAllReduce" etc., for collectives joined from NCCL logs and kernels.
std::string NcclFunctionName(CollectiveOp op);
std::string MpiFunctionName(CollectiveOp op, bool nonblocking);

}  // namespace rankscope
