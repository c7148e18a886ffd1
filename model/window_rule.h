// Where a window ends, by a rule every rank applies alike without a clock (docs/design.md, "Cost
// bounded by the window"): at an instance of the world communicator's blocking N-to-N
// collectives, chosen from the communicator's sequence numbers alone. The coordinator cuts a
// whole session with it (coordinator/windows.h); an agent can apply it online to its own rank's
// calls and cut at the same instances as every other rank. Pure, header-only.
#pragma once

#include <cstdint>

#include "core/records.h"

namespace rankscope {

// Whether a window can end at an instance of `op`: a blocking N-to-N collective, which no member
// leaves before every member arrived, so the ranks' chains meet there. (A nonblocking one's exit
// is where a Wait saw it complete.)
inline bool AnchorsWindows(CollectiveOp op, bool nonblocking) {
  if (nonblocking) return false;
  switch (op) {
    case CollectiveOp::kAllreduce:
    case CollectiveOp::kBarrier:
    case CollectiveOp::kAllgather:
    case CollectiveOp::kAllgatherv:
    case CollectiveOp::kAlltoall:
    case CollectiveOp::kAlltoallv:
    case CollectiveOp::kAlltoallw:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kReduceScatterBlock:
      return true;
    default:
      return false;
  }
}

// Fed a rank's anchor instances on the world communicator in order (their sequence numbers),
// says at which the window ends: the first at or after each multiple of `every`. Every rank calls
// the same collectives on a communicator in the same order, so every rank cuts at the same ones.
class InstanceCutRule {
 public:
  // every >= 1: sequence numbers (of any collective on the communicator) per window.
  explicit InstanceCutRule(uint64_t every) : every_(every < 1 ? 1 : every), next_(every_) {}

  bool CutsAt(uint64_t seq) {
    if (seq < next_) return false;
    next_ = (seq / every_ + 1) * every_;
    return true;
  }

 private:
  uint64_t every_;
  uint64_t next_;  // the next multiple of every_ a cut waits for
};

}  // namespace rankscope
