// nccl_allreduce: an all-reduce bus-bandwidth benchmark in the manner of nccl-tests'
// all_reduce_perf, launched by MPI (one rank per GPU), so rankscope's NCCL numbers can be
// checked against a program's own timing.
//
// For each size from --min-bytes to --max-bytes (times --factor): --warmup untimed calls, then
// --iters timed calls between two CUDA events on the rank's stream; time = elapsed / iters, the
// slowest rank's, as nccl-tests reports it. algbw = bytes / time, busbw = algbw * 2 (n - 1) / n
// (nccl-tests' all-reduce factor).
//
// The timed calls are queued ahead: the stream is held by a host function until every call is
// enqueued (and all ranks are ready), so the GPU runs them back to back and the times measure
// the collective, not how fast the host enqueues (below a few MiB an all-reduce is shorter than
// NCCL's host-side enqueue, more so with NCCL_DEBUG=INFO logging each call). --host-paced
// times them as they are enqueued instead, like nccl-tests.
//
// Every size runs inside an NVTX range "allreduce <bytes>". Results are checked (sum of rank + 1
// over ranks), printed by rank 0 as a table, and with --json written to a file.
//
//   mpirun -np 2 nccl_allreduce [--min-bytes 8] [--max-bytes 256M] [--factor 2] [--iters 20]
//                               [--warmup 5] [--host-paced] [--json FILE]
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_rank = 0;

[[noreturn]] void Fail(const char* what, const char* why) {
  std::fprintf(stderr, "nccl_allreduce: rank %d: %s: %s\n", g_rank, what, why);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

void CheckCuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) Fail(what, cudaGetErrorString(e));
}

void CheckNccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) Fail(what, ncclGetErrorString(r));
}

struct Options {
  size_t min_bytes = 8;
  size_t max_bytes = size_t{256} << 20;
  int factor = 2;
  int iters = 20;
  int warmup = 5;
  bool host_paced = false;
  std::string json;
};

// Holds the stream (cudaLaunchHostFunc) until g_gate is set, at most 10 s, so the calls enqueued
// behind it run back to back.
std::atomic<int> g_gate{0};
std::atomic<bool> g_gate_timed_out{false};
void CUDART_CB WaitForGate(void*) {
  // Spins rather than sleeps: the ranks' gates open within a microsecond of each other, so the
  // first timed call does not absorb a polling delay.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (g_gate.load(std::memory_order_acquire) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      g_gate_timed_out = true;
      return;
    }
  }
}

// "8", "64K", "1M", "256M", "1G" (powers of 1024); 0 when malformed.
size_t ParseBytes(const char* text) {
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text) return 0;
  switch (*end) {
    case 'K':
    case 'k':
      value <<= 10, ++end;
      break;
    case 'M':
    case 'm':
      value <<= 20, ++end;
      break;
    case 'G':
    case 'g':
      value <<= 30, ++end;
      break;
  }
  return *end == '\0' ? static_cast<size_t>(value) : 0;
}

bool ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    auto number = [&](int* out) {
      if (value == nullptr || (*out = std::atoi(value)) <= 0) return false;
      ++i;
      return true;
    };
    if (arg == "--min-bytes" || arg == "--max-bytes") {
      size_t bytes = value != nullptr ? ParseBytes(value) : 0;
      if (bytes == 0) return false;
      (arg == "--min-bytes" ? o->min_bytes : o->max_bytes) = bytes;
      ++i;
    } else if (arg == "--factor") {
      if (!number(&o->factor) || o->factor < 2) return false;
    } else if (arg == "--iters") {
      if (!number(&o->iters)) return false;
    } else if (arg == "--warmup") {
      if (value == nullptr) return false;
      o->warmup = std::max(0, std::atoi(value));
      ++i;
    } else if (arg == "--host-paced") {
      o->host_paced = true;
    } else if (arg == "--json") {
      if (value == nullptr) return false;
      o->json = value;
      ++i;
    } else {
      return false;
    }
  }
  return o->min_bytes >= sizeof(float) && o->min_bytes <= o->max_bytes;
}

struct Result {
  size_t bytes = 0;
  double time_us = 0;  // per call, slowest rank
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  long long wrong = 0;  // elements with a wrong sum, over all ranks
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int nranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  Options opt;
  if (!ParseOptions(argc, argv, &opt)) {
    if (g_rank == 0) {
      std::fprintf(stderr,
                   "usage: mpirun -np N nccl_allreduce [--min-bytes 8] [--max-bytes 256M] "
                   "[--factor 2] [--iters 20] [--warmup 5] [--host-paced] [--json FILE]\n");
    }
    MPI_Finalize();
    return 2;
  }

  // One GPU per rank on each node, by local rank.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
  int local_rank = 0;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  int devices = 0;
  CheckCuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  const int device = local_rank % devices;
  CheckCuda(cudaSetDevice(device), "cudaSetDevice");

