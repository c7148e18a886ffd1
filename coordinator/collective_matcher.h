// Matches the collective records of all ranks into collective instances, keyed by
// (communicator id, sequence number on that communicator). Pure function over a Session.
#pragma once

#include <cstdint>
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

}  // namespace rankscope
