// The wording shared by the human-readable reports (report_text, report_html): durations, the
// order findings are shown in, how a rank's exit reads, the notices a person should see, and
// the sentence that says what was checked when nothing was found. Pure functions; strings come
// back unescaped, each writer escapes for its own medium.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/findings.h"
#include "coordinator/report/collective_waits.h"
#include "coordinator/session.h"
#include "core/format.h"
#include "core/time.h"

namespace rankscope {

// FormatDuration with an explicit sign for non-zero values: "+1.23 ms", "-40 ns", "0 ns".
std::string FormatSignedDuration(DurationNs d);
// A clock offset keeps microseconds however large it is ("+3016.999990 s"): the point of the
// clock table is comparing offsets against uncertainties of tens of microseconds.
std::string FormatClockOffset(DurationNs d);

// Findings worst first: severity, then cost_ns, then confidence, ties in input order. The
// pointers point into `findings`, which must outlive the result.
std::vector<const Finding*> FindingsWorstFirst(const std::vector<Finding>& findings);

// Number of distinct node names among the ranks that reported.
int CountNodes(const Session& session);

// Signal name for the common fatal signals ("SIGKILL"), else "signal N".
std::string SignalName(int signal);

// How the rank ended, or "" when it exited 0 (or its exit is unknown) and was not signalled:
// "killed by SIGKILL (exit code 137)", "exited with code 1".
std::string DescribeExit(const RankData& rank);

struct RankNotice {
  int rank = -1;  // -1 for a notice about the whole job (e.g. ranks that never registered)
  std::string node;
  std::string text;
  bool severe = false;  // a crash, a missing rank, lost data: shown highlighted
  // Who it is about, as printed: "rank 2 (n1)", "ranks 0-3 (n1, n2)" when several ranks said
  // the same, "" for the whole job.
  std::string who;
};

// Everything a person should know about the data itself, ranks in order: ranks that never
// registered, crashed or unfinished ranks, dropped records, and the agents' own notices. The same
// text from several ranks is one notice naming them all.
std::vector<RankNotice> CollectNotices(const Session& session);

// Says what was examined, for the "No problems found" line, e.g. "50 allreduce instances
// across 4 ranks; max median lateness 0.3 ms (rank 2)".
std::string DescribeWhatWasChecked(const Session& session, const RecordFacts& facts,
                                   const CollectiveOverview& overview);

// A finding's evidence as (key, readable value) pairs in key order, nested objects flattened to
// dotted keys ("cause.range"), at most `max_entries` (0: all). Numbers under keys ending in
// "_ns" read as durations ("2.00 ms").
std::vector<std::pair<std::string, std::string>> ReadableEvidence(const nlohmann::json& evidence,
                                                                  size_t max_entries);

}  // namespace rankscope
