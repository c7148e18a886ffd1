#include "agent/inject/cupti_records.h"

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>

namespace rankscope::inject {
namespace {

// A zeroed CUPTI record of type T with its kind set, as CUPTI would lay it out in a buffer.
template <typename T>
T Blank(CUpti_ActivityKind kind) {
  T r;
  std::memset(&r, 0, sizeof(r));
  r.kind = kind;
  return r;
}

template <typename T>
const CUpti_Activity& AsActivity(const T& r) {
  return reinterpret_cast<const CUpti_Activity&>(r);
}

const char* FakeApiName(CUpti_CallbackDomain domain, uint32_t cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 211) return "cudaLaunchKernel_v7000";
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == 652) return "cuLaunchKernelEx";
  return nullptr;
}

// Fills the fields every kernel record version shares; used for CUDA 13's and CUDA 12's layout.
template <typename Kernel>
Kernel ProbeKernel() {
  auto k = Blank<Kernel>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.start = 5'000'000'100;
  k.end = 5'000'009'900;
  k.completed = 5'000'010'000;
  k.deviceId = 1;
  k.contextId = 3;
  k.streamId = 14;
  k.gridX = 4096;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.correlationId = 991;
  k.registersPerThread = 32;
  k.name = "_Z10probe_axpyifPKfPf";
  return k;
}

