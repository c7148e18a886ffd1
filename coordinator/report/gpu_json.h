// The GPU side of a session in report form: NCCL communicators and calls merged across the
// ranks' logs, each node's topology dump parsed, and the (de)serialisation of one rank's NCCL
// summary for the session store.
#pragma once

#include <map>
#include <nlohmann/json.hpp>

#include "coordinator/session.h"
#include "core/status.h"

namespace rankscope {

// {"version", "communicators": [{comm_id, nranks, nnodes, channels, ranks_reporting[],
// transports{kind: connections}, gdrdma, ring_order_channel0[], calls, calls_on_every_rank,
// shapes[{op, datatype, bytes, algo, proto, calls}]}]}; null when no rank reported NCCL.
nlohmann::json NcclReportJson(const Session& session);

// One rank's kernels: count, GPU time, launch latency (kernel start - end of its launch call, by
// CUPTI correlation id; small: the GPU waits for the CPU, large: work queues) and NCCL queue time
// (NCCL kernel start - its launch), each {samples, median_ns, p99_ns} or null. Null without
// kernels.
nlohmann::json GpuRankJson(const RankData& rank);

// The GPU figures every report shows, computed once per session and shared by report.json,
// report.txt and report.html: NcclReportJson and GpuRankJson of each rank with kernels.
struct GpuReport {
  nlohmann::json nccl;                    // null when no rank reported NCCL
  std::map<int, nlohmann::json> by_rank;  // world rank -> GpuRankJson, ranks with kernels only
};
GpuReport BuildGpuReport(const Session& session);

// One entry per topology dump: {node, rank, source, topology{...}} or {node, rank, source,
// error} when the dump does not parse.
nlohmann::json TopologyReportJson(const Session& session);

// One entry per node that sent NVML: {node, rank, driver_version, gpus[{index, name, uuid,
// bus_id, pcie_gen_current, pcie_gen_max, pcie_width_current, pcie_width_max, pcie_degraded,
// nvlinks_up, nvlinks_total, memory_bytes}]} or {node, rank, error}.
nlohmann::json NvmlReportJson(const Session& session);

nlohmann::json NvmlToJson(const NvmlSnapshot& nvml);
Result<NvmlSnapshot> NvmlFromJson(const nlohmann::json& json);

nlohmann::json RankNcclToJson(const RankNccl& nccl);
// Fails, naming what is wrong, on JSON that RankNcclToJson did not write.
Result<RankNccl> RankNcclFromJson(const nlohmann::json& json);

}  // namespace rankscope
