// Everything matched across ranks in one session: collective instances (by communicator and
// sequence) and point-to-point messages (by channel and order). Matched once per analysis run
// and read by the analyses and the writers alike.
#pragma once

#include <vector>

#include "coordinator/collective_matcher.h"
#include "coordinator/p2p_matcher.h"
#include "coordinator/session.h"

namespace rankscope {

struct SessionMatches {
  std::vector<CollectiveInstance> collectives;  // MatchCollectives
  std::vector<P2PMessage> messages;             // MatchMessages
  P2PMatchStats p2p;
};

// Both matchers over an aligned session.
SessionMatches MatchSession(const Session& aligned);

}  // namespace rankscope
