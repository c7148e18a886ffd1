// JSON forms of what the offline `rankscope inspect` commands parse: an NCCL debug log and an
// NCCL topology dump. Field names follow the contract (comm_id as NCCL prints it,
// skipped_lines, ...); values NCCL did not print are null, never a made-up 0.
#pragma once

#include <nlohmann/json.hpp>

#include "agent/nccl/nccl_log.h"
#include "agent/topology/topology.h"

namespace rankscope {

nlohmann::ordered_json NcclLogToJson(const NcclLog& log);
nlohmann::ordered_json TopologyToJson(const NodeTopology& topo);

}  // namespace rankscope
