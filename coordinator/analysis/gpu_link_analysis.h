// GPU links that run below what they should, from what NVML said on each node during the run
// (RankData::nvml, read by local rank 0's agent): a PCIe link trained down in width or
// generation, and NVLinks down. Such a GPU moves host<->device copies (and, without NVLink, its
// peer traffic) slower than its peers: the node is PCIe-bound before any measurement says so.
//
// Width below maximum is a fault whatever the GPU did (links do not narrow to save power).
// Generation below maximum is also what an idle GPU does to save power; the agent keeps the best
// generation it saw while the job ran, so it is reported, with less confidence, only when
// another GPU of the same node did reach its maximum (that node's GPUs were busy when read).
#pragma once

#include <vector>

#include "coordinator/findings.h"
#include "coordinator/session.h"

namespace rankscope {

// One finding per node with degraded links: kind "pcie_bound" for PCIe links below maximum,
// "nvlink_down" for GPUs with NVLinks not up; ranks = the node's ranks.
std::vector<Finding> FindDegradedGpuLinks(const Session& session);

}  // namespace rankscope
