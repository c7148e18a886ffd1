// A session.sqlite's records read window by window (docs/design.md, "Cost bounded by the
// window"): the plan PlanWindows makes of the whole session, and each window's uploads as
// UploadsOf gives them, reading from the file only one window's records and those open across
// its cut, so that a session of any length is analysed in memory bounded by its windows.
//
// At Open, each record table gets a temporary index (each record's place among its rank's
// records of the kind, and its times), in SQLite's temporary store (a file), not in memory.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/report/record_facts.h"
#include "coordinator/report/trace_json.h"
#include "coordinator/session.h"
#include "coordinator/windows.h"
#include "core/status.h"

namespace rankscope {

class StoredWindows {
 public:
  // `session`: the file's session (LoadSession's, or one without its records), aligned: its
  // ranks, as the uploads are ordered; their clock models, with which records of a file that is
  // not aligned are moved to coordinator time as they are read; and its marks and GPU activity,
  // which Facts and ForEachEvent take from it (a RecordSpill's file holds neither). An error
  // names the file.
  static Result<std::unique_ptr<StoredWindows>> Open(const std::string& path,
                                                     const Session& session);
  ~StoredWindows();
  StoredWindows(const StoredWindows&) = delete;
  StoredWindows& operator=(const StoredWindows&) = delete;

  // The plan PlanWindows makes of the session with all its records.
  Result<WindowPlan> Plan(const WindowOptions& options);

  // The next window's uploads (windows 0, 1, ... of `plan` in turn), one per rank as
  // Session::ranks: equal to UploadsOf(session, SplitSession(session, plan), w).
  Result<std::vector<RankUpload>> Next(const WindowPlan& plan);

  // Back to before window 0: the next Next reads it again (a second pass over the windows).
  void Rewind();

  // What the writers read of every record (GatherRecordFacts of the loaded session), read from
  // the file row by row (marks and GPU activity: counted in the session given to Open).
  Result<RecordFacts> Facts();

  // (start, end) in coordinator time of every record trace.json would write, read from the file
  // and the session's marks and GPU activity (EventsOf the loaded session's, in another order).
  // An error is a row that cannot be read.
  Status ForEachEvent(const TraceEventFn& fn);

  // Fills each rank of `session` (the one given to Open) with its collectives, point-to-point
  // calls and ranges that overlap one of `spans` (disjoint, in order: a record starting at or
  // before a span's end and ending at or after its start), every one when `spans` is nullopt, in
  // the rank's order: what the writers read of a session whose records are not all held
  // (trace.json's window, report.html's timeline). (*p2p_index)[r]: the index of each held
  // point-to-point call among rank r's, to find the calls that messages name.
  using Spans = std::vector<std::pair<TimeNs, TimeNs>>;
  Status Hold(const std::optional<Spans>& spans, Session* session,
              std::vector<std::vector<size_t>>* p2p_index);

  // How many MPI records of each kind the file holds of each rank (as Session::ranks): for the
  // folds to size what they keep per record once, not by doubling.
  struct RowCounts {
    size_t collectives = 0;
    size_t p2p = 0;
    size_t mpi_calls = 0;
  };
  Result<std::vector<RowCounts>> CountRows();

  // The most records held at once between calls: the ones open across a cut.
  size_t peak_open() const;

  struct State;  // defined in the .cc

 private:
  explicit StoredWindows(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace rankscope
