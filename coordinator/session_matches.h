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
  // MatchMessages; empty where matching kept only the links (MatchFold without the messages:
  // a session read window by window keeps the wait states' figures folded instead).
  std::vector<P2PMessage> messages;
  std::vector<MessageLink> links;  // one per matched message, in the messages' order
  P2PMatchStats p2p;
};

// One link per message (LinkOf), in their order.
std::vector<MessageLink> LinksOf(const std::vector<P2PMessage>& messages);

// Both matchers over an aligned session.
SessionMatches MatchSession(const Session& aligned);

}  // namespace rankscope
