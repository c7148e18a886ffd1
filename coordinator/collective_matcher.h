// Matches the collective records of all ranks into collective instances, keyed by
// (communicator id, sequence number on that communicator). Pure function over a Session.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "coordinator/session.h"
#include "core/records.h"

namespace rankscope {

struct CollectiveParticipant {
  int rank = -1;       // world rank (the agent's identity)
  int comm_rank = -1;  // rank within the communicator
  TimeNs enter = 0;
  TimeNs exit = 0;
  Bytes bytes = 0;
  TimeNs launched = 0;  // CollectiveRecord::launched (NCCL), 0 when unknown
};

struct CollectiveInstance {
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  CollectiveOp op = CollectiveOp::kUnknown;
  int comm_size = 0;
  int root_comm_rank = -1;
  std::vector<CollectiveParticipant> members;  // sorted by world rank
  // All comm_size members reported this instance, and they agree on op and root.
  bool complete = false;
  bool mismatched = false;  // members disagree on op/root/size: a bug in the program or ours
};

// Instances ordered by the earliest member's enter time. Uses times as they are in the session
// (align it first for cross-rank comparisons).
std::vector<CollectiveInstance> MatchCollectives(const Session& session);

// The same matching fed window by window (coordinator/windows.h): each window's calls are added,
// the instances that have all their members are taken out when the window closes, and only the
// others stay open, so memory is bounded by the open instances, not by the run. Taken and
// finished instances, put in the order MatchCollectives gives (OrderInstances), are what
// MatchCollectives gives, except for a program that calls one instance more often than its
// communicator has members (MatchCollectives keeps the extra calls in the instance; here they
// open a new one).
class CollectiveFold {
 public:
  void Add(int world_rank, const CollectiveRecord& call);
  // The instances all of whose members called (or that have as many calls), members sorted by
  // world rank; they leave the fold.
  std::vector<CollectiveInstance> TakeFull();
  // At the end of the run: the rest (incomplete), which leave the fold too.
  std::vector<CollectiveInstance> Finish();
  size_t open() const { return open_.size(); }

 private:
  std::map<std::pair<uint64_t, uint64_t>, CollectiveInstance> open_;
  std::vector<CollectiveInstance> full_;
};

// Orders instances as MatchCollectives does: by the earliest member's enter, then communicator
// and sequence number.
void OrderInstances(std::vector<CollectiveInstance>* instances);

}  // namespace rankscope
