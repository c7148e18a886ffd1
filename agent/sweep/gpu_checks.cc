#include "agent/sweep/gpu_checks.h"

#include <dlfcn.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>

#include "agent/sweep/cuda_driver.h"
#include "agent/sweep/nccl_allreduce.h"
#include "core/format.h"

namespace rankscope {
namespace {

std::string Subject(uint32_t index) { return "gpu" + std::to_string(index); }

SweepCheckResult Figure(const std::string& name, const NvmlGpuHealth& g, double value,
                        const std::string& unit, const std::string& detail) {
  SweepCheckResult r{name, Subject(g.index), value, unit, "", detail};
  r.model = g.name;
  return r;
}

// ---- The CUDA side: every GPU's primary context, and a timed round of work on a stream.

struct Gpu {
  int ordinal = 0;
  std::string name;
  CudaDriver::Context context = nullptr;
  CudaDriver::Stream stream = nullptr;
};

SweepCheckResult GpuError(const std::string& check, const Gpu& gpu, const std::string& what) {
  SweepCheckResult r{check, Subject(static_cast<uint32_t>(gpu.ordinal)), 0, "", what, ""};
  r.model = gpu.name;
  return r;
}

// Loads the driver and opens every GPU with a stream of its own. Returns false when there is
// nothing to measure: no driver or no GPU (`errors` stays empty) or a broken driver (an error
// result under `check`). A GPU that cannot be opened is an error result and left out.
bool OpenGpus(const std::string& check, CudaDriver* cu, std::vector<Gpu>* gpus,
              std::vector<SweepCheckResult>* errors) {
  // Number GPUs as NVML and nvidia-smi do, unless the user's environment says otherwise.
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", /*overwrite=*/0);
  CudaPresence presence = CudaPresence::kNoDriver;
  if (Status s = LoadCudaDriver(cu, &presence); !s.ok()) {
    errors->push_back({check, "", 0, "", s.message(), ""});
    return false;
  }
  if (presence != CudaPresence::kReady) return false;
  int count = 0;
  cu->device_count(&count);
  for (int i = 0; i < count; ++i) {
    Gpu gpu;
    gpu.ordinal = i;
    if (CudaDriver::Result r = cu->Open(i, &gpu.context, &gpu.stream, &gpu.name); r != 0) {
      errors->push_back(GpuError(check, gpu, "cannot open the GPU: " + cu->Error(r)));
      continue;
    }
    gpus->push_back(gpu);
  }
  return !gpus->empty();
}

// Repeats rounds of `enqueue(reps)` on `stream`, timed by two events, until `budget` has passed:
// reps double until a round lasts 20 ms, and the best rate (`amount_per_rep` per rep over the
// round's time) is kept. A CUDA error ends the measurement.
Status BestRate(const CudaDriver& cu, CudaDriver::Stream stream, DurationNs budget,
                double amount_per_rep, const std::function<CudaDriver::Result(int)>& enqueue,
                double* rate) {
  CudaDriver::Event start = nullptr, end = nullptr;
  CudaDriver::Result r = cu.event_create(&start, 0);
  if (r == 0) r = cu.event_create(&end, 0);
  if (r == 0) r = enqueue(1);  // warm-up: first touch, lazy loading
  if (r == 0) r = cu.stream_synchronize(stream);
  const TimeNs deadline = MonotonicNow() + budget;
  int reps = 1;
  *rate = 0;
  while (r == 0) {
    r = cu.event_record(start, stream);
    if (r == 0) r = enqueue(reps);
    if (r == 0) r = cu.event_record(end, stream);
    if (r == 0) r = cu.event_synchronize(end);
    float ms = 0;
    if (r == 0) r = cu.event_elapsed_ms(&ms, start, end);
    if (r != 0) break;
    if (ms > 0) *rate = std::max(*rate, amount_per_rep * reps / (ms / 1e3));
    if (ms < 20 && reps < (1 << 20)) reps *= 2;
    if (MonotonicNow() >= deadline && *rate > 0) return Status();
  }
  return Status::Error(cu.Error(r));
}

// Device memory freed when it goes out of scope (in the GPU's context).
struct DeviceBuffer {
  const CudaDriver* cu = nullptr;
  CudaDriver::DevicePtr ptr = 0;
  ~DeviceBuffer() {
    if (ptr != 0) cu->mem_free(ptr);
  }
};

struct HostBuffer {
  const CudaDriver* cu = nullptr;
  void* ptr = nullptr;
  ~HostBuffer() {
    if (ptr != nullptr) cu->mem_free_host(ptr);
  }
};

}  // namespace

std::vector<SweepCheckResult> GpuHealthResults(const std::vector<NvmlGpuHealth>& gpus,
                                               const std::string& xid_watch_error) {
  std::vector<SweepCheckResult> out;
  if (!xid_watch_error.empty()) {
    out.push_back({"gpu.xid_events", "", 0, "", "XID events not watched: " + xid_watch_error, ""});
  }
  for (const NvmlGpuHealth& g : gpus) {
    if (g.name.rfind("unreachable: ", 0) == 0) {
      out.push_back({"gpu.nvml", Subject(g.index), 0, "", "NVML: GPU " + g.name, ""});
      continue;
    }
    const std::string where = g.bus_id.empty() ? g.name : g.name + " at " + g.bus_id;
    if (g.ecc_uncorrected_volatile >= 0) {
      const std::string ecc =
          "since driver load: " + std::to_string(g.ecc_corrected_volatile) + " corrected, " +
          std::to_string(g.ecc_uncorrected_volatile) +
          " uncorrected; lifetime: " + std::to_string(g.ecc_corrected_aggregate) + " corrected, " +
          std::to_string(g.ecc_uncorrected_aggregate) + " uncorrected";
      out.push_back(Figure("gpu.ecc_uncorrected_volatile", g,
                           static_cast<double>(g.ecc_uncorrected_volatile), "total", ecc));
      if (g.ecc_corrected_volatile >= 0)
        out.push_back(Figure("gpu.ecc_corrected_volatile", g,
                             static_cast<double>(g.ecc_corrected_volatile), "total", ecc));
    }
    if (g.ecc_uncorrected_aggregate >= 0) {
      out.push_back(Figure("gpu.ecc_uncorrected_aggregate", g,
                           static_cast<double>(g.ecc_uncorrected_aggregate), "total", where));
      if (g.ecc_corrected_aggregate >= 0)
        out.push_back(Figure("gpu.ecc_corrected_aggregate", g,
                             static_cast<double>(g.ecc_corrected_aggregate), "total", where));
    }
    if (g.retired_pages_sbe >= 0 && g.retired_pages_dbe >= 0) {
      out.push_back(Figure("gpu.retired_pages", g,
                           static_cast<double>(g.retired_pages_sbe + g.retired_pages_dbe), "total",
                           std::to_string(g.retired_pages_sbe) + " for single-bit, " +
                               std::to_string(g.retired_pages_dbe) + " for double-bit errors" +
                               (g.retired_pending == 1 ? "; a retirement is pending" : "")));
    }
    if (g.remapped_uncorrectable >= 0) {
      const std::string rows = std::to_string(g.remapped_correctable) + " correctable, " +
                               std::to_string(g.remapped_uncorrectable) + " uncorrectable" +
                               (g.remap_pending == 1 ? "; a remap waits for a GPU reset" : "") +
                               (g.remap_failed == 1 ? "; a remap FAILED" : "");
      out.push_back(Figure("gpu.remapped_rows_uncorrectable", g,
                           static_cast<double>(g.remapped_uncorrectable), "total", rows));
      out.push_back(Figure("gpu.row_remap_pending", g, g.remap_pending, "", rows));
      out.push_back(Figure("gpu.row_remap_failed", g, g.remap_failed, "", rows));
    }
    if (g.clock_event_reasons_known) {
      const uint64_t bad = g.clock_event_reasons & kNvmlBadClockEventReasons;
      out.push_back(
          Figure("gpu.clock_events", g, __builtin_popcountll(bad), "",
                 bad != 0 ? "slowed by " + NvmlClockEventReasonNames(bad) + " (all reasons seen: " +
                                NvmlClockEventReasonNames(g.clock_event_reasons) + ")"
                          : "reasons seen: " + NvmlClockEventReasonNames(g.clock_event_reasons)));
    }
    if (g.temperature_max_c >= 0) {
      out.push_back(
          Figure("gpu.temperature", g, g.temperature_max_c, "celsius", "hottest while watched"));
    }
    if (g.power_max_w >= 0) {
      out.push_back(Figure(
          "gpu.power", g, g.power_max_w, "watts",
          "highest while watched" + (g.power_limit_w > 0
                                         ? "; limit " + FormatDouble("%.0f W", g.power_limit_w)
                                         : std::string())));
    }
    if (g.pcie_gen_current > 0 && g.pcie_gen_max > 0 && g.pcie_width_current > 0 &&
        g.pcie_width_max > 0) {
      const std::string link = "best seen gen " + std::to_string(g.pcie_gen_current) + " x" +
                               std::to_string(g.pcie_width_current) + " of gen " +
                               std::to_string(g.pcie_gen_max) + " x" +
                               std::to_string(g.pcie_width_max);
      out.push_back(Figure("gpu.pcie_gen_below_max", g,
                           std::max(0, g.pcie_gen_max - g.pcie_gen_current), "", link));
      out.push_back(Figure("gpu.pcie_lanes_below_max", g,
                           std::max(0, g.pcie_width_max - g.pcie_width_current), "", link));
    }
    if (g.pcie_replays_during >= 0) {
      out.push_back(Figure("gpu.pcie_replays", g, static_cast<double>(g.pcie_replays_during), "",
                           "link-level retransmissions while watched; " +
                               std::to_string(g.pcie_replays) + " since driver load"));
    }
    if (g.nvlinks_total > 0) {
      out.push_back(Figure(
          "gpu.nvlinks_down", g, g.nvlinks_total - g.nvlinks_up, "",
          std::to_string(g.nvlinks_up) + " of " + std::to_string(g.nvlinks_total) + " NVLinks up"));
      if (g.nvlink_errors_during >= 0) {
        std::string kinds;
        for (int k = 0; k < 4; ++k) {
          if (g.nvlink_errors[k] < 0) continue;
          kinds += (kinds.empty() ? "" : ", ") + std::to_string(g.nvlink_errors[k]) + " " +
                   kNvlinkErrorKinds[k];
        }
        out.push_back(Figure("gpu.nvlink_errors", g, static_cast<double>(g.nvlink_errors_during),
                             "",
                             "replays, recoveries and flit CRC errors while watched, over all "
                             "links; since driver load: " +
                                 kinds));
      }
      if (g.nvlink_data_crc_during >= 0) {
        out.push_back(Figure("gpu.nvlink_data_crc", g,
                             static_cast<double>(g.nvlink_data_crc_during), "",
                             "data CRC count while watched, over all links (on H200 what lane ECC "
                             "corrected: a rise far above the other GPUs' marks a weak link)"));
      }
    }
    if (xid_watch_error.empty()) {
      int total = 0;
      std::string per_xid;
      for (const auto& [xid, n] : g.xids) {
        total += n;
        per_xid += (per_xid.empty() ? "" : ", ") +
                   ("XID " + std::to_string(xid) + " x" + std::to_string(n));
      }
      out.push_back(
          Figure("gpu.xid_events", g, total, "", per_xid.empty() ? "none while watched" : per_xid));
    }
  }
  return out;
}

std::vector<SweepCheckResult> WatchGpuHealth(int stop_fd, const std::string& library) {
  void* probe = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (probe == nullptr) return {};  // no driver: a CPU node
  Result<std::unique_ptr<NvmlHealthWatch>> watch = NvmlHealthWatch::Start(library);
  if (!watch.ok()) return {{"gpu.nvml", "", 0, "", watch.status().message(), ""}};
  NvmlHealthWatch& w = *watch.value();
  for (;;) {
    // One sample per 200 ms, whether or not XID events can be waited for.
    const TimeNs next = MonotonicNow() + 200 * kNsPerMs;
    w.WaitEvents(200);
    w.Sample();
    pollfd p{stop_fd, POLLIN, 0};
    const int wait_ms = static_cast<int>(std::max<DurationNs>(next - MonotonicNow(), 0) / kNsPerMs);
    if (poll(&p, 1, wait_ms) > 0) {
      char c;
      if (read(stop_fd, &c, 1) <= 0) break;  // the sweep closed its end: the GPU checks are done
    }
  }
  w.WaitEvents(0);  // what came in since the last wait
  const std::vector<NvmlGpuHealth> gpus = w.Finish();
  return GpuHealthResults(gpus, w.xid_watch_error());
}

std::vector<SweepCheckResult> MeasureGpuCopyBandwidth(DurationNs budget) {
  CudaDriver cu;
  std::vector<Gpu> gpus;
  std::vector<SweepCheckResult> out;
  if (!OpenGpus("gpu.copy_bandwidth", &cu, &gpus, &out)) return out;
  constexpr size_t kBytes = size_t{256} << 20;
  const DurationNs share = budget / static_cast<DurationNs>(3 * gpus.size());
  for (const Gpu& gpu : gpus) {
    cu.ctx_set_current(gpu.context);
    DeviceBuffer a{&cu}, b{&cu};
    HostBuffer host{&cu};
    CudaDriver::Result r = cu.mem_alloc(&a.ptr, kBytes);
    if (r == 0) r = cu.mem_alloc(&b.ptr, kBytes);
    if (r == 0) r = cu.mem_alloc_host(&host.ptr, kBytes);
    if (r == 0) r = cu.memset_d8(a.ptr, 1, kBytes);
    if (r != 0) {
      out.push_back(GpuError("gpu.copy_bandwidth", gpu, "allocating 3 x 256 MiB: " + cu.Error(r)));
      continue;
    }
    struct Copy {
      const char* name;
      double bytes_per_rep;
      std::function<CudaDriver::Result()> one;
      const char* detail;
    };
    const Copy copies[] = {
        {"gpu.h2d_bandwidth", kBytes,
         [&] { return cu.memcpy_htod_async(a.ptr, host.ptr, kBytes, gpu.stream); },
         "pinned host to device, 256 MiB copies"},
        {"gpu.d2h_bandwidth", kBytes,
         [&] { return cu.memcpy_dtoh_async(host.ptr, a.ptr, kBytes, gpu.stream); },
         "device to pinned host, 256 MiB copies"},
        {"gpu.d2d_bandwidth", 2.0 * kBytes,
         [&] { return cu.memcpy_dtod_async(b.ptr, a.ptr, kBytes, gpu.stream); },
         "256 MiB copies within the GPU, read plus written bytes"},
    };
    for (const Copy& c : copies) {
      double rate = 0;
      Status s = BestRate(
          cu, gpu.stream, share, c.bytes_per_rep,
          [&c](int reps) {
            CudaDriver::Result rr = 0;
            for (int i = 0; i < reps && rr == 0; ++i) rr = c.one();
            return rr;
          },
          &rate);
      if (!s.ok()) {
        out.push_back(GpuError(c.name, gpu, s.message()));
        continue;
      }
      SweepCheckResult res{c.name, Subject(static_cast<uint32_t>(gpu.ordinal)),
                           rate,   "bytes_per_second",
                           "",     c.detail};
      res.model = gpu.name;
      out.push_back(res);
    }
  }
  return out;
}

std::string FmaKernelPtx() {
  // Eight independent chains x = x * m + c per thread (m just below 1, so values stay finite
  // and normal), four times per loop turn: 32 FMAs, 64 flops a turn. The sum is stored so the
  // compiler keeps the work.
  constexpr int kChains = 8;
  std::string ptx =
      ".version 6.0\n.target sm_60\n.address_size 64\n"
      ".visible .entry rankscope_fma(.param .u64 out, .param .u32 turns)\n{\n"
      "  .reg .pred %p;\n  .reg .b32 %r<8>;\n  .reg .f32 %f<16>;\n  .reg .b64 %rd<4>;\n"
      "  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n  mov.u32 %r3, %tid.x;\n"
      "  mad.lo.s32 %r4, %r1, %r2, %r3;\n  cvt.rn.f32.u32 %f0, %r4;\n"
      "  mul.f32 %f0, %f0, 0f33800000;\n";
  for (int i = 1; i <= kChains; ++i) {
    char start[16];
    std::snprintf(start, sizeof(start), "%08X", 0x3F800000u + static_cast<unsigned>(i) * 0x100000u);
    ptx += "  add.f32 %f" + std::to_string(i) + ", %f0, 0f" + start + ";\n";
  }
  ptx += "  mov.f32 %f9, 0f3F7FFFFE;\n  mov.f32 %f10, 0f33800000;\n";
  ptx += "  ld.param.u32 %r5, [turns];\nTURN:\n";
  for (int unroll = 0; unroll < 4; ++unroll) {
    for (int i = 1; i <= kChains; ++i) {
      const std::string f = "%f" + std::to_string(i);
      ptx += "  fma.rn.f32 " + f + ", " + f + ", %f9, %f10;\n";
    }
  }
  ptx += "  sub.s32 %r5, %r5, 1;\n  setp.gt.s32 %p, %r5, 0;\n  @%p bra TURN;\n";
  for (int i = 2; i <= kChains; ++i) ptx += "  add.f32 %f1, %f1, %f" + std::to_string(i) + ";\n";
  ptx +=
      "  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd2, %rd1;\n"
      "  mul.wide.u32 %rd3, %r4, 4;\n  add.s64 %rd2, %rd2, %rd3;\n"
      "  st.global.f32 [%rd2], %f1;\n  ret;\n}\n";
  return ptx;
}

std::vector<SweepCheckResult> MeasureGpuFlops(DurationNs budget) {
  CudaDriver cu;
  std::vector<Gpu> gpus;
  std::vector<SweepCheckResult> out;
  if (!OpenGpus("gpu.fp32_flops", &cu, &gpus, &out)) return out;
  const std::string ptx = FmaKernelPtx();
  const DurationNs share = budget / static_cast<DurationNs>(gpus.size());
  for (const Gpu& gpu : gpus) {
    cu.ctx_set_current(gpu.context);
    int sms = 0;
    CudaDriver::Device device = 0;
    CudaDriver::Module module = nullptr;
    CudaDriver::Function kernel = nullptr;
    CudaDriver::Result r = cu.device_get(&device, gpu.ordinal);
    if (r == 0) r = cu.device_attribute(&sms, kCudaAttributeMultiprocessorCount, device);
    if (r == 0) r = cu.module_load_data(&module, ptx.c_str());
    if (r == 0) r = cu.module_get_function(&kernel, module, "rankscope_fma");
    const unsigned threads = 256, blocks = static_cast<unsigned>(std::max(1, sms)) * 8;
    DeviceBuffer sums{&cu};
    if (r == 0) r = cu.mem_alloc(&sums.ptr, size_t{blocks} * threads * sizeof(float));
    if (r != 0) {
      out.push_back(GpuError("gpu.fp32_flops", gpu, "loading the kernel: " + cu.Error(r)));
      continue;
    }
    unsigned turns = 1024;
    void* args[] = {&sums.ptr, &turns};
    const double flops_per_launch = 64.0 * turns * blocks * threads;
    double rate = 0;
    Status s = BestRate(
        cu, gpu.stream, share, flops_per_launch,
        [&](int reps) {
          CudaDriver::Result rr = 0;
          for (int i = 0; i < reps && rr == 0; ++i) {
            rr =
                cu.launch_kernel(kernel, blocks, 1, 1, threads, 1, 1, 0, gpu.stream, args, nullptr);
          }
          return rr;
        },
        &rate);
    if (!s.ok()) {
      out.push_back(GpuError("gpu.fp32_flops", gpu, s.message()));
      continue;
    }
    SweepCheckResult res{"gpu.fp32_flops",
                         Subject(static_cast<uint32_t>(gpu.ordinal)),
                         rate,
                         "flops",
                         "",
                         "FP32 FMA kernel, " + std::to_string(blocks) + " blocks x " +
                             std::to_string(threads) + " threads on " + std::to_string(sms) +
                             " SMs"};
    res.model = gpu.name;
    out.push_back(res);
  }
  return out;
}

std::vector<SweepCheckResult> MeasureNcclAllReduce(DurationNs budget, size_t bytes,
                                                   const std::string& nccl_library) {
  CudaDriver cu;
  std::vector<Gpu> gpus;
  std::vector<SweepCheckResult> out;
  if (!OpenGpus("gpu.nccl_allreduce_busbw", &cu, &gpus, &out) || gpus.size() < 2) return out;
  NcclLibrary nccl;
  if (Status s = nccl.Load(nccl_library); !s.ok()) {
    // Many nodes run NCCL from their framework's wheel only: nothing to judge, said in the log.
    std::printf("rankscope sweep-node: NCCL all-reduce skipped: %s\n", s.message().c_str());
    std::fflush(stdout);  // the check's child ends with _exit
    return out;
  }
  auto failed = [&gpus, &out](const std::string& why) {
    SweepCheckResult r{"gpu.nccl_allreduce_busbw", "node", 0, "", "NCCL: " + why, ""};
    r.model = gpus[0].name;
    out.push_back(r);  // after any GPU that could not be opened
    return out;
  };
  const int n = static_cast<int>(gpus.size());
  std::vector<int> devices;
  for (const Gpu& g : gpus) devices.push_back(g.ordinal);
  std::vector<void*> comms(gpus.size());
  if (int r = nccl.comm_init_all(comms.data(), n, devices.data()); r != 0) {
    return failed(nccl.Error("ncclCommInitAll", r));
  }
  std::vector<AllReduceGpu> all;
  for (size_t i = 0; i < gpus.size(); ++i)
    all.push_back({gpus[i].context, gpus[i].stream, comms[i], 0});
  Result<double> algbw = TimeAllReduce(cu, nccl, &all, bytes, budget, [](int*, bool*, bool*) {});
  for (const AllReduceGpu& g : all) {
    cu.ctx_set_current(g.context);
    if (g.buffer != 0) cu.mem_free(g.buffer);
  }
  if (!algbw.ok()) return failed(algbw.status().message());
  SweepCheckResult r{"gpu.nccl_allreduce_busbw",
                     "node",
                     AllReduceBusBandwidth(algbw.value(), n),
                     "bytes_per_second",
                     "",
                     std::to_string(n) + " GPUs in one process, " +
                         FormatBytes(static_cast<Bytes>(bytes)) + " float sums"};
  r.model = gpus[0].name;
  out.push_back(r);
  return out;
}

}  // namespace rankscope
