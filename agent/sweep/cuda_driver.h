// The CUDA driver API, loaded with dlopen("libcuda.so.1") so that `rankscope sweep-node` builds
// without the toolkit and runs on nodes without GPUs (it then finds no driver and skips the GPU
// checks). Only the entry points the sweep's GPU checks use, declared here: the driver keeps
// these names and layouts stable (the _v2 names fixed them).
//
// Load it only in a child process (RunIsolated): a process that initialised CUDA must not fork.
#pragma once

#include <cstddef>
#include <string>

#include "core/status.h"

namespace rankscope {

struct CudaDriver {
  using Result = int;  // CUresult; 0 is CUDA_SUCCESS
  using Device = int;
  using DevicePtr = unsigned long long;
  using Context = void*;
  using Stream = void*;
  using Event = void*;
  using Module = void*;
  using Function = void*;

  Result (*init)(unsigned) = nullptr;
  Result (*device_count)(int*) = nullptr;
  Result (*device_get)(Device*, int) = nullptr;
  Result (*device_name)(char*, int, Device) = nullptr;
  Result (*device_attribute)(int*, int, Device) = nullptr;
  Result (*primary_ctx_retain)(Context*, Device) = nullptr;
  Result (*ctx_set_current)(Context) = nullptr;
  Result (*mem_alloc)(DevicePtr*, size_t) = nullptr;
  Result (*mem_free)(DevicePtr) = nullptr;
  Result (*mem_alloc_host)(void**, size_t) = nullptr;
  Result (*mem_free_host)(void*) = nullptr;
  Result (*memset_d8)(DevicePtr, unsigned char, size_t) = nullptr;
  Result (*memcpy_htod_async)(DevicePtr, const void*, size_t, Stream) = nullptr;
  Result (*memcpy_dtoh_async)(void*, DevicePtr, size_t, Stream) = nullptr;
  Result (*memcpy_dtod_async)(DevicePtr, DevicePtr, size_t, Stream) = nullptr;
  Result (*stream_create)(Stream*, unsigned) = nullptr;
  Result (*stream_synchronize)(Stream) = nullptr;
  Result (*event_create)(Event*, unsigned) = nullptr;
  Result (*event_record)(Event, Stream) = nullptr;
  Result (*event_synchronize)(Event) = nullptr;
  Result (*event_elapsed_ms)(float*, Event, Event) = nullptr;
  Result (*module_load_data)(Module*, const void*) = nullptr;
  Result (*module_get_function)(Function*, Module, const char*) = nullptr;
  Result (*launch_kernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                          unsigned, Stream, void**, void**) = nullptr;
  Result (*error_string)(Result, const char**) = nullptr;

  // "CUDA_ERROR_OUT_OF_MEMORY: out of memory"-like text for a result.
  std::string Error(Result r) const;

  // Opens GPU `ordinal` for work: its primary context (the one the CUDA runtime and NCCL use),
  // made current, and a stream of its own; `name` gets its model ("NVIDIA H200") when not null.
  Result Open(int ordinal, Context* context, Stream* stream, std::string* name = nullptr) const;
};

constexpr int kCudaAttributeMultiprocessorCount = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kCudaErrorNoDevice = 100;                // CUDA_ERROR_NO_DEVICE

// What loading the driver found.
enum class CudaPresence { kNoDriver, kNoDevice, kReady };

// Loads libcuda.so.1 into `out` and runs cuInit. kNoDriver / kNoDevice are not errors (a CPU
// node); an error is a driver that is there but broken (cuInit failed, an entry point missing).
Status LoadCudaDriver(CudaDriver* out, CudaPresence* presence);

}  // namespace rankscope
