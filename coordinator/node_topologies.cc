#include "coordinator/node_topologies.h"

#include <utility>

namespace rankscope {

std::map<std::string, NodeTopologyDump> ParseNodeTopologies(const Session& session) {
  std::map<std::string, NodeTopologyDump> out;
  for (const RankData& r : session.ranks) {
    if (r.topology_xml.empty()) continue;
    auto [it, first] = out.try_emplace(r.id.node);
    NodeTopologyDump& dump = it->second;
    if (dump.topology) continue;  // the node already has one that parses
    Result<NodeTopology> parsed = ParseNcclTopology(r.topology_xml, r.topology_source);
    if (parsed.ok()) {
      dump = {r.id.rank, r.topology_source, std::move(parsed.value()), ""};
    } else if (first) {
      dump = {r.id.rank, r.topology_source, std::nullopt, parsed.status().message()};
    }
  }
  return out;
}

}  // namespace rankscope
