#include "coordinator/session_matches.h"

namespace rankscope {

SessionMatches MatchSession(const Session& aligned) {
  SessionMatches m;
  m.collectives = MatchCollectives(aligned);
  m.messages = MatchMessages(aligned, &m.p2p);
  m.links = LinksOf(m.messages);
  return m;
}

std::vector<MessageLink> LinksOf(const std::vector<P2PMessage>& messages) {
  std::vector<MessageLink> links;
  links.reserve(messages.size());
  for (const P2PMessage& m : messages) links.push_back(LinkOf(m));
  return links;
}

}  // namespace rankscope
