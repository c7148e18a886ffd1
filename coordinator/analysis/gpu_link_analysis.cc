#include "coordinator/analysis/gpu_link_analysis.h"

#include <map>
#include <string>

namespace rankscope {
namespace {

std::string Link(int gen, int width) {
  return "gen " + std::to_string(gen) + " x" + std::to_string(width);
}

}  // namespace

std::vector<Finding> FindDegradedGpuLinks(const Session& session) {
  // The ranks of each node, and the rank whose agent read NVML there.
  std::map<std::string, std::vector<int>> ranks_on;
  for (const RankData& r : session.ranks) ranks_on[r.id.node].push_back(r.id.rank);

  std::vector<Finding> out;
  for (const RankData& reader : session.ranks) {
    if (!reader.nvml) continue;
    const std::string& node = reader.id.node;
    const std::vector<NvmlGpu>& gpus = reader.nvml->gpus;
    bool some_gpu_at_max_gen = false;
    for (const NvmlGpu& g : gpus) {
      if (g.pcie_gen_max > 0 && g.pcie_gen_current == g.pcie_gen_max) some_gpu_at_max_gen = true;
    }

    std::vector<DegradedPcieLink> pcie;
    std::vector<DownNvlinks> nvlink;
    std::string pcie_text, nvlink_text;
    double pcie_confidence = 0;
    for (const NvmlGpu& g : gpus) {
      const bool narrow = g.pcie_width_current > 0 && g.pcie_width_current < g.pcie_width_max;
      const bool slow =
          g.pcie_gen_current > 0 && g.pcie_gen_current < g.pcie_gen_max && some_gpu_at_max_gen;
      if (narrow || slow) {
        pcie.push_back({g.index, g.bus_id, g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_current,
                        g.pcie_width_max});
        pcie_text += (pcie_text.empty() ? "" : "; ") + std::string("GPU ") +
                     std::to_string(g.index) + " (" + g.bus_id + ") at " +
                     Link(g.pcie_gen_current, g.pcie_width_current) + " of " +
                     Link(g.pcie_gen_max, g.pcie_width_max);
        pcie_confidence = std::max(pcie_confidence, narrow ? 0.9 : 0.6);
      }
      if (g.nvlinks_total > 0 && g.nvlinks_up < g.nvlinks_total) {
        nvlink.push_back({g.index, g.bus_id, g.nvlinks_up, g.nvlinks_total});
        nvlink_text += (nvlink_text.empty() ? "" : "; ") + std::string("GPU ") +
                       std::to_string(g.index) + " (" + g.bus_id + ") has " +
                       std::to_string(g.nvlinks_up) + " of " + std::to_string(g.nvlinks_total) +
                       " NVLinks up";
      }
    }
    auto node_finding = [&](FindingKind kind, double confidence) {
      Finding f;
      f.kind = kind;
      f.severity = Severity::kWarning;
      f.ranks = ranks_on[node];
      f.nodes = {node};
      f.confidence = confidence;
      return f;
    };
    if (!pcie.empty()) {
      Finding f = node_finding(FindingKind::kPcieBound, pcie_confidence);
      f.summary = "Node " + node +
                  ": PCIe link(s) below their maximum while the job ran: " + pcie_text +
                  ". Host-device copies (and GPU traffic without NVLink) through these links "
                  "run slower than on their peers; reseat or replace the card or riser, or "
                  "check the slot's BIOS settings.";
      f.nvml_links = NvmlLinkState{reader.nvml->driver_version, pcie, {}};
      out.push_back(std::move(f));
    }
    if (!nvlink.empty()) {
      Finding f = node_finding(FindingKind::kNvlinkDown, 0.9);
      f.summary = "Node " + node + ": " + nvlink_text +
                  ". Peer-to-peer traffic (NCCL rings, all-to-all) over this GPU loses that "
                  "share of its NVLink bandwidth.";
      f.nvml_links = NvmlLinkState{reader.nvml->driver_version, {}, nvlink};
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace rankscope
