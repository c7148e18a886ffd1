// bench_mpi: what an MPI program pays per collective call and per failed MPI_Test, with or without
// the PMPI wrappers of librankscope_inject.so (LD_PRELOAD). Run it under `mpirun -np 2` (or more):
// every rank runs the same benchmarks with the same fixed iteration count, so their collectives
// pair up; only rank 0 reports (console and --benchmark_out). bench/run_inject_overhead.sh runs it
// both ways.
//
// usage: mpirun -np 2 bench_mpi [--iterations=N] [benchmark flags...]
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace {

constexpr int kDefaultIterations = 20000;

// A reporter that prints nothing: ranks other than 0 run the benchmarks silently.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context& /*context*/) override { return true; }
  void ReportRuns(const std::vector<Run>& /*runs*/) override {}
};

void BM_MpiAllreduceInt(benchmark::State& state) {
  int value = 1;
  int sum = 0;
  MPI_Barrier(MPI_COMM_WORLD);  // Start every repetition together (not timed).
  for (auto _ : state) {
    MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    benchmark::DoNotOptimize(sum);
  }
}

// A failed poll: MPI_Test on a posted receive whose message comes only after the timing (a code
// polling for a late message pays this per call; the wrappers take the request's pending
// operation out of their table, time the call, put it back and extend the thread's polling run).
void BM_MpiTestPending(benchmark::State& state) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int in = 0;
  MPI_Request request;
  MPI_Irecv(&in, 1, MPI_INT, rank, 99, MPI_COMM_WORLD, &request);
  int done = 0;
  for (auto _ : state) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    benchmark::DoNotOptimize(done);
  }
  if (!done) {
    MPI_Send(&rank, 1, MPI_INT, rank, 99, MPI_COMM_WORLD);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  // Our own flag, plus: only rank 0 may write --benchmark_out (all ranks get the same argv).
  int iterations = kDefaultIterations;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.starts_with("--iterations=")) {
      iterations = std::atoi(argv[i] + std::string_view("--iterations=").size());
      continue;
    }
    if (rank != 0 && arg.starts_with("--benchmark_out")) continue;
    args.push_back(argv[i]);
  }
  if (iterations <= 0) {
    if (rank == 0) std::fprintf(stderr, "bench_mpi: --iterations must be a positive number\n");
    MPI_Finalize();
    return 2;
  }
  int args_count = static_cast<int>(args.size());
  args.push_back(nullptr);

  benchmark::RegisterBenchmark("BM_MpiAllreduceInt", BM_MpiAllreduceInt)
      ->Iterations(iterations)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_MpiTestPending", BM_MpiTestPending)
      ->Iterations(iterations)
      ->UseRealTime();
  benchmark::Initialize(&args_count, args.data());
  if (rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  MPI_Finalize();
  return 0;
}
