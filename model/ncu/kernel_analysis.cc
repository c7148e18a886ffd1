#include "model/ncu/kernel_analysis.h"

#include <algorithm>

#include "core/format.h"
#include "model/ncu/gpu_peaks.h"

namespace rankscope {
namespace {

constexpr double kSectorBytes = 32;

std::string Percent(double pct) { return FormatDouble("%.0f %%", pct); }

// Reads one launch's metrics, noting the ones the analysis wanted and did not find.
class Metrics {
 public:
  Metrics(const NcuLaunch& launch, std::vector<std::string>* missing)
      : launch_(launch), missing_(missing), datasheet_(DatasheetPeaks(launch.device)) {}

  // The metric, or 0 noted as missing.
  double Need(const std::string& name) {
    if (const std::optional<double> v = launch_.Number(name)) return *v;
    missing_->push_back(name);
    return 0;
  }
  // The metric, or `fallback` silently (one of several ways to the same figure).
  double Get(const std::string& name, double fallback = 0) const {
    return launch_.Number(name).value_or(fallback);
  }
  bool Has(const std::string& name) const { return launch_.Number(name).has_value(); }
  const NcuLaunch& launch() const { return launch_; }
  // The data sheet's peaks for the launch's GPU, where the file has no peak of its own.
  const std::optional<GpuPeaks>& datasheet() const { return datasheet_; }

 private:
  const NcuLaunch& launch_;
  std::vector<std::string>* missing_;
  std::optional<GpuPeaks> datasheet_;
};

std::string DatasheetSource(const GpuPeaks& p) { return std::string("datasheet ") + p.model; }

// The part of `name` between `prefix` and `suffix` ("long_scoreboard" of
// "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"), or "" when it
// does not have both.
std::string Between(const std::string& name, const std::string& prefix, const std::string& suffix) {
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix)) {
    return "";
  }
  return name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
}

// FP64, FP32 and FP16 from the sass instruction counts, as ncu's roofline section computes
// them: (add + mul + 2 x fma) per elapsed cycle x the clock; the peak is the FMA pipe's.
std::vector<ComputeRoof> FmaRoofs(Metrics& m) {
  const double smsp_hz =
      m.Get("smsp__cycles_elapsed.avg.per_second", m.Get("sm__cycles_elapsed.avg.per_second"));
  const double sm_hz = m.Get("sm__cycles_elapsed.avg.per_second", smsp_hz);
  std::vector<ComputeRoof> roofs;
  for (const auto& [letter, precision] :
       {std::pair{'d', "fp64"}, std::pair{'f', "fp32"}, std::pair{'h', "fp16"}}) {
    const std::string op = std::string("smsp__sass_thread_inst_executed_op_") + letter;
    const std::string peak = std::string("sm__sass_thread_inst_executed_op_") + letter +
                             "fma_pred_on.sum.peak_sustained";
    // Without ncu's peak: the data sheet's for FP64 and FP32 (FP16 on the FMA pipes is not
    // on the sheets).
    const std::optional<GpuPeaks>& sheet = m.datasheet();
    const double sheet_peak = !sheet          ? 0
                              : letter == 'd' ? sheet->fp64_flops
                              : letter == 'f' ? sheet->fp32_flops
                                              : 0;
    ComputeRoof r;
    r.precision = precision;
    const double per_cycle = m.Get(op + "add_pred_on.sum.per_cycle_elapsed") +
                             m.Get(op + "mul_pred_on.sum.per_cycle_elapsed") +
                             2 * m.Get(op + "fma_pred_on.sum.per_cycle_elapsed");
    r.achieved_flops = per_cycle * smsp_hz;
    r.peak_flops = 2 * m.Get(peak) * sm_hz;
    r.peak_source = "ncu";
    if (r.peak_flops <= 0) {
      // A precision with neither a peak nor work says nothing; with work, it stays unplaced.
      if (sheet_peak <= 0 && r.achieved_flops <= 0) continue;
      r.peak_flops = sheet_peak;
      r.peak_source = sheet_peak > 0 ? DatasheetSource(*sheet) : "";
    }
    roofs.push_back(r);
  }
  return roofs;
}

