#include "model/topology/nvml.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace rankscope {

NvmlSnapshot MergeNvml(NvmlSnapshot earlier, const NvmlSnapshot& later) {
  std::map<std::string, const NvmlGpu*> by_uuid;
  for (const NvmlGpu& g : later.gpus) {
    if (!g.uuid.empty()) by_uuid[g.uuid] = &g;
  }
  for (NvmlGpu& g : earlier.gpus) {
    auto it = by_uuid.find(g.uuid);
    if (g.uuid.empty() || it == by_uuid.end()) continue;
    const NvmlGpu& l = *it->second;
    g.pcie_gen_current = std::max(g.pcie_gen_current, l.pcie_gen_current);
    g.pcie_width_current = std::max(g.pcie_width_current, l.pcie_width_current);
    g.nvlinks_up = std::max(g.nvlinks_up, l.nvlinks_up);
    by_uuid.erase(it);
  }
  for (const NvmlGpu& g : later.gpus) {
    if (!g.uuid.empty() && by_uuid.count(g.uuid)) earlier.gpus.push_back(g);  // new in `later`
  }
  if (earlier.driver_version.empty()) earlier.driver_version = later.driver_version;
  return earlier;
}

std::string NvmlClockEventReasonNames(uint64_t mask) {
  static constexpr std::pair<uint64_t, const char*> kNames[] = {
      {0x1, "gpu_idle"},    {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"}, {0x10, "sync_boost"},         {0x20, "sw_thermal"},
      {0x40, "hw_thermal"}, {0x80, "hw_power_brake"},     {0x100, "display_clocks"},
  };
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if ((mask & bit) != 0) out += (out.empty() ? "" : ", ") + std::string(name);
  }
  const uint64_t known = 0x1ff;
  if ((mask & ~known) != 0) {
    out += (out.empty() ? "" : ", ") + std::string("other 0x") + [&] {
      char hex[32];
      std::snprintf(hex, sizeof(hex), "%llx", static_cast<unsigned long long>(mask & ~known));
      return std::string(hex);
    }();
  }
  return out.empty() ? "none" : out;
}

}  // namespace rankscope
