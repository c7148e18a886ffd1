// The NCCL topology dumps of a session, one per node, parsed by one rule for every reader (the
// diagnosis' pcie_bound join, the ring ceilings, report.json and report.html): a node's dump is
// its first rank's (in session order) that parses; when none of its ranks' dumps parses, the first
// one's error is kept, so a report can say why. Pure.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "coordinator/session.h"
#include "model/topology/topology.h"

namespace rankscope {

struct NodeTopologyDump {
  int rank = -1;                         // whose dump
  std::string source;                    // its file name on the node
  std::optional<NodeTopology> topology;  // parsed; nullopt when no dump of the node parses
  std::string error;                     // then why the first one did not
};

// By node name; nodes none of whose ranks sent a dump are absent.
std::map<std::string, NodeTopologyDump> ParseNodeTopologies(const Session& session);

}  // namespace rankscope