// The tensor cores: the op path (sm__ops_path_tensor_op_<path>) that did the most work, its
// rate and the peak of that path at the run's clocks. An op is a FLOP (an MMA counts 2 a
// multiply-add, as the peaks do).
std::optional<ComputeRoof> TensorRoof(const Metrics& m) {
  static const std::string kPrefix = "sm__ops_path_tensor_op_";
  static const std::string kRate = ".sum.per_second";
  std::optional<ComputeRoof> best;
  for (const auto& [name, value] : m.launch().numbers) {
    const std::string path = Between(name, kPrefix, kRate);
    if (path.empty() || value <= 0 || (best && best->achieved_flops >= value)) continue;
    ComputeRoof r;
    r.precision = "tensor";
    r.detail = path;
    r.achieved_flops = value;
    r.peak_flops = m.Get(kPrefix + path + ".sum.peak_sustained_elapsed.per_second");
    r.peak_source = "ncu";
    const bool sixteen_bit =
        path.find("bf16") != std::string::npos || path.find("fp16") != std::string::npos;
    if (r.peak_flops <= 0 && sixteen_bit && m.datasheet()) {
      r.peak_flops = m.datasheet()->tensor_16bit_flops;
      r.peak_source = DatasheetSource(*m.datasheet());
    }
    best = r;
  }
  return best;
}

std::vector<MemoryRoof> MemoryRoofs(Metrics& m) {
  std::vector<MemoryRoof> roofs;
  if (m.Has("dram__bytes.sum.per_second")) {
    MemoryRoof d;
    d.level = "dram";
    d.achieved_bps = m.Get("dram__bytes.sum.per_second");
    d.peak_bps =
        m.Get("dram__bytes.sum.peak_sustained") * m.Get("dram__cycles_elapsed.avg.per_second");
    d.peak_source = "ncu";
    if (d.peak_bps <= 0 && m.datasheet()) {
      d.peak_bps = m.datasheet()->dram_bps;
      d.peak_source = DatasheetSource(*m.datasheet());
    }
    d.bytes =
        m.Get("dram__bytes.sum", m.Get("dram__bytes_read.sum") + m.Get("dram__bytes_write.sum"));
    d.pct_of_peak = m.Get("dram__throughput.avg.pct_of_peak_sustained_elapsed",
                          d.peak_bps > 0 ? 100 * d.achieved_bps / d.peak_bps : 0);
    roofs.push_back(d);
  } else {
    m.Need("dram__bytes.sum.per_second");
  }
  if (m.Has("lts__t_sectors.sum.per_second")) {
    MemoryRoof l2;
    l2.level = "l2";
    l2.achieved_bps = kSectorBytes * m.Get("lts__t_sectors.sum.per_second");
    l2.bytes = kSectorBytes * m.Get("lts__t_sectors.sum");
    const double pct = m.Get("lts__t_sectors.sum.pct_of_peak_sustained_elapsed");
    l2.peak_bps = pct > 0 ? l2.achieved_bps * 100 / pct : 0;
    l2.peak_source = "ncu";
    l2.pct_of_peak = m.Get("lts__throughput.avg.pct_of_peak_sustained_elapsed", pct);
    roofs.push_back(l2);
  }
  if (m.Has("l1tex__throughput.avg.pct_of_peak_sustained_active")) {
    MemoryRoof l1;
    l1.level = "l1";
    l1.pct_of_peak = m.Get("l1tex__throughput.avg.pct_of_peak_sustained_active");
    roofs.push_back(l1);
  }
  return roofs;
}

OccupancyFacts Occupancy(Metrics& m) {
  OccupancyFacts o;
  o.theoretical_pct = m.Need("sm__maximum_warps_per_active_cycle_pct");
  o.achieved_pct = m.Need("sm__warps_active.avg.pct_of_peak_sustained_active");
  o.registers_per_thread = static_cast<int>(m.Get("launch__registers_per_thread"));
  o.shared_bytes_per_block = m.Get("launch__shared_mem_per_block");
  o.block_size = static_cast<int>(m.Get("launch__block_size"));
  o.waves_per_sm = m.Get("launch__waves_per_multiprocessor");
  const std::pair<const char*, const char*> kLimits[] = {
      {"launch__occupancy_limit_registers", "registers"},
      {"launch__occupancy_limit_shared_mem", "shared memory"},
      {"launch__occupancy_limit_warps", "block size (warps per SM)"},
      {"launch__occupancy_limit_blocks", "blocks per SM"},
      {"launch__occupancy_limit_barriers", "barriers"},
  };
  double least = 0;
  for (const auto& [metric, label] : kLimits) {
    if (!m.Has(metric)) continue;
    const double v = m.Get(metric);
    if (o.limiters.empty() || v < least) {
      least = v;
      o.limiters = {label};
    } else if (v == least) {
      o.limiters.push_back(label);
    }
  }
  o.blocks_per_sm = static_cast<int>(least);
  return o;
}

struct StallText {
  const char* reason;
  const char* meaning;
  const char* fix;
};

