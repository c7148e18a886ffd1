#include "agent/nvml_reader.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <map>

#include "core/time.h"

namespace rankscope {
namespace {

// The few NVML declarations we use (nvml.h is not on every build machine). NVML's ABI keeps
// these stable: nvmlReturn_t is an int, devices are opaque pointers, and the versioned entry
// points (_v2, _v3) fix their argument layouts.
using NvmlReturn = int;
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr unsigned kMaxNvLinks = 18;  // NVML_NVLINK_MAX_LINKS
constexpr int kNvmlFeatureEnabled = 1;

struct NvmlPciInfo {  // nvmlPciInfo_t as of nvmlDeviceGetPciInfo_v3
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
  char headroom[64];  // never read: room in case a driver writes a longer struct
};

struct NvmlMemory {  // nvmlMemory_t (v1)
  unsigned long long total, free, used;
};

using NvmlEventSet = void*;
struct NvmlEventData {  // nvmlEventData_t
  NvmlDevice device;
  unsigned long long event_type;
  unsigned long long event_data;  // the XID for XID events
  unsigned gpu_instance_id, compute_instance_id;
};
constexpr unsigned long long kNvmlEventXidCritical = 0x8;  // nvmlEventTypeXidCriticalError
constexpr NvmlReturn kNvmlTimeout = 10;                    // NVML_ERROR_TIMEOUT
constexpr NvmlReturn kNvmlInsufficientSize = 7;            // NVML_ERROR_INSUFFICIENT_SIZE

struct Api {
  void* handle = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*driver_version)(char*, unsigned) = nullptr;
  NvmlReturn (*count)(unsigned*) = nullptr;
  NvmlReturn (*by_index)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*name)(NvmlDevice, char*, unsigned) = nullptr;
  NvmlReturn (*uuid)(NvmlDevice, char*, unsigned) = nullptr;
  NvmlReturn (*pci)(NvmlDevice, NvmlPciInfo*) = nullptr;
  NvmlReturn (*gen_current)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*gen_max)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*width_current)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*width_max)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*nvlink_state)(NvmlDevice, unsigned, int*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
  // Health (NvmlHealthWatch); all optional.
  NvmlReturn (*ecc_total)(NvmlDevice, int, int, unsigned long long*) = nullptr;
  NvmlReturn (*retired_pages)(NvmlDevice, int, unsigned*, unsigned long long*) = nullptr;
  NvmlReturn (*retired_pending)(NvmlDevice, int*) = nullptr;
  NvmlReturn (*remapped_rows)(NvmlDevice, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  NvmlReturn (*clock_event_reasons)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*power_usage)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*power_limit)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*pcie_replays)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*nvlink_errors)(NvmlDevice, unsigned, int, unsigned long long*) = nullptr;
  NvmlReturn (*event_set_create)(NvmlEventSet*) = nullptr;
  NvmlReturn (*event_set_free)(NvmlEventSet) = nullptr;
  NvmlReturn (*register_events)(NvmlDevice, unsigned long long, NvmlEventSet) = nullptr;
  NvmlReturn (*event_wait)(NvmlEventSet, NvmlEventData*, unsigned) = nullptr;

  std::string Error(NvmlReturn r) const {
    const char* text = error_string != nullptr ? error_string(r) : nullptr;
    return text != nullptr ? text : "NVML error " + std::to_string(r);
  }
};

template <typename Fn>
bool Resolve(void* handle, const char* symbol, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
  return *fn != nullptr;
}

