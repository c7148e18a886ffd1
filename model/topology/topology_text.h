// A node's topology as a compact table for people: what `rankscope inspect topo FILE` prints
// and what the report's node section shows. Pure.
#pragma once

#include <string>

#include "model/topology/topology.h"

namespace rankscope {

// GPUs (bus id, PCIe link and slowest hop to the CPU, NVLink peers), NICs, CPUs, then the
// findings that matter for PCIe-bound nodes called out by name: GPU pairs that share only PCIe
// and through what, GPU<->NIC paths that cross the CPU, links below their peers. Values the
// dump lacks print as "?" with one note saying why. Ends with a newline.
std::string DescribeTopology(const NodeTopology& topology);

}  // namespace rankscope