// What each of ncu's stall reasons means and what usually removes it (ncu's Warp State
// Statistics section and the CUDA best-practices guide say the same in more words).
constexpr StallText kStallTexts[] = {
    {"long_scoreboard", "waiting for data from global or local memory (L1TEX)",
     "memory latency: coalesce accesses, keep more bytes in flight per thread (wider or more "
     "independent loads), prefetch with cp.async / TMA, stage reused data in shared memory"},
    {"short_scoreboard", "waiting for shared memory or special-function (MUFU) results",
     "shared-memory bank conflicts (pad or swizzle the layout) or costly special functions (use "
     "intrinsics such as __expf, fewer divisions)"},
    {"mio_throttle", "the MIO queue (shared memory, special functions, branches) is full",
     "too many shared-memory instructions: remove bank conflicts (padding / swizzle), use "
     "128-bit shared loads, fewer special-function calls"},
    {"lg_throttle", "the LSU queue for global and local memory is full",
     "many small memory instructions: vectorise loads and stores (float4), avoid local-memory "
     "spills (registers per thread)"},
    {"tex_throttle", "the texture unit's queue is full",
     "too many texture / surface fetches: fewer, wider fetches, or plain global loads"},
    {"math_pipe_throttle", "a math pipe is busy: the pipe is the roof",
     "the instruction mix saturates one pipe: use a faster unit or precision (tensor cores, "
     "FP16/BF16), or move work to an idle pipe"},
    {"wait", "a fixed-latency dependency (an ALU/FMA result needed next)",
     "dependent instruction chains: raise instruction-level parallelism (unroll, independent "
     "accumulators) or occupancy"},
    {"not_selected", "ready, but the scheduler issued another warp",
     "the scheduler has enough ready warps: issue slots, not latency, limit it; fewer warps "
     "with more ILP each do as well"},
    {"barrier", "waiting at a block barrier (__syncthreads)",
     "uneven work between the warps of a block: balance it, fewer barriers, smaller blocks"},
    {"membar", "waiting on a memory fence", "fewer fences, or a narrower scope (block, not GPU)"},
    {"branch_resolving", "waiting for a branch target to resolve",
     "divergent or data-dependent branches: predicate, or reorganise so warps branch together"},
    {"no_instruction", "no instruction fetched (instruction-cache miss, after a branch)",
     "code too large or jumping: less unrolling, fewer template instances in one kernel"},
    {"dispatch_stall", "the dispatcher held the instruction back (pipe conflict)",
     "rare; register-bank or pipe conflicts: look at the SASS of the hot loop"},
    {"drain", "waiting for memory stores to drain at exit",
     "usually small: fewer stores at the end"},
    {"imc_miss", "waiting for the immediate-constant cache",
     "constant-memory reads that differ across a warp: keep them uniform or in registers"},
    {"sleeping", "warps asleep (__nanosleep, yield)", "intended waiting: check the back-off"},
    {"gmma", "waiting for warpgroup MMA (Hopper tensor cores)",
     "the tensor cores are the busy unit: the GEMM runs at its roof; larger tiles or FP8 move it"},
    {"misc", "other reasons", "no single fix"},
};

std::vector<StallReason> Stalls(const Metrics& m) {
  static const std::string kPrefix = "smsp__average_warps_issue_stalled_";
  static const std::string kSuffix = "_per_issue_active.ratio";
  std::vector<StallReason> stalls;
  double total = 0;
  for (const auto& [name, value] : m.launch().numbers) {
    StallReason s;
    s.reason = Between(name, kPrefix, kSuffix);
    if (s.reason.empty()) continue;
    if (s.reason == "selected") continue;  // the cycle the warp issues: not a stall
    s.metric = name;
    s.cycles_per_issue = value;
    total += value;
    stalls.push_back(s);
  }
  for (StallReason& s : stalls) {
    s.share = total > 0 ? s.cycles_per_issue / total : 0;
    for (const StallText& t : kStallTexts) {
      if (s.reason == t.reason) {
        s.meaning = t.meaning;
        s.fix = t.fix;
      }
    }
  }
  std::erase_if(stalls, [](const StallReason& s) { return s.share < 0.01; });
  std::sort(stalls.begin(), stalls.end(), [](const StallReason& a, const StallReason& b) {
    return a.cycles_per_issue != b.cycles_per_issue ? a.cycles_per_issue > b.cycles_per_issue
                                                    : a.reason < b.reason;
  });
  return stalls;
}

