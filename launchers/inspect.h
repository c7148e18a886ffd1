// `rankscope inspect nccl-log FILE... [--json]` and `rankscope inspect topo FILE [--json]`:
// offline views of NCCL debug logs and topology dumps for people who already have them.
#pragma once

#include <string>
#include <vector>

namespace rankscope {

// Prints to stdout; errors (naming the file) to stderr. Returns the process exit code: 0, or 1
// if any file could not be read or parsed.
int InspectNcclLogs(const std::vector<std::string>& files, bool json);
int InspectTopology(const std::string& file, bool json);

}  // namespace rankscope
