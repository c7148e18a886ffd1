#include "coordinator/session_matches.h"

namespace rankscope {

SessionMatches MatchSession(const Session& aligned) {
  SessionMatches m;
  m.collectives = MatchCollectives(aligned);
  m.messages = MatchMessages(aligned, &m.p2p);
  return m;
}

}  // namespace rankscope
