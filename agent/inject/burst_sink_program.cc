// Plays a CUDA program for record_sink_test: one thread emits a burst of GPU activity records the
// way CUPTI's buffer thread does (SendWaitScope: its sends wait for room), far more than a socket
// holds, while the main thread emits NVTX-like ranges. The test's agent reads nothing until the
// main thread says its ranges went out, so the burst is still waiting for room then.
//
// usage: burst_sink_program RANGES GPU_RECORDS   (RANKSCOPE_IPC_SOCKET names the agent's socket)
// Prints "ranges sent" once the main thread's ranges are flushed, then waits for the burst.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "agent/inject/record_sink.h"
#include "core/time.h"

int main(int argc, char** argv) {
  using namespace rankscope;
  if (argc != 3 || !inject::Active()) {
    std::fprintf(stderr,
                 "usage: RANKSCOPE_IPC_SOCKET=PATH burst_sink_program RANGES GPU_RECORDS\n");
    return 2;
  }
  const long ranges = std::atol(argv[1]);
  const long gpu_records = std::atol(argv[2]);
  std::atomic<long> emitted{0};
  std::thread burst([&] {
    inject::SendWaitScope wait(MonotonicNow() + 20 * kNsPerSec);
    GpuActivityRecord r;
    r.kind = GpuActivityKind::kKernel;
    r.device = 0;
    r.stream = 7;
    r.name = "_Z12burst_kernelPfS_i";
    for (long i = 0; i < gpu_records; ++i) {
      r.correlation_id = static_cast<uint32_t>(i + 1);
      r.start = 1000 * i;
      r.end = r.start + 500;
      inject::EmitGpuActivity(r);
      emitted.fetch_add(1, std::memory_order_relaxed);
    }
    inject::FlushThisThread();
  });
  // Until the burst stops advancing: its socket is full and its sends wait for room.
  for (long seen = -1; seen != emitted.load() && emitted.load() < gpu_records;) {
    seen = emitted.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const uint32_t tid = inject::ThreadId();
  for (long i = 0; i < ranges; ++i) {
    const TimeNs now = MonotonicNow();
    inject::EmitRange("", "program-range", now, now + 1, tid, 0);
  }
  inject::FlushThisThread();
  std::printf("ranges sent\n");
  std::fflush(stdout);
  burst.join();
  return 0;
}
