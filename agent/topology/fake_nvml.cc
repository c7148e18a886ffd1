// A stand-in libnvidia-ml for nvml_test: the entry points ReadNvml uses, answering for two
// made-up GPUs: GPU 0 healthy (PCIe gen 5 x16, 18 NVLinks up), GPU 1 trained down (gen 3 x8 of
// gen 5 x16, 2 of 18 NVLinks down). With FAKE_NVML_FAIL_INIT set, nvmlInit_v2 fails; with
// FAKE_NVML_LOST_GPU set, GPU 1 is lost (handle lookup fails).
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
struct FakeDevice {
  int index;
};
FakeDevice g_devices[2] = {{0}, {1}};
int Index(void* device) { return static_cast<FakeDevice*>(device)->index; }
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
  *v = Index(device) == 0 ? 5 : 3;
  return 0;
}
int nvmlDeviceGetMaxPcieLinkGeneration(void*, unsigned* v) {
  *v = 5;
  return 0;
}
int nvmlDeviceGetCurrPcieLinkWidth(void* device, unsigned* v) {
  *v = Index(device) == 0 ? 16 : 8;
  return 0;
}
int nvmlDeviceGetMaxPcieLinkWidth(void*, unsigned* v) {
  *v = 16;
  return 0;
}
int nvmlDeviceGetNvLinkState(void* device, unsigned link, int* state) {
  if (link >= 18) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *state = Index(device) == 1 && link >= 16 ? 0 : 1;
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

}  // extern "C"