  ncclUniqueId id;
  if (g_rank == 0) CheckNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  CheckNccl(ncclCommInitRank(&comm, nranks, id, g_rank), "ncclCommInitRank");
  cudaStream_t stream;
  CheckCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  const size_t max_count = opt.max_bytes / sizeof(float);
  float* send = nullptr;
  float* recv = nullptr;
  CheckCuda(cudaMalloc(&send, max_count * sizeof(float)), "cudaMalloc");
  CheckCuda(cudaMalloc(&recv, max_count * sizeof(float)), "cudaMalloc");
  {
    std::vector<float> ones(max_count, static_cast<float>(g_rank + 1));
    CheckCuda(cudaMemcpy(send, ones.data(), max_count * sizeof(float), cudaMemcpyHostToDevice),
              "cudaMemcpy");
  }
  cudaEvent_t start, stop;
  CheckCuda(cudaEventCreate(&start), "cudaEventCreate");
  CheckCuda(cudaEventCreate(&stop), "cudaEventCreate");
  const float expected = static_cast<float>(nranks) * static_cast<float>(nranks + 1) / 2;

  std::vector<Result> results;
  for (size_t bytes = opt.min_bytes; bytes <= opt.max_bytes; bytes *= opt.factor) {
    const size_t count = bytes / sizeof(float);
    const std::string label = "allreduce " + std::to_string(bytes);
    nvtxRangePushA(label.c_str());
    for (int i = 0; i < opt.warmup; ++i) {
      CheckNccl(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream),
                "ncclAllReduce");
    }
    CheckCuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    MPI_Barrier(MPI_COMM_WORLD);
    if (!opt.host_paced) {
      g_gate = 0;
      CheckCuda(cudaLaunchHostFunc(stream, WaitForGate, nullptr), "cudaLaunchHostFunc");
    }
    CheckCuda(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int i = 0; i < opt.iters; ++i) {
      CheckNccl(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream),
                "ncclAllReduce");
    }
    CheckCuda(cudaEventRecord(stop, stream), "cudaEventRecord");
    if (!opt.host_paced) {
      MPI_Barrier(MPI_COMM_WORLD);  // every rank has queued its calls: release them together
      g_gate = 1;
    }
    CheckCuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    nvtxRangePop();
    float ms = 0;
    CheckCuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");

    // Check the whole result on the host.
    std::vector<float> host(count);
    CheckCuda(cudaMemcpy(host.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost),
              "cudaMemcpy");
    long long wrong =
        std::count_if(host.begin(), host.end(), [&](float v) { return v != expected; });

    double time_us = 1000.0 * ms / opt.iters;
    double slowest = 0;
    long long wrong_total = 0;
    MPI_Allreduce(&time_us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&wrong, &wrong_total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    Result r;
    r.bytes = bytes;
    r.time_us = slowest;
    r.algbw_gbps = static_cast<double>(bytes) / (slowest * 1e3);  // bytes/us -> GB/s is /1e3
    r.busbw_gbps = r.algbw_gbps * 2.0 * (nranks - 1) / nranks;
    r.wrong = wrong_total;
    results.push_back(r);
    if (opt.max_bytes / opt.factor < bytes) break;  // the next size would overflow max_bytes
  }

  long long wrong_total = 0;
  if (g_rank == 0) {
    std::printf("# nccl_allreduce: %d ranks, float sum, %d warmup + %d timed calls per size, %s\n",
                nranks, opt.warmup, opt.iters,
                opt.host_paced ? "host-paced" : "queued ahead (back to back on the GPU)");
    std::printf("# %12s %12s %10s %10s %10s %8s\n", "size (B)", "count", "time (us)", "algbw GB/s",
                "busbw GB/s", "#wrong");
    double busbw_sum = 0;
    for (const Result& r : results) {
      std::printf("  %12zu %12zu %10.2f %10.2f %10.2f %8lld\n", r.bytes, r.bytes / sizeof(float),
                  r.time_us, r.algbw_gbps, r.busbw_gbps, r.wrong);
      busbw_sum += r.busbw_gbps;
      wrong_total += r.wrong;
    }
    std::printf("# Avg bus bandwidth: %.2f GB/s\n", busbw_sum / results.size());
    if (g_gate_timed_out) {
      std::printf(
          "# WARNING: the stream gate timed out (NCCL blocked while enqueuing behind it); "
          "times are host-paced\n");
    }
    if (!opt.json.empty()) {
      FILE* f = std::fopen(opt.json.c_str(), "w");
      if (f == nullptr) Fail(opt.json.c_str(), std::strerror(errno));
      std::fprintf(f,
                   "{\"nranks\": %d, \"iters\": %d, \"warmup\": %d, \"host_paced\": %s, "
                   "\"results\": [",
                   nranks, opt.iters, opt.warmup, opt.host_paced ? "true" : "false");
      for (size_t i = 0; i < results.size(); ++i) {
        const Result& r = results[i];
        std::fprintf(f,
                     "%s\n  {\"bytes\": %zu, \"time_us\": %.4f, "
                     "\"algbw_gbps\": %.4f, \"busbw_gbps\": %.4f, \"wrong\": %lld}",
                     i == 0 ? "" : ",", r.bytes, r.time_us, r.algbw_gbps, r.busbw_gbps, r.wrong);
      }
      std::fprintf(f, "\n]}\n");
      std::fclose(f);
    }
  }
  MPI_Bcast(&wrong_total, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);

  CheckCuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  ncclCommDestroy(comm);
  cudaFree(send);
  cudaFree(recv);
  MPI_Finalize();
  return wrong_total == 0 ? 0 : 1;
}
