// The sweep history: every sweep's figures per node and check in an SQLite file, so tonight's
// figure is compared with the node's own past (verdicts.h ApplyTrends), not only with its peers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coordinator/sweep/sweep_report.h"
#include "coordinator/sweep/verdicts.h"
#include "core/status.h"

namespace rankscope {

namespace sqlite {
class Connection;
}

class SweepHistory {
 public:
  // Opens the history at `path`, creating it (and its folder) if it does not exist. The error
  // names the file: not an SQLite file, or one whose tables are not a sweep history's.
  static Result<std::unique_ptr<SweepHistory>> Open(const std::string& path);
  ~SweepHistory();
  SweepHistory(const SweepHistory&) = delete;
  SweepHistory& operator=(const SweepHistory&) = delete;

  // The figures of the last `sweeps` sweeps of `level`, oldest first, per node and check key.
  Result<SweepPast> Past(const std::string& level, int sweeps);
  // Adds this sweep (one transaction).
  Status Record(const SweepRunInfo& run, const std::vector<NodeVerdict>& nodes);

 private:
  explicit SweepHistory(std::unique_ptr<sqlite::Connection> db);
  std::unique_ptr<sqlite::Connection> db_;
};

// $XDG_DATA_HOME/rankscope/sweeps.sqlite, else ~/.local/share/rankscope/sweeps.sqlite.
std::string DefaultSweepHistoryPath();

}  // namespace rankscope
