// cupti_probe: a small CUDA program whose GPU activity is known in advance, so
// run_cupti_check.sh can compare what librankscope_inject.so captured against it.
//
// What it does, in order (all on device 0):
//   setup   one synchronous H2D copy of A, one async H2D copy of B on stream 1, one memset of C
//           on stream 0 (each kBytes), inside the NVTX range "probe-setup"
//   steps   --steps N iterations, each inside the NVTX range "probe-step": probe_axpy on stream 0,
//           probe_scale on stream 1, probe_axpy on stream 1, probe_scale on stream 0 (small,
//           launch-bound kernels), then cudaStreamSynchronize on both streams
//   final   one probe_axpy over all of C, a synchronous D2H copy of C, cudaDeviceSynchronize
//
// It prints "probe: key=value" lines on stdout (times on CLOCK_MONOTONIC, ns) and writes each
// step's host window (index, start, end) to --steps-file, so the checker can test that every
// kernel of step i ran inside step i's host window.
//
// With --exit-from-thread 1 it ends by calling exit() from a second thread while main waits,
// the exit path a library must survive without losing the last records.
//
// usage: cupti_probe [--steps N] [--steps-file FILE] [--exit-from-thread 1]
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr size_t kElements = size_t{4} << 20;  // 16 MiB of floats per buffer
constexpr size_t kBytes = kElements * sizeof(float);
constexpr int kStepElements = 1 << 14;  // small: the step loop is launch-bound

long long MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cupti_probe: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

}  // namespace

__global__ void probe_axpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void probe_scale(int n, float a, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= a;
}

int main(int argc, char** argv) {
  int steps = 2000;
  const char* steps_file = nullptr;
  bool exit_from_thread = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--steps") == 0) {
      steps = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--steps-file") == 0) {
      steps_file = argv[i + 1];
    } else if (std::strcmp(argv[i], "--exit-from-thread") == 0) {
      exit_from_thread = std::atoi(argv[i + 1]) != 0;
    } else {
      std::fprintf(stderr,
                   "usage: cupti_probe [--steps N] [--steps-file FILE] [--exit-from-thread 1]\n");
      return 2;
    }
  }

  // Before the first CUDA call, which initializes the driver and with it the injection.
  long long host_start = MonotonicNs();
  Check(cudaSetDevice(0), "cudaSetDevice");
  Check(cudaFree(nullptr), "cudaFree(0)");
  long long init_end = MonotonicNs();

  float* host = nullptr;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  Check(cudaMallocHost(&host, kBytes), "cudaMallocHost");
  for (size_t i = 0; i < kElements; ++i) host[i] = 1.0f;
  Check(cudaMalloc(&a, kBytes), "cudaMalloc a");
  Check(cudaMalloc(&b, kBytes), "cudaMalloc b");
  Check(cudaMalloc(&c, kBytes), "cudaMalloc c");
  cudaStream_t s0, s1;
  Check(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking), "cudaStreamCreate s0");
  Check(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), "cudaStreamCreate s1");

  nvtxRangePushA("probe-setup");
  Check(cudaMemcpy(a, host, kBytes, cudaMemcpyHostToDevice), "H2D a");
  Check(cudaMemcpyAsync(b, host, kBytes, cudaMemcpyHostToDevice, s1), "H2D b");
  Check(cudaMemsetAsync(c, 0, kBytes, s0), "memset c");
  Check(cudaStreamSynchronize(s1), "sync s1");
  Check(cudaStreamSynchronize(s0), "sync s0");
  nvtxRangePop();

  std::vector<long long> step_start(steps), step_end(steps);
  const int threads = 256;
  const int blocks = (kStepElements + threads - 1) / threads;
  long long loop_start = MonotonicNs();
  for (int i = 0; i < steps; ++i) {
    step_start[i] = MonotonicNs();
    nvtxRangePushA("probe-step");
    probe_axpy<<<blocks, threads, 0, s0>>>(kStepElements, 0.5f, a, c);
    probe_scale<<<blocks, threads, 0, s1>>>(kStepElements, 1.0f, b);
    probe_axpy<<<blocks, threads, 0, s1>>>(kStepElements, 0.25f, a, b);
    probe_scale<<<blocks, threads, 0, s0>>>(kStepElements, 1.0f, c);
    Check(cudaStreamSynchronize(s0), "step sync s0");
    Check(cudaStreamSynchronize(s1), "step sync s1");
    nvtxRangePop();
    step_end[i] = MonotonicNs();
  }
  long long loop_end = MonotonicNs();
  Check(cudaGetLastError(), "step kernels");

  nvtxRangePushA("probe-final");
  const int big_blocks = static_cast<int>((kElements + threads - 1) / threads);
  probe_axpy<<<big_blocks, threads, 0, s0>>>(static_cast<int>(kElements), 2.0f, a, c);
  Check(cudaStreamSynchronize(s0), "final sync s0");
  Check(cudaMemcpy(host, c, kBytes, cudaMemcpyDeviceToHost), "D2H c");
  Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  nvtxRangePop();

  double checksum = 0;
  for (size_t i = 0; i < kElements; i += 4096) checksum += host[i];
  cudaFreeHost(host);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaStreamDestroy(s0);
  cudaStreamDestroy(s1);
  // After the last CUDA call: every runtime record (host-timed) must fall before this.
  long long host_end = MonotonicNs();

  if (steps_file != nullptr) {
    std::FILE* f = std::fopen(steps_file, "w");
    if (f == nullptr) {
      std::perror(steps_file);
      return 1;
    }
    for (int i = 0; i < steps; ++i)
      std::fprintf(f, "%d\t%lld\t%lld\n", i, step_start[i], step_end[i]);
    std::fclose(f);
  }
  std::printf("probe: pid=%d tid=%d\n", static_cast<int>(getpid()), static_cast<int>(gettid()));
  std::printf("probe: host_start=%lld init_end=%lld host_end=%lld\n", host_start, init_end,
              host_end);
  std::printf("probe: steps=%d kernels_per_step=4 step_grid=%d block=%d final_grid=%d\n", steps,
              blocks, threads, big_blocks);
  std::printf("probe: buffer_bytes=%zu h2d_copies=2 d2h_copies=1 memsets=1\n", kBytes);
  std::printf("probe: loop_ns=%lld\n", loop_end - loop_start);
  std::printf("probe: checksum=%.1f\n", checksum);
  std::fflush(stdout);

  if (exit_from_thread) {
    std::thread([] { std::exit(0); }).join();
  }
  return 0;
}
