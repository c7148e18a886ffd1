// The facts the PCIe-bound analysis reads off a node's topology: how each GPU pair and each
// GPU<->NIC pair are connected (NVLink, NVSwitch, or which kind of PCIe route), the slowest hop
// from each GPU up to its CPU, and the PCIe links running below their peers. Pure.
#pragma once

#include "model/topology/topology.h"

namespace rankscope {

// Recomputes every derived field of `*topology` from its cpus, pci_devices, gpus and nics:
// gpus[].pcie_link and pcie_path_to_cpu, gpu_pairs, all_gpus_nvlink_connected, gpu_nic_paths,
// slow_pcie_links. ParseNcclTopology calls it; call it again after building or editing a
// NodeTopology by hand (e.g. from NVML). Indices in the input must be valid or -1.
void DeriveTopologyFacts(NodeTopology* topology);

// The route from GPU `gpu` (index into gpus) to its closest NIC, the one NCCL prefers for that
// GPU's network traffic; ties go to the first NIC in the dump. nullptr when the node has no
// NIC. The pointer is into topology.gpu_nic_paths.
const GpuNicPath* NearestNicPath(const NodeTopology& topology, int gpu);

}  // namespace rankscope
