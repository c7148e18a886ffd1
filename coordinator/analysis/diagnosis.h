// Runs every analysis over an aligned session and merges what they say about the same problem
// into one finding, ordered by what it costs the job. The coordinator's single entry point into
// coordinator/analysis/.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/analysis/blame.h"
#include "coordinator/analysis/dataloader_analysis.h"
#include "coordinator/analysis/p2p_analysis.h"
#include "coordinator/analysis/process_analysis.h"
#include "coordinator/analysis/ring_analysis.h"
#include "coordinator/analysis/straggler_analysis.h"
#include "coordinator/findings.h"
#include "coordinator/session.h"
#include "coordinator/session_matches.h"
#include "coordinator/windows.h"

namespace rankscope {

struct AnalysisOptions {
  BlameOptions blame;  // decides stragglers (analysis/straggler_blame.h)
  StragglerOptions straggler;
  DataloaderOptions dataloader;
  RingOptions ring;
  PointToPointOptions p2p;        // late_sender and late_receiver
  ProcessOutlierOptions process;  // sessions sampled from outside (rankscope attach)
  // Run the analyses that fold window by window that way (docs/design.md, "Cost bounded by the
  // window"): collective and point-to-point matching, the gaps before late calls, the
  // dataloader's step series, where late ranks were while others waited and the blame model's
  // events. Their findings must be those of the whole run. Read by MatchSessionByWindow.
  std::optional<WindowOptions> by_window;
};

// What the analyses that fold read of a session read window by window: every fold fed each
// window's uploads once, in one pass (as the live path feeds each upload to all of them).
struct WindowedReading {
  explicit WindowedReading(const Session& aligned);
  LateGaps late_gaps;  // GapsBeforeLateCallsByWindow
  // Set by a reader that can read the windows again (a stored session): the gaps before the late
  // calls of only the ranks the straggler test flags, read in a second pass once they are known,
  // instead of late_gaps, which are then not folded: a share per call that may count as late is
  // the largest thing the first pass would hold that grows with the run, and a clean run needs
  // none. A reader that fails part way returns what it has and keeps the error for its caller.
  std::function<LateGaps(const std::set<int>& ranks)> late_gaps_of;
  std::vector<StepSeries> steps;  // StepSeriesByWindow, taken by Diagnose
  WaitRanges while_waited;        // RangesWhileWaitedByWindow
  WaitTallies waits;              // WaitTallyFold of every matched message
  SegmentedBlameFold blame;       // finished by Diagnose, once matched
  // The blame model from the whole graph, where the segments do not suffice (a candidate to
  // replay, a GPU timeline): set by the reader, which reads the windows again into a
  // BlameEventFold (a reader that fails part way keeps the error for its caller).
  std::function<BlameModel(const SessionMatches&, const BlameOptions&)> whole_blame;
};

// Each window's uploads in turn, from the first: UploadsOf a split session's, or a reader's of a
// stored one (coordinator/report/stored_windows.h).
using NextUploads = std::function<Result<std::vector<RankUpload>>()>;

// Every fold fed `windows` windows' uploads from `next`, in one pass: the matches and *reading,
// the other folds' results. `session` gives the ranks (as the uploads are ordered) and the world
// size; its records are not read. An error is next's.
Result<SessionMatches> MatchWindows(const Session& session, const AnalysisOptions& options,
                                    size_t windows, const NextUploads& next,
                                    WindowedReading* reading);

// The session cut into windows (options.by_window) and read that way: its matches
// (MatchCollectivesByWindow, MatchMessagesByWindow) and *reading, the other folds' results.
SessionMatches MatchSessionByWindow(const Session& aligned, const AnalysisOptions& options,
                                    WindowedReading* reading);

// Matches the collectives of `aligned` (which should have gone through AlignSession) and runs the
// straggler and dataloader analyses. A straggler whose cause is a data range of a rank that the
// dataloader analysis also flagged becomes part of that rank's dataloader_skew finding (with the
// wait it causes at the collectives as evidence) instead of a second finding. Findings are sorted
// by cost_ns, then severity, highest first. Remarks that are not findings (a straggler hidden by
// clock uncertainty) are appended to *notes when it is not nullptr.
std::vector<Finding> Diagnose(const Session& aligned, const AnalysisOptions& options,
                              std::vector<std::string>* notes = nullptr);

// The same with the session already matched (MatchSession(aligned)), for callers that need the
// matches too and should not match twice. The blame model the stragglers were decided by is
// stored in *blame when it is not nullptr (the writers show it). With `windowed` (the matches are
// then MatchSessionByWindow's), the analyses that fold read its windows (its blame fold is finished
// here).
std::vector<Finding> Diagnose(const Session& aligned, const SessionMatches& matches,
                              const AnalysisOptions& options,
                              std::vector<std::string>* notes = nullptr,
                              BlameModel* blame = nullptr, WindowedReading* windowed = nullptr);

}  // namespace rankscope
