// A stand-in libnvidia-ml for nvml_test: the entry points ReadNvml uses, answering for two
// made-up GPUs: GPU 0 healthy (PCIe gen 5 x16, 18 NVLinks up), GPU 1 trained down (gen 3 x8 of
// gen 5 x16, 2 of 18 NVLinks down). With FAKE_NVML_FAIL_INIT set, nvmlInit_v2 fails; with
// FAKE_NVML_LOST_GPU set, GPU 1 is lost (handle lookup fails).
// For NvmlHealthWatch GPU 1 is also sick: ECC errors, remapped rows (one pending), a hardware
// slowdown, 91 C, PCIe replays and NVLink CRC errors that rise while watched; neither GPU retires
// pages (Hopper). FAKE_NVML_XIDS="GPU:XID,..." are delivered as XID events, one per
// nvmlEventSetWait_v2.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
struct FakeDevice {
  int index;
};
FakeDevice g_devices[2] = {{0}, {1}};
int g_event_set = 0;
size_t g_xids_delivered = 0;
int Index(void* device) { return static_cast<FakeDevice*>(device)->index; }
bool SickNode() {
  const char* sick = std::getenv("FAKE_NVML_SICK_NODE");
  const char* here = std::getenv("SLURMD_NODENAME");
  return sick == nullptr || (here != nullptr && std::strcmp(sick, here) == 0);
}
// GPU 1, on the sick node: every value below that is not GPU 0's.
bool Sick(void* device) { return Index(device) == 1 && SickNode(); }
void Copy(char* out, unsigned size, const char* text) { std::snprintf(out, size, "%s", text); }
}  // namespace

extern "C" {

int nvmlInit_v2() { return std::getenv("FAKE_NVML_FAIL_INIT") != nullptr ? 9 : 0; }
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int r) {
  return r == 9 ? "Driver Not Loaded" : r == 15 ? "GPU is lost" : "Unknown Error";
}
int nvmlSystemGetDriverVersion(char* out, unsigned size) {
  Copy(out, size, "580.159");
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** device) {
  if (i > 1 || (i == 1 && std::getenv("FAKE_NVML_LOST_GPU") != nullptr)) return 15;
  *device = &g_devices[i];
  return 0;
}
int nvmlDeviceGetName(void*, char* out, unsigned size) {
  Copy(out, size, "NVIDIA H200");
  return 0;
}
int nvmlDeviceGetUUID(void* device, char* out, unsigned size) {
  Copy(out, size, Index(device) == 0 ? "GPU-aaaa" : "GPU-bbbb");
  return 0;
}
struct PciInfo {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
int nvmlDeviceGetPciInfo_v3(void* device, PciInfo* pci) {
  std::memset(pci, 0, sizeof(*pci));
  Copy(pci->bus_id, sizeof(pci->bus_id),
       Index(device) == 0 ? "00000000:18:00.0" : "00000000:2A:00.0");
  return 0;
}
int nvmlDeviceGetCurrPcieLinkGeneration(void* device, unsigned* v) {
  *v = !Sick(device) ? 5 : 3;
  return 0;
}
int nvmlDeviceGetMaxPcieLinkGeneration(void*, unsigned* v) {
  *v = 5;
  return 0;
}
int nvmlDeviceGetCurrPcieLinkWidth(void* device, unsigned* v) {
  *v = !Sick(device) ? 16 : 8;
  return 0;
}
int nvmlDeviceGetMaxPcieLinkWidth(void*, unsigned* v) {
  *v = 16;
  return 0;
}
int nvmlDeviceGetNvLinkState(void* device, unsigned link, int* state) {
  if (link >= 18) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *state = Sick(device) && link >= 16 ? 0 : 1;
  return 0;
}
struct Memory {
  unsigned long long total, free, used;
};
int nvmlDeviceGetMemoryInfo(void*, Memory* m) {
  m->total = 150ull << 30;
  m->free = m->total;
  m->used = 0;
  return 0;
}

int nvmlDeviceGetTotalEccErrors(void* device, int error_type, int counter_type,
                                unsigned long long* v) {
  static const unsigned long long kSick[2][2] = {{7, 1}, {40, 3}};  // [aggregate][uncorrected]
  *v = !Sick(device) ? 0 : kSick[counter_type][error_type];
  return 0;
}
int nvmlDeviceGetRetiredPages(void*, int, unsigned*, unsigned long long*) {
  return 3;  // NVML_ERROR_NOT_SUPPORTED
}
int nvmlDeviceGetRemappedRows(void* device, unsigned* corr, unsigned* unc, unsigned* pending,
                              unsigned* failed) {
  const bool sick = Sick(device);
  *corr = sick ? 2 : 0;
  *unc = sick ? 1 : 0;
  *pending = sick ? 1 : 0;
  *failed = 0;
  return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void* device, unsigned long long* reasons) {
  *reasons = !Sick(device) ? 0x1 : 0x8 | 0x4;
  return 0;
}
int nvmlDeviceGetTemperature(void* device, int, unsigned* c) {
  *c = !Sick(device) ? 45 : 91;
  return 0;
}
int nvmlDeviceGetPowerUsage(void* device, unsigned* mw) {
  *mw = !Sick(device) ? 120000 : 650000;
  return 0;
}
int nvmlDeviceGetEnforcedPowerLimit(void*, unsigned* mw) {
  *mw = 700000;
  return 0;
}
// GPU 1's link counters rise between the first read and the later ones (a watch sees the rise).
int nvmlDeviceGetPcieReplayCounter(void* device, unsigned* v) {
  static int reads = 0;
  *v = !Sick(device) ? 0 : reads++ == 0 ? 12 : 20;
  return 0;
}
int nvmlDeviceGetNvLinkErrorCounter(void* device, unsigned link, int counter,
                                    unsigned long long* v) {
  static int reads = 0;
  if (link >= 18) return 2;
  *v = Sick(device) && link == 3 && counter == 2 ? (reads++ == 0 ? 5 : 9) : 0;
  return 0;
}

int nvmlEventSetCreate(void** set) {
  *set = &g_event_set;
  g_xids_delivered = 0;
  return 0;
}
int nvmlEventSetFree(void*) { return 0; }
int nvmlDeviceRegisterEvents(void*, unsigned long long, void*) { return 0; }
struct EventData {
  void* device;
  unsigned long long event_type, event_data;
  unsigned gpu_instance_id, compute_instance_id;
};
int nvmlEventSetWait_v2(void*, EventData* data, unsigned) {
  const char* list = SickNode() ? std::getenv("FAKE_NVML_XIDS") : nullptr;
  size_t seen = 0;
  for (const char* p = list; p != nullptr && *p != '\0';) {
    int gpu = 0;
    unsigned long long xid = 0;
    if (std::sscanf(p, "%d:%llu", &gpu, &xid) != 2) break;
    if (seen++ == g_xids_delivered) {
      ++g_xids_delivered;
      data->device = &g_devices[gpu];
      data->event_type = 0x8;
      data->event_data = xid;
      return 0;
    }
    p = std::strchr(p, ',');
    if (p != nullptr) ++p;
  }
  return 10;  // NVML_ERROR_TIMEOUT
}

}  // extern "C"