// Resolves every entry; returns the first missing symbol, or nullptr.
const char* ResolveAll(Api* api) {
  void* h = api->handle;
  if (!Resolve(h, "nvmlInit_v2", &api->init)) return "nvmlInit_v2";
  if (!Resolve(h, "nvmlShutdown", &api->shutdown)) return "nvmlShutdown";
  if (!Resolve(h, "nvmlDeviceGetCount_v2", &api->count)) return "nvmlDeviceGetCount_v2";
  if (!Resolve(h, "nvmlDeviceGetHandleByIndex_v2", &api->by_index)) {
    return "nvmlDeviceGetHandleByIndex_v2";
  }
  // The rest are optional: a value they would give stays unknown.
  Resolve(h, "nvmlErrorString", &api->error_string);
  Resolve(h, "nvmlSystemGetDriverVersion", &api->driver_version);
  Resolve(h, "nvmlDeviceGetName", &api->name);
  Resolve(h, "nvmlDeviceGetUUID", &api->uuid);
  Resolve(h, "nvmlDeviceGetPciInfo_v3", &api->pci);
  Resolve(h, "nvmlDeviceGetCurrPcieLinkGeneration", &api->gen_current);
  Resolve(h, "nvmlDeviceGetMaxPcieLinkGeneration", &api->gen_max);
  Resolve(h, "nvmlDeviceGetCurrPcieLinkWidth", &api->width_current);
  Resolve(h, "nvmlDeviceGetMaxPcieLinkWidth", &api->width_max);
  Resolve(h, "nvmlDeviceGetNvLinkState", &api->nvlink_state);
  Resolve(h, "nvmlDeviceGetMemoryInfo", &api->memory);
  Resolve(h, "nvmlDeviceGetTotalEccErrors", &api->ecc_total);
  Resolve(h, "nvmlDeviceGetRetiredPages", &api->retired_pages);
  Resolve(h, "nvmlDeviceGetRetiredPagesPendingStatus", &api->retired_pending);
  Resolve(h, "nvmlDeviceGetRemappedRows", &api->remapped_rows);
  // Renamed in CUDA 12.2's NVML; the old name stays for older drivers.
  if (!Resolve(h, "nvmlDeviceGetCurrentClocksEventReasons", &api->clock_event_reasons)) {
    Resolve(h, "nvmlDeviceGetCurrentClocksThrottleReasons", &api->clock_event_reasons);
  }
  Resolve(h, "nvmlDeviceGetTemperature", &api->temperature);
  Resolve(h, "nvmlDeviceGetPowerUsage", &api->power_usage);
  Resolve(h, "nvmlDeviceGetEnforcedPowerLimit", &api->power_limit);
  Resolve(h, "nvmlDeviceGetPcieReplayCounter", &api->pcie_replays);
  Resolve(h, "nvmlDeviceGetNvLinkErrorCounter", &api->nvlink_errors);
  Resolve(h, "nvmlEventSetCreate", &api->event_set_create);
  Resolve(h, "nvmlEventSetFree", &api->event_set_free);
  Resolve(h, "nvmlDeviceRegisterEvents", &api->register_events);
  Resolve(h, "nvmlEventSetWait_v2", &api->event_wait);
  return nullptr;
}

int ReadUnsigned(NvmlReturn (*fn)(NvmlDevice, unsigned*), NvmlDevice device) {
  unsigned value = 0;
  return fn != nullptr && fn(device, &value) == kNvmlSuccess ? static_cast<int>(value) : -1;
}

std::string ReadText(NvmlReturn (*fn)(NvmlDevice, char*, unsigned), NvmlDevice device) {
  char buffer[128] = {};
  if (fn == nullptr || fn(device, buffer, sizeof(buffer) - 1) != kNvmlSuccess) return "";
  return std::string(buffer, strnlen(buffer, sizeof(buffer)));
}

NvmlGpu ReadGpu(const Api& api, unsigned index, NvmlDevice device) {
  NvmlGpu gpu;
  gpu.index = index;
  gpu.name = ReadText(api.name, device);
  gpu.uuid = ReadText(api.uuid, device);
  NvmlPciInfo pci{};
  if (api.pci != nullptr && api.pci(device, &pci) == kNvmlSuccess) {
    gpu.bus_id.assign(pci.bus_id, strnlen(pci.bus_id, sizeof(pci.bus_id)));
  }
  gpu.pcie_gen_current = ReadUnsigned(api.gen_current, device);
  gpu.pcie_gen_max = ReadUnsigned(api.gen_max, device);
  gpu.pcie_width_current = ReadUnsigned(api.width_current, device);
  gpu.pcie_width_max = ReadUnsigned(api.width_max, device);
  if (api.nvlink_state != nullptr) {
    for (unsigned link = 0; link < kMaxNvLinks; ++link) {
      int state = 0;
      // Links a GPU does not have answer NOT_SUPPORTED or INVALID_ARGUMENT.
      if (api.nvlink_state(device, link, &state) != kNvmlSuccess) continue;
      ++gpu.nvlinks_total;
      if (state == kNvmlFeatureEnabled) ++gpu.nvlinks_up;
    }
  }
  NvmlMemory memory{};
  if (api.memory != nullptr && api.memory(device, &memory) == kNvmlSuccess) {
    gpu.memory_bytes = memory.total;
  }
  return gpu;
}

