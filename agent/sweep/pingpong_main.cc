// rankscope-pingpong: the MPI half of `rankscope sweep`'s fabric check. Run as two ranks on two
// nodes (`srun -w A,B -N2 -n2 rankscope-pingpong [--batches N]`); rank 0 prints one line,
//   rankscope-pingpong: latency_s=<one-way, median of batches> bandwidth_Bps=<best> peer=<node>
// which the sweep reads from the step's output (launchers/sweep_cmd.cc). Kept out of the
// rankscope binary so that rankscope itself never links an MPI library.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

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

}  // namespace

int main(int argc, char** argv) {
  int batches = 10;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--batches") == 0) batches = std::max(1, std::atoi(argv[i + 1]));
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
  MPI_Finalize();
  return 0;
}
