// Reads an NCCL topology dump from disk: the one piece of I/O in model/topology, kept apart so
// the parser stays pure.
#pragma once

#include <string>

#include "core/status.h"
#include "model/topology/topology.h"

namespace rankscope {

// Reads the file at `path` and parses it with ParseNcclTopology. Every error names the file:
// unreadable ("cannot read PATH: No such file or directory"), empty, or PATH:line:column for
// bad content.
Result<NodeTopology> ReadNcclTopologyFile(const std::string& path);

}  // namespace rankscope
