// Command-line options of mpi_train, parsed once in main() and passed down.
#pragma once

#include <string>

namespace mpi_train {

// How the extra time of --slow-rank is spent: busy CPU work (looks like a slow rank) or sleep.
enum class SlowMode { kSpin, kSleep };
enum class LoaderMode { kSleep, kRead, kSpin };

struct Options {
  int steps = 20;
  double compute_ms = 2.0;  // Target duration of the per-step compute phase.
  int elems = 65536;        // Floats per MPI_Allreduce.

  int slow_rank = -1;  // -1: none.
  double slow_ms = 30.0;
  SlowMode slow_mode = SlowMode::kSpin;

  int slow_loader_rank = -1;  // -1: none.
  double loader_ms = 25.0;
  LoaderMode loader_mode = LoaderMode::kSleep;

  int crash_rank = -1;  // -1: none.
  int crash_step = -1;  // -1: steps / 2.

  std::string compute_name = "compute";  // the compute phase's NVTX range

  bool quiet = false;
  // Pipeline stages instead of data parallelism: rank r receives --elems floats from r-1,
  // computes, and sends them to r+1 (MPI_Recv / MPI_Send); no allreduce.
  bool pipeline = false;
  bool help = false;
};

// Parses argv into *options. Returns an empty string on success, otherwise a message naming the
// offending argument. Rank-dependent checks (ranks < world size) are done by the caller.
std::string ParseOptions(int argc, char** argv, Options* options);

// The usage text, for stderr (bad arguments) or stdout (--help).
std::string Usage();

}  // namespace mpi_train