template <typename Kernel>
void ExpectProbeKernel() {
  Kernel k = ProbeKernel<Kernel>();
  GpuActivityRecord out;
  ASSERT_EQ(ConvertActivity(AsActivity(k), {}, &out), Conversion::kRecord);
  EXPECT_EQ(out.kind, GpuActivityKind::kKernel);
  EXPECT_EQ(out.start, 5'000'000'100);
  EXPECT_EQ(out.end, 5'000'009'900);
  EXPECT_EQ(out.device, 1u);
  EXPECT_EQ(out.context, 3u);
  EXPECT_EQ(out.stream, 14u);
  EXPECT_EQ(out.correlation_id, 991u);
  EXPECT_EQ(out.grid[0], 4096);
  EXPECT_EQ(out.grid[1], 2);
  EXPECT_EQ(out.grid[2], 1);
  EXPECT_EQ(out.block[0], 256);
  EXPECT_EQ(out.block[1], 1);
  EXPECT_EQ(out.name, "_Z10probe_axpyifPKfPf");
  EXPECT_EQ(out.bytes, 0);
}

#if CUPTI_API_VERSION >= 130000
TEST(CuptiRecords, KernelAsCuda13WritesIt) { ExpectProbeKernel<CUpti_ActivityKernel10>(); }
#endif

TEST(CuptiRecords, KernelAsCuda12WritesIt) { ExpectProbeKernel<CUpti_ActivityKernel9>(); }

TEST(CuptiRecords, MemcpyKeepsBytesAndDirection) {
#if CUPTI_API_VERSION >= 130000
  auto m = Blank<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
#else
  auto m = Blank<CUpti_ActivityMemcpy5>(CUPTI_ACTIVITY_KIND_MEMCPY);
#endif
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = uint64_t{3} << 32;
  m.start = 100;
  m.end = 200;
  m.deviceId = 0;
  m.contextId = 1;
  m.streamId = 7;
  m.correlationId = 12;
  m.runtimeCorrelationId = 13;
  GpuActivityRecord out;
  out.name = "left over from an earlier kernel";
  ASSERT_EQ(ConvertActivity(AsActivity(m), {}, &out), Conversion::kRecord);
  EXPECT_EQ(out.kind, GpuActivityKind::kMemcpy);
  EXPECT_EQ(out.bytes, int64_t{3} << 32);
  EXPECT_EQ(out.copy_kind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  EXPECT_EQ(out.device, 0u);
  EXPECT_EQ(out.stream, 7u);
  EXPECT_EQ(out.correlation_id, 12u);
  EXPECT_EQ(out.start, 100);
  EXPECT_EQ(out.end, 200);
  EXPECT_EQ(out.name, "");
  EXPECT_EQ(out.grid[0], 0);
}

TEST(CuptiRecords, Memset) {
  auto m = Blank<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  m.value = 0xff;
  m.bytes = 1 << 20;
  m.start = 10;
  m.end = 20;
  m.deviceId = 1;
  m.contextId = 2;
  m.streamId = 3;
  m.correlationId = 4;
  GpuActivityRecord out;
  ASSERT_EQ(ConvertActivity(AsActivity(m), {}, &out), Conversion::kRecord);
  EXPECT_EQ(out.kind, GpuActivityKind::kMemset);
  EXPECT_EQ(out.bytes, 1 << 20);
  EXPECT_EQ(out.device, 1u);
  EXPECT_EQ(out.stream, 3u);
  EXPECT_EQ(out.correlation_id, 4u);
}

TEST(CuptiRecords, SynchronizationWithAndWithoutAStream) {
  auto s = Blank<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  s.start = 1000;
  s.end = 5000;
  s.correlationId = 50;
  s.contextId = 1;
  s.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  s.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  GpuActivityRecord out;
  ASSERT_EQ(ConvertActivity(AsActivity(s), {}, &out), Conversion::kRecord);
  EXPECT_EQ(out.kind, GpuActivityKind::kSync);
  EXPECT_EQ(out.sync_kind, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE);
  EXPECT_EQ(out.stream, 0u);
  EXPECT_EQ(out.context, 1u);
  EXPECT_EQ(out.device, kNoDevice);
  EXPECT_EQ(out.correlation_id, 50u);
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  s.streamId = 13;
  ASSERT_EQ(ConvertActivity(AsActivity(s), {}, &out), Conversion::kRecord);
  EXPECT_EQ(out.stream, 13u);
  EXPECT_EQ(out.sync_kind, 3);
}

TEST(CuptiRecords, RuntimeCallsAreNamedWithoutTheVersionSuffix) {
  auto a = Blank<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  a.cbid = 211;
  a.start = 70;
  a.end = 80;
  a.processId = 1234;
  a.threadId = 1240;
  a.correlationId = 991;
  ConvertOptions options;
  options.api_name = FakeApiName;
  GpuActivityRecord out;
  ASSERT_EQ(ConvertActivity(AsActivity(a), options, &out), Conversion::kRecord);
  EXPECT_EQ(out.kind, GpuActivityKind::kRuntime);
  EXPECT_EQ(out.name, "cudaLaunchKernel");
  EXPECT_EQ(out.tid, 1240u);
  EXPECT_EQ(out.correlation_id, 991u);
  EXPECT_EQ(out.device, kNoDevice);
  a.cbid = 7;
  ASSERT_EQ(ConvertActivity(AsActivity(a), options, &out), Conversion::kRecord);
  EXPECT_EQ(out.name, "cbid:7");
  ASSERT_EQ(ConvertActivity(AsActivity(a), {}, &out), Conversion::kRecord);
  EXPECT_EQ(out.name, "cbid:7");
}

// NCCL launches its kernels through the driver API (cuLaunchKernelEx): those calls arrive as
// DRIVER records, converted like runtime calls and named from the driver domain, so the same
// correlation-id join gives NCCL kernels their launch call.
TEST(CuptiRecords, DriverCallsAreApiCallsNamedFromTheDriverDomain) {
  auto a = Blank<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_DRIVER);
  a.cbid = 652;
  a.start = 70;
  a.end = 85;
  a.threadId = 77;
  a.correlationId = 4242;
  ConvertOptions options;
  options.api_name = FakeApiName;
  GpuActivityRecord out;
  ASSERT_EQ(ConvertActivity(AsActivity(a), options, &out), Conversion::kRecord);
  EXPECT_EQ(out.kind, GpuActivityKind::kRuntime);
  EXPECT_EQ(out.name, "cuLaunchKernelEx");
  EXPECT_EQ(out.correlation_id, 4242u);
  EXPECT_EQ(out.end, 85);
  a.cbid = 211;  // a runtime id, but in the driver domain: not cudaLaunchKernel
  ASSERT_EQ(ConvertActivity(AsActivity(a), options, &out), Conversion::kRecord);
  EXPECT_EQ(out.name, "driver cbid:211");
}

TEST(CuptiRecords, ClockOffsetShiftsEveryTime) {
  auto k = ProbeKernel<CUpti_ActivityKernel9>();
  ConvertOptions options;
  options.clock_offset = -1'000'000'000;
  GpuActivityRecord out;
  ASSERT_EQ(ConvertActivity(AsActivity(k), options, &out), Conversion::kRecord);
  EXPECT_EQ(out.start, 4'000'000'100);
  EXPECT_EQ(out.end, 4'000'009'900);
}

TEST(CuptiRecords, UntimedRecordsAreReportedAsLost) {
  auto k = ProbeKernel<CUpti_ActivityKernel9>();
  k.start = 0;
  k.end = 0;
  GpuActivityRecord out;
  EXPECT_EQ(ConvertActivity(AsActivity(k), {}, &out), Conversion::kUntimed);
}

TEST(CuptiRecords, OtherKindsAreIgnored) {
  auto marker = Blank<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  GpuActivityRecord out;
  EXPECT_EQ(ConvertActivity(AsActivity(marker), {}, &out), Conversion::kIgnored);
  auto overhead = Blank<CUpti_ActivityOverhead>(CUPTI_ACTIVITY_KIND_OVERHEAD);
  overhead.start = 1;
  EXPECT_EQ(ConvertActivity(AsActivity(overhead), {}, &out), Conversion::kIgnored);
}

TEST(CuptiRecords, StripCallbackVersion) {
  EXPECT_EQ(StripCallbackVersion("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(StripCallbackVersion("cudaMemcpyAsync_ptsz_v7000"), "cudaMemcpyAsync_ptsz");
  EXPECT_EQ(StripCallbackVersion("cudaMalloc"), "cudaMalloc");
  EXPECT_EQ(StripCallbackVersion("cuda_v"), "cuda_v");
  EXPECT_EQ(StripCallbackVersion("cuda_vx1"), "cuda_vx1");
  EXPECT_EQ(StripCallbackVersion(""), "");
}

}  // namespace
// Mode all traces launches only: every runtime and driver call id that puts a kernel, graph,
// copy or memset on a stream, and nothing else (cudaGetDevice & co. are what make tracing every
// call expensive).
TEST(CuptiConfig, LaunchApisAreTheLaunchingCallsOfBothDomains) {
  const LaunchApiIds& ids = LaunchApis();
  auto has = [](const std::vector<uint32_t>& v, uint32_t id) {
    return std::find(v.begin(), v.end(), id) != v.end();
  };
  EXPECT_TRUE(has(ids.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  EXPECT_TRUE(has(ids.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020));
  EXPECT_TRUE(has(ids.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000));
  EXPECT_FALSE(has(ids.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
  EXPECT_FALSE(has(ids.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020));
  EXPECT_TRUE(has(ids.driver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx));
  EXPECT_TRUE(has(ids.driver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  EXPECT_FALSE(has(ids.driver, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize));
  std::set<uint32_t> unique_runtime(ids.runtime.begin(), ids.runtime.end());
  EXPECT_EQ(unique_runtime.size(), ids.runtime.size());
}

}  // namespace rankscope::inject
