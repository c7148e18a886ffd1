#include "agent/inject/cupti_records.h"

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <cupti_version.h>

#include <cstddef>
#include <cstdio>

namespace rankscope::inject {
namespace {

// The structs we read through. Each is the oldest version with all the fields we use; the
// asserts below pin those fields to the newest version's offsets.
using KernelView = CUpti_ActivityKernel4;
using MemcpyView = CUpti_ActivityMemcpy;
using MemsetView = CUpti_ActivityMemset;
using SyncView = CUpti_ActivitySynchronization;
using ApiView = CUpti_ActivityAPI;

#define RANKSCOPE_SAME_OFFSET(Old, New, field) \
  static_assert(offsetof(Old, field) == offsetof(New, field), #New "." #field " moved")

#if CUPTI_API_VERSION >= 130000
RANKSCOPE_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, start);
RANKSCOPE_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, end);
RANKSCOPE_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, deviceId);
RANKSCOPE_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, contextId);
RANKSCOPE_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, streamId);
RANKSCOPE_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, gridX);
RANKSCOPE_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, gridY);
RANKSCOPE_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, gridZ);
RANKSCOPE_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, blockX);
RANKSCOPE_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, blockY);
RANKSCOPE_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, blockZ);
RANKSCOPE_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, correlationId);
RANKSCOPE_SAME_OFFSET(KernelView, CUpti_ActivityKernel10, name);
RANKSCOPE_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, copyKind);
RANKSCOPE_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, bytes);
RANKSCOPE_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, start);
RANKSCOPE_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, end);
RANKSCOPE_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, deviceId);
RANKSCOPE_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, contextId);
RANKSCOPE_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, streamId);
RANKSCOPE_SAME_OFFSET(MemcpyView, CUpti_ActivityMemcpy6, correlationId);
RANKSCOPE_SAME_OFFSET(MemsetView, CUpti_ActivityMemset4, bytes);
RANKSCOPE_SAME_OFFSET(MemsetView, CUpti_ActivityMemset4, start);
RANKSCOPE_SAME_OFFSET(MemsetView, CUpti_ActivityMemset4, end);
RANKSCOPE_SAME_OFFSET(MemsetView, CUpti_ActivityMemset4, deviceId);
RANKSCOPE_SAME_OFFSET(MemsetView, CUpti_ActivityMemset4, contextId);
RANKSCOPE_SAME_OFFSET(MemsetView, CUpti_ActivityMemset4, streamId);
RANKSCOPE_SAME_OFFSET(MemsetView, CUpti_ActivityMemset4, correlationId);
RANKSCOPE_SAME_OFFSET(SyncView, CUpti_ActivitySynchronization2, type);
RANKSCOPE_SAME_OFFSET(SyncView, CUpti_ActivitySynchronization2, start);
RANKSCOPE_SAME_OFFSET(SyncView, CUpti_ActivitySynchronization2, end);
RANKSCOPE_SAME_OFFSET(SyncView, CUpti_ActivitySynchronization2, correlationId);
RANKSCOPE_SAME_OFFSET(SyncView, CUpti_ActivitySynchronization2, contextId);
RANKSCOPE_SAME_OFFSET(SyncView, CUpti_ActivitySynchronization2, streamId);
// The kernel versions CUDA 12 writes sit between the two and must agree as well.
RANKSCOPE_SAME_OFFSET(CUpti_ActivityKernel9, CUpti_ActivityKernel10, name);
RANKSCOPE_SAME_OFFSET(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, correlationId);
#endif
#undef RANKSCOPE_SAME_OFFSET

// Starts *out afresh for a record of `kind`, keeping the name's storage.
void Reset(GpuActivityKind kind, GpuActivityRecord* out) {
  out->kind = kind;
  out->device = kNoDevice;
  out->context = 0;
  out->stream = 0;
  out->correlation_id = 0;
  out->start = 0;
  out->end = 0;
  out->bytes = 0;
  out->copy_kind = 0;
  out->sync_kind = 0;
  out->tid = 0;
  for (int i = 0; i < 3; ++i) out->grid[i] = out->block[i] = 0;
  out->name.clear();
}

// Sets the times; false when CUPTI recorded none (both 0: it could not time the activity).
bool SetTimes(uint64_t start, uint64_t end, const ConvertOptions& options, GpuActivityRecord* out) {
  if (start == 0 && end == 0) return false;
  out->start = static_cast<TimeNs>(start) + options.clock_offset;
  out->end = static_cast<TimeNs>(end) + options.clock_offset;
  return true;
}

