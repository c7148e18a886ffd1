// A small MPI program for mpi_inject_test (run with 3 ranks): a fixed sequence of collectives
// on MPI_COMM_WORLD and on a split communicator, non-blocking collectives, and point-to-point
// traffic. Rank 0 prints a checksum of everything it received, so runs with and without the
// inject library can be compared. The test knows this sequence; keep the two in step.
#include <mpi.h>

#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long checksum = 0;

  // World seq 0..7: blocking collectives.
  int ints[4] = {rank, rank + 1, rank + 2, rank + 3};
  int sums[4] = {0, 0, 0, 0};
  MPI_Allreduce(ints, sums, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);  // 16 bytes
  checksum += sums[0] + sums[3];
  double doubles[8] = {0};
  if (rank == 1) doubles[7] = 42.0;
  MPI_Bcast(doubles, 8, MPI_DOUBLE, 1, MPI_COMM_WORLD);  // 64 bytes, root 1
  checksum += static_cast<long>(doubles[7]);
  MPI_Reduce(ints, sums, 4, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);  // 16 bytes, root 0
  if (rank == 0) checksum += sums[1];
  MPI_Barrier(MPI_COMM_WORLD);  // 0 bytes
  int gathered[3] = {0, 0, 0};
  MPI_Allgather(&rank, 1, MPI_INT, gathered, 1, MPI_INT, MPI_COMM_WORLD);  // 4 bytes
  checksum += gathered[2];
  int to_all[3] = {rank * 10, rank * 10 + 1, rank * 10 + 2};
  int from_all[3] = {0, 0, 0};
  MPI_Alltoall(to_all, 1, MPI_INT, from_all, 1, MPI_INT, MPI_COMM_WORLD);  // 12 bytes
  checksum += from_all[1];
  MPI_Gather(&rank, 1, MPI_INT, gathered, 1, MPI_INT, 2, MPI_COMM_WORLD);  // 4 bytes, root 2
  int chunks[6] = {1, 2, 3, 4, 5, 6};
  int chunk[2] = {0, 0};
  MPI_Scatter(chunks, 2, MPI_INT, chunk, 2, MPI_INT, 0, MPI_COMM_WORLD);  // 8 bytes, root 0
  checksum += chunk[1];

  // A split communicator: ranks {0, 2} and {1}. Its seq starts at 0.
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int half_sum[2] = {0, 0};
  MPI_Allreduce(ints, half_sum, 2, MPI_INT, MPI_SUM, half);  // 8 bytes
  checksum += half_sum[0];
  MPI_Barrier(half);

  // A duplicate of the world communicator (what libraries do): same members, its own id.
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Barrier(dup);
  MPI_Comm_free(&dup);

  // World seq 8..9: non-blocking collectives.
  int big[8] = {1, 1, 1, 1, 1, 1, 1, rank};
  int big_sum[8] = {0};
  MPI_Request request;
  MPI_Iallreduce(big, big_sum, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request);  // 32 bytes
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  checksum += big_sum[7];
  int bcast[4] = {rank == 0 ? 7 : 0, 0, 0, 0};
  MPI_Ibcast(bcast, 4, MPI_INT, 0, MPI_COMM_WORLD, &request);  // 16 bytes, root 0
  int done = 0;
  while (!done) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  checksum += bcast[0];

  // Point to point: a ring of Isend / Irecv(ANY_SOURCE), then a Send / Recv pair.
  int out = rank * 100;
  int in = -1;
  MPI_Request ring[2];
  MPI_Irecv(&in, 1, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &ring[0]);
  MPI_Isend(&out, 1, MPI_INT, (rank + 1) % size, 5, MPI_COMM_WORLD, &ring[1]);
  MPI_Waitall(2, ring, MPI_STATUSES_IGNORE);
  checksum += in;
  double payload = 3.5;
  if (rank == 0) MPI_Send(&payload, 1, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD);  // 8 bytes
  if (rank == 1) {
    MPI_Recv(&payload, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }

  // World seq 10.
  int scatter_in[6] = {1, 2, 3, 4, 5, 6};
  int scatter_out[2] = {0, 0};
  MPI_Reduce_scatter_block(scatter_in, scatter_out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);  // 24
  checksum += scatter_out[1];

  MPI_Comm_free(&half);
  if (rank == 0) std::printf("checksum %ld\n", checksum);
  MPI_Finalize();
  return 0;
}
