// mpi_train: a small real MPI program shaped like a data-parallel training loop, annotated with
// NVTX so rankscope (or any NVTX tool) sees its phases. Every step is
//   step > data (fill + shuffle a batch), compute (calibrated busy work), allreduce (MPI_Allreduce)
// with knobs to make one rank a straggler, one rank a slow data loader, or one rank crash.
// Run under mpirun/srun; `mpi_train --help` lists the options.
#include <fcntl.h>
#include <mpi.h>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "options.h"
#include "workload.h"

namespace mpi_train {
namespace {

using Clock = std::chrono::steady_clock;

volatile float g_compute_sink = 0.0f;  // Keeps the busy work observable.

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void SleepMs(double ms) {
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

// The slow loader's extra time, spent as --loader-mode says.
void SlowLoad(const Options& options, int64_t passes_per_ms) {
  if (options.loader_mode == LoaderMode::kSleep) {
    SleepMs(options.loader_ms);
  } else if (options.loader_mode == LoaderMode::kSpin) {
    g_compute_sink =
        g_compute_sink + BusyCompute(static_cast<int64_t>(options.loader_ms * passes_per_ms));
  } else {
    static std::vector<char> buffer(1 << 20);
    static int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    const Clock::time_point start = Clock::now();
    while (fd >= 0 && MsSince(start) < options.loader_ms) {
      if (read(fd, buffer.data(), buffer.size()) <= 0) break;
    }
  }
}

// Returns an error message if a rank option names a rank outside the world, else "".
std::string CheckRanks(const Options& options, int world) {
  const std::pair<const char*, int> rank_options[] = {
      {"--slow-rank", options.slow_rank},
      {"--slow-loader-rank", options.slow_loader_rank},
      {"--crash-rank", options.crash_rank}};
  for (const auto& [name, rank] : rank_options) {
    if (rank >= world) {
      return std::string(name) + " " + std::to_string(rank) + " is not a rank of this job (world " +
             std::to_string(world) + ")";
    }
  }
  return "";
}

// FNV-1a over the reduced values (integers stored as floats), chained across steps.
uint64_t MixChecksum(uint64_t checksum, const std::vector<float>& reduced) {
  for (float value : reduced) {
    checksum ^= static_cast<uint64_t>(value);
    checksum *= 0x100000001b3ULL;
  }
  return checksum;
}

int Train(const Options& options, int rank, int world) {
  // Calibrate once; every rank then does the same amount of work (the fastest measurement is the
  // one least disturbed by other processes).
  double passes_per_ms = MeasurePassesPerMs();
  MPI_Allreduce(MPI_IN_PLACE, &passes_per_ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const auto compute_passes = static_cast<int64_t>(options.compute_ms * passes_per_ms);
  const auto slow_passes = static_cast<int64_t>(options.slow_ms * passes_per_ms);

  std::vector<float> batch(static_cast<size_t>(options.elems));
  std::vector<float> reduced(batch.size());
  uint64_t checksum = 0xcbf29ce484222325ULL;

  MPI_Barrier(MPI_COMM_WORLD);
  const Clock::time_point start = Clock::now();
  Clock::time_point window_start = start;

  for (int step = 0; step < options.steps; ++step) {
    nvtxRangePushA("step");

    if (options.pipeline && rank > 0) {
      nvtxRangePushA("recv");
      MPI_Recv(reduced.data(), options.elems, MPI_FLOAT, rank - 1, step, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      nvtxRangePop();
    }

    nvtxRangePushA("data");
    LoadBatch(rank, step, &batch);
    if (rank == options.slow_loader_rank) SlowLoad(options, static_cast<int64_t>(passes_per_ms));
    nvtxRangePop();

    nvtxRangePushA(options.compute_name.c_str());
    if (rank == options.crash_rank && step == options.crash_step) {
      std::fprintf(stderr, "mpi_train: rank %d aborting at step %d (--crash-rank)\n", rank, step);
      std::fflush(stderr);
      std::abort();
    }
    // The "gradients" are the batch itself, so the allreduced data (and the checksum) do not
    // depend on calibration, slowness or profiling.
    g_compute_sink = g_compute_sink + BusyCompute(compute_passes);
    if (rank == options.slow_rank) {
      if (options.slow_mode == SlowMode::kSpin) {
        g_compute_sink = g_compute_sink + BusyCompute(slow_passes);
      } else {
        SleepMs(options.slow_ms);
      }
    }
    nvtxRangePop();

    if (options.pipeline) {
      if (rank + 1 < world) {
        nvtxRangePushA("send");
        MPI_Send(batch.data(), options.elems, MPI_FLOAT, rank + 1, step, MPI_COMM_WORLD);
        nvtxRangePop();
      }
    } else {
      nvtxRangePushA("allreduce");
      MPI_Allreduce(batch.data(), reduced.data(), options.elems, MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
      nvtxRangePop();
    }

    nvtxRangePop();  // step

    checksum = MixChecksum(checksum, options.pipeline ? batch : reduced);
    if (rank == 0 && !options.quiet && (step + 1) % 10 == 0) {
      std::printf("mpi_train: step %d/%d, %.2f ms/step\n", step + 1, options.steps,
                  MsSince(window_start) / 10);
      std::fflush(stdout);
      window_start = Clock::now();
    }
  }

  if (rank == 0) {
    std::printf("mpi_train: %d steps, world %d, checksum %016" PRIx64 ", wall %.3f s\n",
                options.steps, world, checksum, MsSince(start) / 1000.0);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace mpi_train

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);

  mpi_train::Options options;
  std::string error = mpi_train::ParseOptions(argc, argv, &options);
  if (error.empty()) error = mpi_train::CheckRanks(options, world);

  int exit_code = 0;
  if (options.help) {
    if (rank == 0) std::fputs(mpi_train::Usage().c_str(), stdout);
  } else if (!error.empty()) {
    if (rank == 0)
      std::fprintf(stderr, "mpi_train: %s\n%s", error.c_str(), mpi_train::Usage().c_str());
    exit_code = 2;
  } else {
    exit_code = mpi_train::Train(options, rank, world);
  }
  MPI_Finalize();
  return exit_code;
}