// The PCIe replay counter and the NVLink error counters by kind, summed over links (-1: none).
void ReadLinkErrors(const Api& api, NvmlDevice device, int64_t* pcie_replays,
                    int64_t nvlink_errors[4]) {
  unsigned replays = 0;
  *pcie_replays = api.pcie_replays != nullptr && api.pcie_replays(device, &replays) == kNvmlSuccess
                      ? static_cast<int64_t>(replays)
                      : -1;
  for (int kind = 0; kind < 4; ++kind) nvlink_errors[kind] = -1;
  if (api.nvlink_errors == nullptr) return;
  for (unsigned link = 0; link < kMaxNvLinks; ++link) {
    for (int kind = 0; kind < 4; ++kind) {
      unsigned long long v = 0;
      if (api.nvlink_errors(device, link, kind, &v) != kNvmlSuccess) continue;
      nvlink_errors[kind] = std::max<int64_t>(nvlink_errors[kind], 0) + static_cast<int64_t>(v);
    }
  }
}

// The sum of values[first..last] that NVML gave (-1: none).
int64_t SumKnown(const int64_t values[4], int first, int last) {
  int64_t sum = -1;
  for (int i = first; i <= last; ++i) {
    if (values[i] >= 0) sum = std::max<int64_t>(sum, 0) + values[i];
  }
  return sum;
}

// Loads `library`, resolves its entry points and initialises NVML.
constexpr NvmlReturn kNvmlDriverNotLoaded = 9;  // NVML_ERROR_DRIVER_NOT_LOADED

// `init_result` (when not null) gets nvmlInit's answer, so a caller can tell "no driver" apart.
Status LoadAndInit(const std::string& library, Api* api, NvmlReturn* init_result = nullptr) {
  api->handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api->handle == nullptr) {
    const char* why = dlerror();
    return Status::Error("NVML: cannot load " + library + ": " +
                         (why != nullptr ? why : "unknown error") +
                         " (no NVIDIA driver on this node?)");
  }
  // Unloading NVML while a driver thread may still run is not worth the risk: kept loaded.
  if (const char* missing = ResolveAll(api)) {
    return Status::Error("NVML: " + library + " has no " + missing);
  }
  const NvmlReturn r = api->init();
  if (init_result != nullptr) *init_result = r;
  if (r != kNvmlSuccess) return Status::Error("NVML: nvmlInit_v2 failed: " + api->Error(r));
  return Status();
}

}  // namespace

Result<NvmlSnapshot> ReadNvml(const std::string& library) {
  Api api;
  if (Status loaded = LoadAndInit(library, &api); !loaded.ok()) return loaded;
  NvmlSnapshot out;
  char version[96] = {};
  if (api.driver_version != nullptr &&
      api.driver_version(version, sizeof(version) - 1) == kNvmlSuccess) {
    out.driver_version.assign(version, strnlen(version, sizeof(version)));
  }
  unsigned count = 0;
  Status status;
  if (NvmlReturn r = api.count(&count); r != kNvmlSuccess) {
    status = Status::Error("NVML: nvmlDeviceGetCount_v2 failed: " + api.Error(r));
  }
  for (unsigned i = 0; status.ok() && i < count; ++i) {
    NvmlDevice device = nullptr;
    if (NvmlReturn r = api.by_index(i, &device); r != kNvmlSuccess) {
      // A GPU that fell off the bus: the others are still worth reporting.
      NvmlGpu lost;
      lost.index = i;
      lost.name = "unreachable: " + api.Error(r);
      out.gpus.push_back(lost);
      continue;
    }
    out.gpus.push_back(ReadGpu(api, i, device));
  }
  api.shutdown();
  if (!status.ok()) return status;
  return out;
}

struct NvmlHealthWatch::State {
  Api api;
  NvmlEventSet events = nullptr;
  std::vector<NvmlDevice> devices;  // by NVML index; nullptr for a GPU NVML cannot reach
  std::vector<NvmlGpuHealth> gpus;
  // The link error counters when the watch started, per GPU.
  std::vector<int64_t> pcie_replays_start;
  std::vector<std::array<int64_t, 4>> nvlink_errors_start;
};

