#include "agent/topology/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <map>

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

}  // namespace

Result<NvmlSnapshot> ReadNvml(const std::string& library) {
  Api api;
  api.handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api.handle == nullptr) {
    const char* why = dlerror();
    return Result<NvmlSnapshot>::Error("NVML: cannot load " + library + ": " +
                                       (why != nullptr ? why : "unknown error") +
                                       " (no NVIDIA driver on this node?)");
  }
  // Unloading NVML while a driver thread may still run is not worth the risk: kept loaded.
  if (const char* missing = ResolveAll(&api)) {
    return Result<NvmlSnapshot>::Error("NVML: " + library + " has no " + missing);
  }
  if (NvmlReturn r = api.init(); r != kNvmlSuccess) {
    return Result<NvmlSnapshot>::Error("NVML: nvmlInit_v2 failed: " + api.Error(r));
  }
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

}  // namespace rankscope
