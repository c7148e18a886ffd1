// rankscope-pingpong: the MPI half of `rankscope sweep`'s fabric check. Run as two ranks on two
// nodes (`srun -w A,B -N2 -n2 rankscope-pingpong [--batches N]`); rank 0 prints one line,
//   rankscope-pingpong: latency_s=<one-way, median of batches> bandwidth_Bps=<best> peer=<node>
// which the sweep reads from the step's output (launchers/sweep_cmd.cc). Kept out of the
// rankscope binary so that rankscope itself never links an MPI library.
// When both nodes have GPUs, CUDA and NCCL, it then times an NCCL all-reduce across all the GPUs
// of both nodes (`--nccl-bytes B`, default 64 MiB) and rank 0 prints a second line,
//   rankscope-pingpong: nccl_busbw_Bps=<best bus bandwidth> gpus=<n>
// or "rankscope-pingpong: nccl_error=<why>"; nothing when a node has no GPU (CPU clusters).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "agent/sweep/cuda_driver.h"
#include "agent/sweep/nccl_allreduce.h"

namespace {

using rankscope::AllReduceGpu;
using rankscope::CudaDriver;
using rankscope::NcclLibrary;

constexpr int kTag = 7;

// Median one-way latency of 8-byte ping-pongs, in batches of 100 round trips.
double Latency(int rank, int batches) {
  char byte[8] = {};
  std::vector<double> per_batch;
  for (int b = 0; b < batches + 1; ++b) {  // the first batch warms up
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < 100; ++i) {
      if (rank == 0) {
        MPI_Send(byte, sizeof(byte), MPI_CHAR, 1, kTag, MPI_COMM_WORLD);
        MPI_Recv(byte, sizeof(byte), MPI_CHAR, 1, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(byte, sizeof(byte), MPI_CHAR, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(byte, sizeof(byte), MPI_CHAR, 0, kTag, MPI_COMM_WORLD);
      }
    }
    if (b > 0) per_batch.push_back((MPI_Wtime() - start) / 200);
  }
  std::sort(per_batch.begin(), per_batch.end());
  return per_batch[per_batch.size() / 2];
}

// Best one-direction bandwidth: `count` 4 MiB messages from rank 0, one acknowledgement.
double Bandwidth(int rank, int rounds, int count) {
  const size_t bytes = size_t{4} << 20;
  std::vector<char> buffer(bytes, 1);
  char ack = 0;
  double best = 0;
  for (int r = 0; r < rounds + 1; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < count; ++i) {
      if (rank == 0) {
        MPI_Send(buffer.data(), static_cast<int>(bytes), MPI_CHAR, 1, kTag, MPI_COMM_WORLD);
      } else {
        MPI_Recv(buffer.data(), static_cast<int>(bytes), MPI_CHAR, 0, kTag, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
      }
    }
    if (rank == 0) {
      MPI_Recv(&ack, 1, MPI_CHAR, 1, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Send(&ack, 1, MPI_CHAR, 0, kTag, MPI_COMM_WORLD);
    }
    const double seconds = MPI_Wtime() - start;
    if (r > 0 && seconds > 0) best = std::max(best, static_cast<double>(bytes) * count / seconds);
  }
  return best;
}

// The NCCL all-reduce across both nodes' GPUs, one communicator rank per GPU, this process
// driving all of its node's GPUs. Returns the bus bandwidth in bytes per second, 0 when either
// node has nothing to measure (no driver, GPU or NCCL), or sets `error`. Both ranks take every
// MPI step in the same order, whatever fails before or between NCCL calls; a failure inside
// NCCL's own init or collectives can leave the peer waiting until the step's time limit.
double NcclPair(int rank, size_t bytes, double budget_s, int* total_gpus, std::string* error) {
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
  CudaDriver cu;
  rankscope::CudaPresence presence = rankscope::CudaPresence::kNoDriver;
  rankscope::Status loaded = rankscope::LoadCudaDriver(&cu, &presence);
  NcclLibrary nccl;
  const char* nccl_path = std::getenv("RANKSCOPE_NCCL_LIBRARY");
  std::string local_error = loaded.ok() ? "" : loaded.message();
  bool ready = loaded.ok() && presence == rankscope::CudaPresence::kReady;
  if (ready) {
    // Without NCCL (many nodes get it from their framework's wheel only) there is nothing to
    // judge: said in the log, as the node check does.
    const std::string path = nccl_path != nullptr ? nccl_path : "libnccl.so.2";
    if (rankscope::Status s = nccl.Load(path); !s.ok()) {
      std::fprintf(stderr, "rankscope-pingpong: NCCL pair check skipped: %s\n",
                   s.message().c_str());
      ready = false;
    }
  }
  int local = 0;
  std::vector<AllReduceGpu> gpus;
  if (ready) {
    cu.device_count(&local);
    for (int i = 0; i < local && local_error.empty(); ++i) {
      AllReduceGpu g;
      if (CudaDriver::Result r = cu.Open(i, &g.context, &g.stream); r != 0)
        local_error = "GPU " + std::to_string(i) + ": " + cu.Error(r);
      gpus.push_back(g);
    }
  }
  // Both must be ready, or neither goes on.
  int counts[2] = {local_error.empty() ? local : -1, 0};
  int all[4] = {};
  MPI_Allgather(counts, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
  if (!local_error.empty() || all[0] < 0 || all[2] < 0) {
    if (!local_error.empty()) *error = local_error;
    if (error->empty()) *error = "the peer could not start NCCL";
    return 0;
  }
  if (all[0] == 0 || all[2] == 0) return 0;  // a node without GPUs: nothing to measure
  *total_gpus = all[0] + all[2];
  const int first = rank == 0 ? 0 : all[0];
  NcclLibrary::UniqueId id{};
  int id_result = rank == 0 ? nccl.get_unique_id(&id) : 0;
  MPI_Bcast(&id_result, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (id_result != 0) {
    *error = nccl.Error("ncclGetUniqueId", id_result);
    return 0;
  }
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  nccl.group_start();
  int init = 0;
  for (int i = 0; i < local; ++i) {
    cu.ctx_set_current(gpus[i].context);
    init = nccl.comm_init_rank(&gpus[i].comm, *total_gpus, id, first + i);
    if (init != 0) break;
  }
  if (int end = nccl.group_end(); init == 0) init = end;
  int ok = init == 0 ? 1 : 0, both = 0;
  MPI_Allreduce(&ok, &both, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!both) {
    *error =
        init != 0 ? nccl.Error("ncclCommInitRank", init) : "the peer's ncclCommInitRank failed";
    return 0;
  }
  // Rank 0 decides every round's size and when to stop; the other follows.
  auto agree = [](int* reps, bool* more, bool* failed) {
    int decision[2] = {*reps, *more ? 1 : 0};
    MPI_Bcast(decision, 2, MPI_INT, 0, MPI_COMM_WORLD);
    *reps = decision[0];
    *more = decision[1] != 0;
    int mine = *failed ? 1 : 0, any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    *failed = any != 0;
  };
  rankscope::Result<double> algbw = rankscope::TimeAllReduce(
      cu, nccl, &gpus, bytes, static_cast<rankscope::DurationNs>(budget_s * 1e9), agree);
  if (!algbw.ok()) {
    *error = algbw.status().message();
    return 0;
  }
  return rankscope::AllReduceBusBandwidth(algbw.value(), *total_gpus);
}

}  // namespace

int main(int argc, char** argv) {
  int batches = 10;
  size_t nccl_bytes = size_t{64} << 20;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--batches") == 0) batches = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--nccl-bytes") == 0) {
      nccl_bytes = static_cast<size_t>(std::max(4LL, std::atoll(argv[i + 1])));
    }
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) {
      std::fprintf(stderr,
                   "rankscope-pingpong: error: needs 2 ranks, got %d (under srun: the MPI plugin "
                   "may be wrong; rankscope sweep --mpi pmix)\n",
                   size);
    }
    MPI_Finalize();
    return 2;
  }
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int name_len = 0;
  MPI_Get_processor_name(name, &name_len);
  const char* node = std::getenv("SLURMD_NODENAME");
  std::string peer = node != nullptr ? node : name;
  // Rank 0 names its peer, so the sweep can tell which pair this was.
  char peer_name[256] = {};
  if (rank == 1) {
    std::snprintf(peer_name, sizeof(peer_name), "%s", peer.c_str());
    MPI_Send(peer_name, sizeof(peer_name), MPI_CHAR, 0, kTag, MPI_COMM_WORLD);
  } else {
    MPI_Recv(peer_name, sizeof(peer_name), MPI_CHAR, 1, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  const double latency = Latency(rank, batches);
  // Best of several short rounds: one clean round is enough, a busy moment is not held against
  // the link.
  const double bandwidth = Bandwidth(rank, std::max(5, batches), 8);
  if (rank == 0) {
    std::printf("rankscope-pingpong: latency_s=%.9g bandwidth_Bps=%.9g peer=%s\n", latency,
                bandwidth, peer_name);
    std::fflush(stdout);
  }
  int gpus = 0;
  std::string nccl_error;
  const double busbw = NcclPair(rank, nccl_bytes, 0.2 * batches, &gpus, &nccl_error);
  if (rank == 0 && !nccl_error.empty()) {
    for (char& ch : nccl_error) ch = ch == '\n' ? ' ' : ch;
    std::printf("rankscope-pingpong: nccl_error=%s\n", nccl_error.c_str());
  } else if (rank == 0 && busbw > 0) {
    std::printf("rankscope-pingpong: nccl_busbw_Bps=%.9g gpus=%d\n", busbw, gpus);
  }
  std::fflush(stdout);
  MPI_Finalize();
  return 0;
}