Result<std::unique_ptr<NvmlHealthWatch>> NvmlHealthWatch::Start(const std::string& library) {
  std::unique_ptr<NvmlHealthWatch> watch(new NvmlHealthWatch());
  watch->state_ = std::make_unique<State>();
  State& st = *watch->state_;
  NvmlReturn init = kNvmlSuccess;
  if (Status loaded = LoadAndInit(library, &st.api, &init); !loaded.ok()) {
    // The library without a loaded driver (a CPU node with the driver package): no GPUs here.
    if (init == kNvmlDriverNotLoaded) {
      st.api.shutdown = nullptr;  // never initialised
      return watch;
    }
    return loaded;
  }
  unsigned count = 0;
  if (NvmlReturn r = st.api.count(&count); r != kNvmlSuccess) {
    return Status::Error("NVML: nvmlDeviceGetCount_v2 failed: " + st.api.Error(r));
  }
  if (st.api.event_set_create == nullptr || st.api.register_events == nullptr ||
      st.api.event_wait == nullptr) {
    watch->xid_watch_error_ = "this NVML has no event sets";
  } else if (NvmlReturn r = st.api.event_set_create(&st.events); r != kNvmlSuccess) {
    watch->xid_watch_error_ = "nvmlEventSetCreate failed: " + st.api.Error(r);
    st.events = nullptr;
  }
  for (unsigned i = 0; i < count; ++i) {
    NvmlDevice device = nullptr;
    NvmlGpuHealth gpu;
    gpu.index = i;
    if (NvmlReturn r = st.api.by_index(i, &device); r != kNvmlSuccess) {
      gpu.name = "unreachable: " + st.api.Error(r);
      device = nullptr;
    } else {
      const NvmlGpu facts = ReadGpu(st.api, i, device);
      gpu.name = facts.name;
      gpu.uuid = facts.uuid;
      gpu.bus_id = facts.bus_id;
      gpu.pcie_gen_max = facts.pcie_gen_max;
      gpu.pcie_width_max = facts.pcie_width_max;
      gpu.nvlinks_total = facts.nvlinks_total;
      if (st.events != nullptr) {
        const NvmlReturn reg = st.api.register_events(device, kNvmlEventXidCritical, st.events);
        if (reg != kNvmlSuccess && watch->xid_watch_error_.empty()) {
          watch->xid_watch_error_ = "GPU " + std::to_string(i) +
                                    ": XID events cannot be registered: " + st.api.Error(reg);
        }
      }
    }
    int64_t replays = -1;
    std::array<int64_t, 4> nvlink{-1, -1, -1, -1};
    if (device != nullptr) ReadLinkErrors(st.api, device, &replays, nvlink.data());
    st.devices.push_back(device);
    st.gpus.push_back(gpu);
    st.pcie_replays_start.push_back(replays);
    st.nvlink_errors_start.push_back(nvlink);
  }
  watch->Sample();
  return watch;
}

NvmlHealthWatch::~NvmlHealthWatch() {
  if (state_ == nullptr || state_->api.handle == nullptr) return;
  if (state_->events != nullptr && state_->api.event_set_free != nullptr) {
    state_->api.event_set_free(state_->events);
  }
  if (state_->api.shutdown != nullptr) state_->api.shutdown();
}

void NvmlHealthWatch::Sample() {
  State& st = *state_;
  for (size_t i = 0; i < st.devices.size(); ++i) {
    NvmlDevice device = st.devices[i];
    if (device == nullptr) continue;
    NvmlGpuHealth& g = st.gpus[i];
    unsigned long long reasons = 0;
    if (st.api.clock_event_reasons != nullptr &&
        st.api.clock_event_reasons(device, &reasons) == kNvmlSuccess) {
      g.clock_event_reasons |= reasons;
      g.clock_event_reasons_known = true;
    }
    unsigned value = 0;
    if (st.api.temperature != nullptr && st.api.temperature(device, 0, &value) == kNvmlSuccess) {
      g.temperature_max_c = std::max(g.temperature_max_c, static_cast<int>(value));
    }
    if (st.api.power_usage != nullptr && st.api.power_usage(device, &value) == kNvmlSuccess) {
      g.power_max_w = std::max(g.power_max_w, value / 1000.0);
    }
    g.pcie_gen_current = std::max(g.pcie_gen_current, ReadUnsigned(st.api.gen_current, device));
    g.pcie_width_current =
        std::max(g.pcie_width_current, ReadUnsigned(st.api.width_current, device));
  }
}

