// session.sqlite: a session's raw data (identities, clock samples and models, every record,
// exits, notices) and its findings, in SQLite, so it can be re-analysed or queried offline
// (`sqlite3 session.sqlite 'select ...'`). Tables: meta(key, value), ranks, clock_samples,
// collectives, p2p, mpi_calls, ranges, marks, gpu_activity, gpu_names, rank_gpu, rank_proc,
// rank_main_thread, findings; records point at their rank by ranks.idx. Times
// are stored exactly as in the saved session; meta 'aligned' says whether that is coordinator
// time or each rank's local clock.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coordinator/findings.h"
#include "coordinator/session.h"
#include "core/status.h"

namespace rankscope {

// The layout version written to meta 'schema_version'. LoadSession reads this one and the
// older ones listed below it.
//   7: tables nccl_compute and rank_gpu_summary: a rank's compute kernels may be only summed
//      (gpu_activity then holds some of them), which readers of version 6 would not know
//   6: ranks.exit_time (when the agent saw the rank end, its clock: which rank ended first)
//   5: ranks.exit_unseen (the rank ended, its status not seen by the agent beside it)
//   4: mpi_calls.call may be MPI_Init (24), which readers of version 3 take for corruption
//   3: collectives.launched_ns; p2p.world_peer; tables mpi_calls and rank_main_thread; the
//      scheduler and cgroup columns of the rank's /proc figures
//   2: collectives.source (0 MPI, 1 NCCL); CUPTI activity in gpu_activity + gpu_names;
//      rank_gpu.nvml (JSON) and nvml_error
//   1: the first layout (NCCL collectives recognised by their communicator key)
inline constexpr int kSessionStoreSchemaVersion = 7;
inline constexpr int kOldestReadableSchemaVersion = 1;

// Writes `session` and `findings` to a new database at `path`, replacing any file there. The
// database is built under a temporary name beside `path` and renamed into place once complete,
// so `path` is either the old file or the whole new one, never half written. One transaction
// with prepared statements: a million records take a few seconds. The error names the file.
// Strings stored as JSON (command, program, notices, findings) must be UTF-8; invalid bytes
// there come back as U+FFFD. Everything else comes back byte for byte.
struct SaveOptions {
  // When set: the MPI records and ranges (tables collectives, p2p, mpi_calls, ranges) are copied
  // from this session database of the current schema version, each row to its rank by rank and
  // restart count, and the session's own vectors of those kinds, which may hold only a part of
  // them (a session read window by window), are not written. Memory stays flat: SQLite copies.
  // Records of a file in the ranks' clocks (meta 'aligned' 0, a RecordSpill's) are moved to
  // coordinator time by each rank's clock model as they are copied, when `session` is aligned.
  std::string records_from;
};
Status SaveSession(const std::string& path, const Session& session,
                   const std::vector<Finding>& findings, const SaveOptions& options = {});

// Reads back what SaveSession wrote: LoadSession(p) equals the saved session field by field.
// Fails with a message naming the file when it is missing, is not a rankscope session database
// (another SQLite file, or no SQLite file at all), has another schema version, or is corrupt.
struct LoadOptions {
  // False: the MPI records and ranges (collectives, p2p, mpi_calls, ranges) are left in the file,
  // for a reader that takes them window by window (StoredWindows).
  bool mpi_records = true;
};
Result<Session> LoadSession(const std::string& path, const LoadOptions& options = {});

// The MPI records and ranges of a running job kept on disk as they arrive instead of in the
// coordinator's memory (`rankscope run`; docs/design.md, "Cost bounded by the window"): a session
// database that holds only those records, in each rank's clock (meta 'aligned' 0), and of each
// rank only its identity (ranks.idx, rank, restart_count, agent_pid). StoredWindows reads it and
// SaveOptions::records_from copies it once the session around it is aligned. Not thread-safe.
// The file is removed when the spill is destroyed.
class RecordSpill {
 public:
  // Creates the file at `path`, replacing one there. An error names the file.
  static Result<std::unique_ptr<RecordSpill>> Create(const std::string& path);
  ~RecordSpill();
  RecordSpill(const RecordSpill&) = delete;
  RecordSpill& operator=(const RecordSpill&) = delete;

  // Rank `idx` of the file (0, 1, ... in turn): a registered agent's rank.
  Status AddRank(size_t idx, const RankIdentity& id);
  // Appends rank `idx`'s MPI records and ranges held in `rank` after those the file holds of it,
  // and empties those vectors; on an error (naming the file) nothing is written and `rank` keeps
  // them.
  Status Append(size_t idx, RankData* rank);
  // Closes the file (everything appended is in it), for readers; Append fails after it.
  Status Close();
  const std::string& path() const;

  struct State;  // defined in the .cc

 private:
  explicit RecordSpill(std::unique_ptr<State> state);
  std::unique_ptr<State> st_;
};

// Puts back into each rank of `session` (ranks and earlier attempts, found by rank, restart
// count and agent pid) the records the spill file at `path` holds of it, before those it holds
// in memory (which came after a batch the file could not take), in the file's clock.
Status LoadSpilledRecords(const std::string& path, Session* session);

// The schema version of a session database, or an error naming the file.
Result<int> SessionSchemaVersion(const std::string& path);

// The findings saved with the session, in the order they were given to SaveSession.
Result<std::vector<Finding>> LoadFindings(const std::string& path);

}  // namespace rankscope
