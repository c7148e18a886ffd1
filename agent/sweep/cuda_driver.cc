#include "agent/sweep/cuda_driver.h"

#include <dlfcn.h>

namespace rankscope {
namespace {

template <typename Fn>
bool Resolve(void* handle, const char* symbol, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
  return *fn != nullptr;
}

}  // namespace

std::string CudaDriver::Error(Result r) const {
  const char* text = nullptr;
  if (error_string != nullptr) error_string(r, &text);
  return text != nullptr ? std::string(text) + " (CUDA error " + std::to_string(r) + ")"
                         : "CUDA error " + std::to_string(r);
}

CudaDriver::Result CudaDriver::Open(int ordinal, Context* context, Stream* stream,
                                    std::string* name) const {
  Device device = 0;
  Result r = device_get(&device, ordinal);
  if (r == 0 && name != nullptr) {
    char text[128] = {};
    r = device_name(text, sizeof(text) - 1, device);
    *name = text;
  }
  if (r == 0) r = primary_ctx_retain(context, device);
  if (r == 0) r = ctx_set_current(*context);
  if (r == 0) r = stream_create(stream, 0);
  return r;
}

Status LoadCudaDriver(CudaDriver* out, CudaPresence* presence) {
  *presence = CudaPresence::kNoDriver;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return Status();
  CudaDriver& d = *out;
  struct Entry {
    const char* symbol;
    bool ok;
  };
  const Entry entries[] = {
      {"cuInit", Resolve(h, "cuInit", &d.init)},
      {"cuDeviceGetCount", Resolve(h, "cuDeviceGetCount", &d.device_count)},
      {"cuDeviceGet", Resolve(h, "cuDeviceGet", &d.device_get)},
      {"cuDeviceGetName", Resolve(h, "cuDeviceGetName", &d.device_name)},
      {"cuDeviceGetAttribute", Resolve(h, "cuDeviceGetAttribute", &d.device_attribute)},
      {"cuDevicePrimaryCtxRetain", Resolve(h, "cuDevicePrimaryCtxRetain", &d.primary_ctx_retain)},
      {"cuCtxSetCurrent", Resolve(h, "cuCtxSetCurrent", &d.ctx_set_current)},
      {"cuMemAlloc_v2", Resolve(h, "cuMemAlloc_v2", &d.mem_alloc)},
      {"cuMemFree_v2", Resolve(h, "cuMemFree_v2", &d.mem_free)},
      {"cuMemAllocHost_v2", Resolve(h, "cuMemAllocHost_v2", &d.mem_alloc_host)},
      {"cuMemFreeHost", Resolve(h, "cuMemFreeHost", &d.mem_free_host)},
      {"cuMemsetD8_v2", Resolve(h, "cuMemsetD8_v2", &d.memset_d8)},
      {"cuMemcpyHtoDAsync_v2", Resolve(h, "cuMemcpyHtoDAsync_v2", &d.memcpy_htod_async)},
      {"cuMemcpyDtoHAsync_v2", Resolve(h, "cuMemcpyDtoHAsync_v2", &d.memcpy_dtoh_async)},
      {"cuMemcpyDtoDAsync_v2", Resolve(h, "cuMemcpyDtoDAsync_v2", &d.memcpy_dtod_async)},
      {"cuStreamCreate", Resolve(h, "cuStreamCreate", &d.stream_create)},
      {"cuStreamSynchronize", Resolve(h, "cuStreamSynchronize", &d.stream_synchronize)},
      {"cuEventCreate", Resolve(h, "cuEventCreate", &d.event_create)},
      {"cuEventRecord", Resolve(h, "cuEventRecord", &d.event_record)},
      {"cuEventSynchronize", Resolve(h, "cuEventSynchronize", &d.event_synchronize)},
      // CUDA 12.8 added a _v2 with the same arguments; older drivers have only the first.
      {"cuEventElapsedTime", Resolve(h, "cuEventElapsedTime_v2", &d.event_elapsed_ms) ||
                                 Resolve(h, "cuEventElapsedTime", &d.event_elapsed_ms)},
      {"cuModuleLoadData", Resolve(h, "cuModuleLoadData", &d.module_load_data)},
      {"cuModuleGetFunction", Resolve(h, "cuModuleGetFunction", &d.module_get_function)},
      {"cuLaunchKernel", Resolve(h, "cuLaunchKernel", &d.launch_kernel)},
      {"cuGetErrorString", Resolve(h, "cuGetErrorString", &d.error_string)},
  };
  for (const Entry& e : entries) {
    if (!e.ok) return Status::Error(std::string("CUDA driver: libcuda.so.1 has no ") + e.symbol);
  }
  if (CudaDriver::Result r = d.init(0); r != 0) {
    if (r == kCudaErrorNoDevice) {
      *presence = CudaPresence::kNoDevice;
      return Status();
    }
    return Status::Error("CUDA driver: cuInit failed: " + d.Error(r));
  }
  int count = 0;
  if (CudaDriver::Result r = d.device_count(&count); r != 0) {
    return Status::Error("CUDA driver: cuDeviceGetCount failed: " + d.Error(r));
  }
  *presence = count > 0 ? CudaPresence::kReady : CudaPresence::kNoDevice;
  return Status();
}

}  // namespace rankscope