void NvmlHealthWatch::WaitEvents(int timeout_ms) {
  State& st = *state_;
  if (st.events == nullptr || st.devices.empty()) return;
  const TimeNs deadline = MonotonicNow() + static_cast<DurationNs>(timeout_ms) * kNsPerMs;
  // At least one wait, so WaitEvents(0) drains what is already there.
  for (bool first = true;; first = false) {
    const DurationNs left = deadline - MonotonicNow();
    if (left <= 0 && !first) return;
    NvmlEventData data{};
    const NvmlReturn r = st.api.event_wait(
        st.events, &data, static_cast<unsigned>(std::max<DurationNs>(left, 0) / kNsPerMs));
    if (r == kNvmlTimeout) return;
    if (r != kNvmlSuccess) {
      if (xid_watch_error_.empty())
        xid_watch_error_ = "nvmlEventSetWait failed: " + st.api.Error(r);
      return;
    }
    if ((data.event_type & kNvmlEventXidCritical) == 0) continue;
    for (size_t i = 0; i < st.devices.size(); ++i) {
      if (st.devices[i] == data.device) ++st.gpus[i].xids[data.event_data];
    }
  }
}

std::vector<NvmlGpuHealth> NvmlHealthWatch::Finish() {
  State& st = *state_;
  Sample();
  for (size_t i = 0; i < st.devices.size(); ++i) {
    NvmlDevice device = st.devices[i];
    if (device == nullptr) continue;
    NvmlGpuHealth& g = st.gpus[i];
    const Api& api = st.api;
    if (api.ecc_total != nullptr) {
      // (error type, counter type): 0 corrected / 1 uncorrected, 0 volatile / 1 aggregate.
      auto ecc = [&](int error_type, int counter_type) -> int64_t {
        unsigned long long v = 0;
        return api.ecc_total(device, error_type, counter_type, &v) == kNvmlSuccess
                   ? static_cast<int64_t>(v)
                   : -1;
      };
      g.ecc_corrected_volatile = ecc(0, 0);
      g.ecc_uncorrected_volatile = ecc(1, 0);
      g.ecc_corrected_aggregate = ecc(0, 1);
      g.ecc_uncorrected_aggregate = ecc(1, 1);
    }
    if (api.retired_pages != nullptr) {
      // A zero-sized query returns the count (INSUFFICIENT_SIZE when there are pages).
      auto pages = [&](int cause) -> int64_t {
        unsigned n = 0;
        const NvmlReturn r = api.retired_pages(device, cause, &n, nullptr);
        return r == kNvmlSuccess || r == kNvmlInsufficientSize ? static_cast<int64_t>(n) : -1;
      };
      g.retired_pages_sbe = pages(0);
      g.retired_pages_dbe = pages(1);
    }
    int pending = 0;
    if (api.retired_pending != nullptr && api.retired_pending(device, &pending) == kNvmlSuccess) {
      g.retired_pending = pending != 0 ? 1 : 0;
    }
    unsigned corr = 0, unc = 0, remap_pending = 0, failed = 0;
    if (api.remapped_rows != nullptr &&
        api.remapped_rows(device, &corr, &unc, &remap_pending, &failed) == kNvmlSuccess) {
      g.remapped_correctable = corr;
      g.remapped_uncorrectable = unc;
      g.remap_pending = remap_pending != 0 ? 1 : 0;
      g.remap_failed = failed != 0 ? 1 : 0;
    }
    unsigned value = 0;
    if (api.power_limit != nullptr && api.power_limit(device, &value) == kNvmlSuccess) {
      g.power_limit_w = value / 1000.0;
    }
    ReadLinkErrors(api, device, &g.pcie_replays, g.nvlink_errors);
    if (g.pcie_replays >= 0 && st.pcie_replays_start[i] >= 0) {
      g.pcie_replays_during = g.pcie_replays - st.pcie_replays_start[i];
    }
    // Replays, recoveries and flit CRC errors; then data CRC (corrected on H200) on its own.
    auto rise = [&](int first, int last) -> int64_t {
      const int64_t before = SumKnown(st.nvlink_errors_start[i].data(), first, last);
      const int64_t after = SumKnown(g.nvlink_errors, first, last);
      return before >= 0 && after >= 0 ? after - before : -1;
    };
    g.nvlink_errors_during = rise(0, 2);
    g.nvlink_data_crc_during = rise(3, 3);
    g.nvlinks_up = 0;
    for (unsigned link = 0; link < kMaxNvLinks && api.nvlink_state != nullptr; ++link) {
      int state = 0;
      if (api.nvlink_state(device, link, &state) == kNvmlSuccess && state == kNvmlFeatureEnabled) {
        ++g.nvlinks_up;
      }
    }
  }
  return st.gpus;
}

}  // namespace rankscope
