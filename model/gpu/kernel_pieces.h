// A rank's compute-kernel time per name between its collective boundaries (issue #16: what the
// straggler analysis reads of the raw kernels, as an agent can send it). The straggler test asks,
// for a late collective call, what the rank's GPU ran in the gap since its latest collective exit
// (kernel time per name, non-NCCL kernels clipped to [that exit, the call's enter):
// coordinator/analysis/straggler_analysis.cc, KernelTimeIn). Both ends of such a gap are
// collective boundaries (an MPI collective's enter or exit, a NCCL kernel's start or end), so
// the kernel time per name in each piece between two consecutive boundaries answers every gap
// exactly: it is the sum of the pieces inside it. One piece a collective, a row per kernel name
// in it, instead of every kernel. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/records.h"
#include "core/time.h"

namespace rankscope {

// Kernel time of one name in [from, to), two consecutive boundaries of a rank (kernels on
// concurrent streams both count).
struct KernelPiece {
  TimeNs from = 0;
  TimeNs to = 0;
  std::string name;
  DurationNs time = 0;

  bool operator==(const KernelPiece&) const = default;
};

// Makes the pieces from boundaries and kernels fed in any order. Not thread-safe; memory: the
// boundaries not decided yet, the kernels that end after the decided time, and the open piece's
// names.
class KernelPieceFold {
 public:
  // A collective's enter or exit.
  void AddBoundary(TimeNs t);
  // A compute kernel (the caller leaves out the collectives' own kernels).
  void AddKernel(TimeNs start, TimeNs end, const std::string& name);

  // The pieces that end at or before `until`, once no boundary at or before it and no kernel
  // starting before it can still come, ordered by from and name. Kernel time before the first
  // boundary is in no piece (no gap begins before a collective's exit).
  std::vector<KernelPiece> TakeDecided(TimeNs until);
  // The end of the run: every piece between two boundaries (the time after the last is in none).
  std::vector<KernelPiece> TakeAll() { return TakeDecided(INT64_MAX); }

  // Boundaries and kernels that came at or before an `until` already passed where that changes
  // a piece (a boundary inside kernel time already summed, a kernel's time after the first
  // boundary): a gap ending or beginning there, or the kernel's time, is not what the records say.
  int64_t late() const { return late_; }
  size_t held() const { return boundaries_.size() + kernels_.size() + open_.size(); }

 private:
  struct Held {
    TimeNs end;
    TimeNs accounted;  // the kernel's time before this is in a piece already
    std::string name;
  };
  std::set<TimeNs> boundaries_;          // not decided yet
  std::multimap<TimeNs, Held> kernels_;  // by start
  bool any_boundary_ = false;
  bool any_kernel_time_ = false;            // some kernel time went into a piece
  TimeNs open_from_ = INT64_MIN;            // the latest decided boundary
  TimeNs first_boundary_ = INT64_MAX;       // the earliest decided (where pieces begin)
  std::map<std::string, DurationNs> open_;  // the open piece's time so far, per name
  TimeNs decided_until_ = INT64_MIN;
  int64_t late_ = 0;
};

// The kernel time per name in [begin, end) from a rank's pieces (ordered by from): the pieces
// inside it, summed. Exact when begin and end are boundaries of the fold that made them.
DurationNs KernelTimeFromPieces(const std::vector<KernelPiece>& pieces, TimeNs begin, TimeNs end,
                                std::map<std::string, DurationNs>* by_name);

}  // namespace rankscope
