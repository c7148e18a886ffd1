#include "model/ncu/ncu_text.h"

#include "core/format.h"

namespace rankscope {
namespace {

std::string Si(double v) { return SiFigure(v, ""); }

std::string Duration(double seconds) {
  if (seconds >= 1e-3) return FormatDouble("%.3f ms", seconds * 1e3);
  return FormatDouble("%.2f us", seconds * 1e6);
}

std::string Joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : " and ") + p;
  return out;
}

nlohmann::ordered_json OrNull(double v) { return v > 0 ? nlohmann::ordered_json(v) : nullptr; }

}  // namespace

std::string SiFigure(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (v >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  return FormatDouble("%.3g ", v) + prefixes[i] + unit;
}

std::string DescribeKernels(const std::vector<KernelAnalysis>& kernels) {
  std::string out;
  for (const KernelAnalysis& k : kernels) {
    out += "kernel " + std::to_string(k.id) + (k.file.empty() ? "" : " of " + k.file) + ": " +
           k.kernel + "\n";
    out += "  " + (k.device.empty() ? std::string("GPU ?") : k.device) + ", " +
           Duration(k.duration_s) + "\n";
    out += "  " + std::string(KernelBoundName(k.bound)) + ": " + k.why + "\n";
    out += "  speed of light: SM " + FormatDouble("%.1f %%", k.sm_throughput_pct) + ", memory " +
           FormatDouble("%.1f %%", k.memory_throughput_pct) + ", issue slots busy " +
           FormatDouble("%.1f %%", k.issue_active_pct) + "\n";
    for (const ComputeRoof& c : k.compute) {
      if (c.achieved_flops <= 0) continue;
      out += "  " + c.precision + (c.detail.empty() ? "" : " (" + c.detail + ")") + ": " +
             Si(c.achieved_flops) + "FLOP/s" +
             (c.peak_flops > 0 ? " of " + Si(c.peak_flops) + "FLOP/s" : ", no peak known") +
             (c.peak_source.starts_with("datasheet") ? " (" + c.peak_source + ")" : "") +
             (c.peak_flops > 0 ? FormatDouble(" (%.1f %%)", 100 * c.achieved_flops / c.peak_flops)
                               : "") +
             "\n";
    }
    for (const MemoryRoof& r : k.memory) {
      out += "  " + r.level + ": ";
      if (r.achieved_bps > 0) {
        out += Si(r.achieved_bps) + "B/s" + (r.peak_bps > 0 ? " of " + Si(r.peak_bps) + "B/s" : "");
        if (r.peak_source.starts_with("datasheet")) out += " (" + r.peak_source + ")";
        out += ", ";
      }
      out += FormatDouble("%.1f %% of peak", r.pct_of_peak);
      if (r.bytes > 0) out += ", " + Si(r.bytes) + "B moved";
      out += "\n";
    }
    if (k.intensity > 0) {
      out += "  roofline: " + FormatDouble("%.3g", k.intensity) + " FLOP/byte (DRAM), ridge " +
             FormatDouble("%.3g", k.ridge) + " for " + k.dominant->precision + ", " +
             FormatDouble("%.0f %%", k.pct_of_roof) + " of the roof at that intensity\n";
    }
    const OccupancyFacts& o = k.occupancy;
    out += "  occupancy: achieved " + FormatDouble("%.1f %%", o.achieved_pct) + " of theoretical " +
           FormatDouble("%.1f %%", o.theoretical_pct) + "; " + std::to_string(o.blocks_per_sm) +
           " block(s) of " + std::to_string(o.block_size) + " threads per SM" +
           // At full theoretical occupancy the limits only meet the SM's warp count.
           (o.theoretical_pct >= 99.9 ? std::string(", as many warps as an SM holds")
                                      : ", limited by " + Joined(o.limiters)) +
           " (" + std::to_string(o.registers_per_thread) + " registers/thread, " +
           Si(o.shared_bytes_per_block) + "B shared/block)\n";
    const bool at_roof = k.AtRoof();
    if (!k.stalls.empty()) {
      out += "  warp stalls (cycles per issued instruction)" +
             std::string(at_roof ? ": at its roof, these are how it waits there; what is left "
                                   "to gain is in precision or the algorithm"
                                 : "") +
             ":\n";
    }
    for (size_t i = 0; i < k.stalls.size() && i < 5; ++i) {
      const StallReason& s = k.stalls[i];
      out += "    " + s.reason + FormatDouble(" %.2f", s.cycles_per_issue) +
             FormatDouble(" (%.0f %% of stalls): ", 100 * s.share) + s.meaning + "\n";
      if (i < 3 && !s.fix.empty() && !at_roof) out += "      fix: " + s.fix + "\n";
    }
    if (!k.missing.empty()) {
      out += "  not in the file:";
      for (const std::string& m : k.missing) out += " " + m;
      out += "\n";
    }
  }
  return out;
}

nlohmann::ordered_json KernelAnalysesToJson(const std::vector<KernelAnalysis>& kernels) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const KernelAnalysis& k : kernels) {
    nlohmann::ordered_json compute = nlohmann::ordered_json::array();
    for (const ComputeRoof& c : k.compute) {
      compute.push_back({{"precision", c.precision},
                         {"detail", c.detail.empty() ? nlohmann::ordered_json()
                                                     : nlohmann::ordered_json(c.detail)},
                         {"achieved_flops", c.achieved_flops},
                         {"peak_flops", OrNull(c.peak_flops)},
                         {"peak_source", c.peak_source}});
    }
    nlohmann::ordered_json memory = nlohmann::ordered_json::array();
    for (const MemoryRoof& r : k.memory) {
      memory.push_back({{"level", r.level},
                        {"bytes", OrNull(r.bytes)},
                        {"achieved_bytes_per_s", OrNull(r.achieved_bps)},
                        {"peak_bytes_per_s", OrNull(r.peak_bps)},
                        {"peak_source", r.peak_source},
                        {"pct_of_peak", r.pct_of_peak}});
    }
    nlohmann::ordered_json stalls = nlohmann::ordered_json::array();
    for (const StallReason& s : k.stalls) {
      stalls.push_back({{"reason", s.reason},
                        {"metric", s.metric},
                        {"cycles_per_issue", s.cycles_per_issue},
                        {"share", s.share},
                        {"meaning", s.meaning},
                        {"fix", s.fix}});
    }
    const OccupancyFacts& o = k.occupancy;
    out.push_back(
        {{"file", k.file},
         {"id", k.id},
         {"kernel", k.kernel},
         {"device", k.device},
         {"duration_s", k.duration_s},
         {"bound", KernelBoundName(k.bound)},
         {"why", k.why},
         {"sm_throughput_pct", k.sm_throughput_pct},
         {"memory_throughput_pct", k.memory_throughput_pct},
         {"issue_active_pct", k.issue_active_pct},
         {"at_roof", k.AtRoof()},
         {"roofline",
          {{"precision", k.dominant ? nlohmann::ordered_json(k.dominant->precision) : nullptr},
           {"intensity_flop_per_byte", OrNull(k.intensity)},
           {"ridge_flop_per_byte", OrNull(k.ridge)},
           {"pct_of_roof", k.intensity > 0 ? nlohmann::ordered_json(k.pct_of_roof) : nullptr}}},
         {"compute", compute},
         {"memory", memory},
         {"occupancy",
          {{"theoretical_pct", o.theoretical_pct},
           {"achieved_pct", o.achieved_pct},
           {"blocks_per_sm", o.blocks_per_sm},
           {"limiters", o.limiters},
           {"registers_per_thread", o.registers_per_thread},
           {"shared_bytes_per_block", o.shared_bytes_per_block},
           {"block_size", o.block_size},
           {"waves_per_sm", o.waves_per_sm}}},
         {"stalls", stalls},
         {"missing_metrics", k.missing}});
  }
  return out;
}

}  // namespace rankscope