// Starts *out as a record of `kind` run on a device (kernel, copy, memset): times, device,
// context, stream, correlation id. False when CUPTI could not time it.
template <typename View>
bool StartDeviceRecord(GpuActivityKind kind, const View& v, const ConvertOptions& options,
                       GpuActivityRecord* out) {
  Reset(kind, out);
  if (!SetTimes(v.start, v.end, options, out)) return false;
  out->device = v.deviceId;
  out->context = v.contextId;
  out->stream = v.streamId;
  out->correlation_id = v.correlationId;
  return true;
}

void SetApiName(CUpti_CallbackDomain domain, uint32_t cbid, const ConvertOptions& options,
                GpuActivityRecord* out) {
  const char* name = options.api_name != nullptr ? options.api_name(domain, cbid) : nullptr;
  if (name != nullptr) {
    out->name.assign(StripCallbackVersion(name));
    return;
  }
  char fallback[32];
  std::snprintf(fallback, sizeof(fallback), "%scbid:%u",
                domain == CUPTI_CB_DOMAIN_DRIVER_API ? "driver " : "", cbid);
  out->name.assign(fallback);
}

}  // namespace

std::string_view StripCallbackVersion(std::string_view name) {
  size_t v = name.rfind("_v");
  if (v == std::string_view::npos || v + 2 == name.size()) return name;
  for (size_t i = v + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, v);
}

Conversion ConvertActivity(const CUpti_Activity& activity, const ConvertOptions& options,
                           GpuActivityRecord* out) {
  switch (activity.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = reinterpret_cast<const KernelView&>(activity);
      if (!StartDeviceRecord(GpuActivityKind::kKernel, k, options, out)) {
        return Conversion::kUntimed;
      }
      out->grid[0] = k.gridX;
      out->grid[1] = k.gridY;
      out->grid[2] = k.gridZ;
      out->block[0] = k.blockX;
      out->block[1] = k.blockY;
      out->block[2] = k.blockZ;
      if (k.name != nullptr) out->name.assign(k.name);
      return Conversion::kRecord;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = reinterpret_cast<const MemcpyView&>(activity);
      if (!StartDeviceRecord(GpuActivityKind::kMemcpy, m, options, out)) {
        return Conversion::kUntimed;
      }
      out->bytes = static_cast<Bytes>(m.bytes);
      out->copy_kind = m.copyKind;
      return Conversion::kRecord;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = reinterpret_cast<const MemsetView&>(activity);
      if (!StartDeviceRecord(GpuActivityKind::kMemset, m, options, out)) {
        return Conversion::kUntimed;
      }
      out->bytes = static_cast<Bytes>(m.bytes);
      return Conversion::kRecord;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& s = reinterpret_cast<const SyncView&>(activity);
      Reset(GpuActivityKind::kSync, out);
      if (!SetTimes(s.start, s.end, options, out)) return Conversion::kUntimed;
      out->context = s.contextId;
      // CUPTI marks "no stream" (context and event syncs) with all ones; we use 0.
      out->stream = s.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s.streamId;
      out->correlation_id = s.correlationId;
      out->sync_kind = static_cast<uint8_t>(s.type);
      return Conversion::kRecord;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      // Both are API calls on a host thread; the name tells cudaLaunchKernel from cuLaunchKernel.
      const auto& a = reinterpret_cast<const ApiView&>(activity);
      Reset(GpuActivityKind::kRuntime, out);
      if (!SetTimes(a.start, a.end, options, out)) return Conversion::kUntimed;
      out->context = 0;
      out->correlation_id = a.correlationId;
      out->tid = a.threadId;
      SetApiName(activity.kind == CUPTI_ACTIVITY_KIND_DRIVER ? CUPTI_CB_DOMAIN_DRIVER_API
                                                             : CUPTI_CB_DOMAIN_RUNTIME_API,
                 a.cbid, options, out);
      return Conversion::kRecord;
    }
    default:
      return Conversion::kIgnored;
  }
}

const LaunchApiIds& LaunchApis() {
  static const LaunchApiIds ids = {
      .runtime =
          {
              CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020,
              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
              CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000,
              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000,
              CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
              CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
#if CUPTI_API_VERSION >= 130000
              CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
              CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
#endif
              CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
              CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
              CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
              CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
              CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
              CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
          },
      .driver =
          {
              CUPTI_DRIVER_TRACE_CBID_cuLaunch,
              CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
              CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
              CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
              CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
              CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
              CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
          },
  };
  return ids;
}

}  // namespace rankscope::inject
