// The JSON form of a parsed NCCL topology dump, for `rankscope inspect topo --json` and the
// report's per-node topology. Values the dump did not give are null, never 0.
#pragma once

#include <nlohmann/json.hpp>

#include "model/topology/topology.h"

namespace rankscope {

nlohmann::ordered_json TopologyToJson(const NodeTopology& topo);

}  // namespace rankscope