// The roof at the kernel's intensity and how near it is; the verdict and the sentence behind it.
void Judge(KernelAnalysis* k) {
  const MemoryRoof* dram = k->Dram();
  // The precision that did the most work against its own peak.
  for (const ComputeRoof& c : k->compute) {
    if (c.peak_flops <= 0 || c.achieved_flops <= 0) continue;
    if (!k->dominant ||
        c.achieved_flops / c.peak_flops > k->dominant->achieved_flops / k->dominant->peak_flops) {
      k->dominant = c;
    }
  }
  if (k->dominant && dram != nullptr && dram->achieved_bps > 0 && dram->peak_bps > 0) {
    k->intensity = k->dominant->achieved_flops / dram->achieved_bps;
    k->ridge = k->dominant->peak_flops / dram->peak_bps;
    const double attainable = std::min(k->dominant->peak_flops, k->intensity * dram->peak_bps);
    k->pct_of_roof = attainable > 0 ? 100 * k->dominant->achieved_flops / attainable : 0;
  }
  const double sm = k->sm_throughput_pct;
  const double mem = k->memory_throughput_pct;
  if (sm <= 0 && mem <= 0) {
    k->bound = KernelBound::kUnknown;
    k->why =
        "the file has no throughput figures (profile with --set full or --section "
        "SpeedOfLight)";
    return;
  }
  if (std::max(sm, mem) < kNearRoofPct) {
    k->bound = KernelBound::kLatency;
    k->why = "neither roof is near: SM throughput " + Percent(sm) + ", memory " + Percent(mem) +
             " of peak (both under " + Percent(kNearRoofPct) +
             "): the SMs wait; occupancy and the stall reasons say on what";
    return;
  }
  if (k->intensity > 0) {
    const bool memory_side = k->intensity < k->ridge;
    k->bound = memory_side ? KernelBound::kMemory : KernelBound::kCompute;
    k->why = "arithmetic intensity " +
             FormatDouble(k->intensity < 10 ? "%.1f" : "%.0f", k->intensity) + " FLOP/byte " +
             (memory_side ? "below" : "above") + " the " + k->dominant->precision +
             " ridge point " + FormatDouble("%.1f", k->ridge) + ": " + Percent(k->pct_of_roof) +
             " of the " +
             (memory_side ? "DRAM bandwidth roof" : k->dominant->precision + " compute roof") +
             " at that intensity";
    if (memory_side && sm > mem) {
      k->why += "; the SM is busier than memory (SM " + Percent(sm) + ", memory " + Percent(mem) +
                "): instructions the roofline does not count as FLOPs (conversions, special "
                "functions, integer work) fill the issue slots";
    } else if (!memory_side && k->pct_of_roof < kNearRoofPct && sm >= kNearRoofPct) {
      // Far under its FLOP roof with a busy SM: something the roofline does not count bounds it.
      k->why += "; the SM is " + Percent(sm) + " busy while " + k->dominant->precision +
                " is far under its roof: instructions the roofline does not count as FLOPs "
                "(special functions, conversions, integer work) or their latency bound it, as "
                "the stalls say";
    }
    return;
  }
  // No roofline to place it on: the busier of the two throughputs, and why there is none.
  const bool flops = std::any_of(k->compute.begin(), k->compute.end(),
                                 [](const ComputeRoof& c) { return c.achieved_flops > 0; });
  k->bound = sm >= mem ? KernelBound::kCompute : KernelBound::kMemory;
  k->why = std::string(flops ? "no compute or DRAM peak for this GPU (not in the file, not in the "
                               "data-sheet table)"
                             : "no floating-point work counted") +
           "; by Speed Of Light: SM throughput " + Percent(sm) + ", memory " + Percent(mem) +
           " of peak";
}

}  // namespace

const MemoryRoof* KernelAnalysis::Dram() const {
  for (const MemoryRoof& r : memory) {
    if (r.level == "dram") return &r;
  }
  return nullptr;
}

bool KernelAnalysis::AtRoof() const {
  return bound == KernelBound::kCompute && pct_of_roof >= kAtRoofPct;
}

const char* KernelBoundName(KernelBound b) {
  switch (b) {
    case KernelBound::kCompute:
      return "compute-bound";
    case KernelBound::kMemory:
      return "memory-bound";
    case KernelBound::kLatency:
      return "latency-bound";
    case KernelBound::kUnknown:
      return "unknown";
  }
  return "unknown";
}

KernelAnalysis AnalyzeKernel(const NcuLaunch& launch) {
  KernelAnalysis k;
  k.id = launch.id;
  k.kernel = launch.kernel;
  k.device = launch.device;
  Metrics m(launch, &k.missing);
  k.duration_s = m.Need("gpu__time_duration.sum");
  k.compute = FmaRoofs(m);
  if (std::optional<ComputeRoof> tensor = TensorRoof(m)) k.compute.push_back(*tensor);
  k.memory = MemoryRoofs(m);
  k.sm_throughput_pct = m.Need("sm__throughput.avg.pct_of_peak_sustained_elapsed");
  k.memory_throughput_pct =
      m.Need("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
  k.issue_active_pct = m.Get("smsp__issue_active.avg.pct_of_peak_sustained_active");
  k.occupancy = Occupancy(m);
  k.stalls = Stalls(m);
  Judge(&k);
  return k;
}

}  // namespace rankscope
