// A small MPI program for mpi_inject_test (run with 3 ranks): a fixed sequence of collectives
// on MPI_COMM_WORLD and on a split communicator, non-blocking collectives, and point-to-point
// traffic in every send mode, probes, a Test loop, halo exchange on a cartesian communicator
// that carries no collective, neighbourhood collectives, one-sided synchronisation, MPI-IO and
// persistent requests. Rank 0 prints a checksum of everything it received, so runs with and
// without the inject library can be compared. The test knows this sequence; keep the two in
// step.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

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

  // Sendrecv around the ring (tag 20, 4 bytes) and Sendrecv_replace back (tag 21, 8 bytes).
  const int next = (rank + 1) % size;
  const int prev = (rank + size - 1) % size;
  int got = -1;
  MPI_Sendrecv(&out, 1, MPI_INT, next, 20, &got, 1, MPI_INT, MPI_ANY_SOURCE, 20, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  checksum += got;
  int pair[2] = {rank, rank * 2};
  MPI_Sendrecv_replace(pair, 2, MPI_INT, prev, 21, next, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  checksum += pair[1];

  // Send modes, rank 0 -> rank 1 (4 bytes each): Ssend 30, Bsend 31, Rsend 32, Issend 34,
  // Ibsend 35, Irsend 36. Ready sends need their receives posted: rank 1 says so with tag 33.
  std::vector<char> attached(1024 + MPI_BSEND_OVERHEAD * 4);
  MPI_Buffer_attach(attached.data(), static_cast<int>(attached.size()));
  int modes[7] = {0, 0, 0, 0, 0, 0, 0};
  if (rank == 0) {
    int ready = 0;
    MPI_Recv(&ready, 1, MPI_INT, 1, 33, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int v[6] = {30, 31, 32, 34, 35, 36};
    MPI_Ssend(&v[0], 1, MPI_INT, 1, 30, MPI_COMM_WORLD);
    MPI_Bsend(&v[1], 1, MPI_INT, 1, 31, MPI_COMM_WORLD);
    MPI_Rsend(&v[2], 1, MPI_INT, 1, 32, MPI_COMM_WORLD);
    MPI_Request sends[3];
    MPI_Issend(&v[3], 1, MPI_INT, 1, 34, MPI_COMM_WORLD, &sends[0]);
    MPI_Ibsend(&v[4], 1, MPI_INT, 1, 35, MPI_COMM_WORLD, &sends[1]);
    MPI_Irsend(&v[5], 1, MPI_INT, 1, 36, MPI_COMM_WORLD, &sends[2]);
    MPI_Waitall(3, sends, MPI_STATUSES_IGNORE);
  } else if (rank == 1) {
    MPI_Request ready_recvs[2];
    MPI_Irecv(&modes[2], 1, MPI_INT, 0, 32, MPI_COMM_WORLD, &ready_recvs[0]);
    MPI_Irecv(&modes[6], 1, MPI_INT, 0, 36, MPI_COMM_WORLD, &ready_recvs[1]);
    int ready = 1;
    MPI_Send(&ready, 1, MPI_INT, 0, 33, MPI_COMM_WORLD);
    MPI_Recv(&modes[0], 1, MPI_INT, 0, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(&modes[1], 1, MPI_INT, 0, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(&modes[4], 1, MPI_INT, 0, 34, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(&modes[5], 1, MPI_INT, 0, 35, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Waitall(2, ready_recvs, MPI_STATUSES_IGNORE);
  }
  void* detached = nullptr;
  int detached_size = 0;
  MPI_Buffer_detach(&detached, &detached_size);
  for (int m : modes) checksum += m;

  // Probes, rank 2 -> rank 0: Probe + Recv (tag 40, 12 bytes); an Iprobe loop while rank 2
  // sleeps 20 ms, + Recv (tag 41, 4 bytes); Mprobe + Mrecv (tag 42, 8 bytes); an Improbe loop
  // + Imrecv + Wait (tag 43, 4 bytes).
  if (rank == 2) {
    int three[3] = {4, 5, 6};
    MPI_Send(three, 3, MPI_INT, 0, 40, MPI_COMM_WORLD);
    usleep(20000);
    MPI_Send(&three[0], 1, MPI_INT, 0, 41, MPI_COMM_WORLD);
    MPI_Send(three, 2, MPI_INT, 0, 42, MPI_COMM_WORLD);
    usleep(20000);
    MPI_Send(&three[2], 1, MPI_INT, 0, 43, MPI_COMM_WORLD);
  } else if (rank == 0) {
    MPI_Status st;
    int probed[3] = {0, 0, 0};
    MPI_Probe(MPI_ANY_SOURCE, 40, MPI_COMM_WORLD, &st);
    MPI_Recv(probed, 3, MPI_INT, st.MPI_SOURCE, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    checksum += probed[2];
    int flag = 0;
    while (!flag) MPI_Iprobe(2, 41, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    MPI_Recv(probed, 1, MPI_INT, 2, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    checksum += probed[0];
    MPI_Message message;
    MPI_Mprobe(2, 42, MPI_COMM_WORLD, &message, MPI_STATUS_IGNORE);
    MPI_Mrecv(probed, 2, MPI_INT, &message, MPI_STATUS_IGNORE);
    checksum += probed[1];
    flag = 0;
    while (!flag) MPI_Improbe(MPI_ANY_SOURCE, 43, MPI_COMM_WORLD, &flag, &message, &st);
    MPI_Request matched;
    MPI_Imrecv(probed, 1, MPI_INT, &message, &matched);
    MPI_Wait(&matched, MPI_STATUS_IGNORE);
    checksum += probed[0];
  }

  // A Test loop, rank 1 -> rank 2 (tag 50, 4 bytes): rank 2 posts its receive, says so (tag
  // 51), and polls while rank 1 sleeps 20 ms.
  if (rank == 1) {
    int posted = 0;
    MPI_Recv(&posted, 1, MPI_INT, 2, 51, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    usleep(20000);
    MPI_Send(&rank, 1, MPI_INT, 2, 50, MPI_COMM_WORLD);
  } else if (rank == 2) {
    int polled = 0;
    MPI_Request pending;
    MPI_Irecv(&polled, 1, MPI_INT, 1, 50, MPI_COMM_WORLD, &pending);
    MPI_Send(&rank, 1, MPI_INT, 1, 51, MPI_COMM_WORLD);
    int finished = 0;
    while (!finished) MPI_Test(&pending, &finished, MPI_STATUS_IGNORE);
  }

  // Two requests polled in turn (HPCC's RandomAccess), rank 1 -> rank 2, tags 52 and 53: rank 2
  // posts both receives, says so (tag 54), and tests one then the other while rank 1 sleeps
  // 20 ms before the first send and 10 ms before the second.
  if (rank == 1) {
    int posted = 0;
    MPI_Recv(&posted, 1, MPI_INT, 2, 54, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    usleep(20000);
    MPI_Send(&rank, 1, MPI_INT, 2, 52, MPI_COMM_WORLD);
    usleep(10000);
    MPI_Send(&rank, 1, MPI_INT, 2, 53, MPI_COMM_WORLD);
  } else if (rank == 2) {
    int first = 0, second = 0;
    MPI_Request turn[2];
    MPI_Irecv(&first, 1, MPI_INT, 1, 52, MPI_COMM_WORLD, &turn[0]);
    MPI_Irecv(&second, 1, MPI_INT, 1, 53, MPI_COMM_WORLD, &turn[1]);
    MPI_Send(&rank, 1, MPI_INT, 1, 54, MPI_COMM_WORLD);
    int done_first = 0, done_second = 0;
    while (!done_first || !done_second) {
      if (!done_first) MPI_Test(&turn[0], &done_first, MPI_STATUS_IGNORE);
      if (!done_second) MPI_Test(&turn[1], &done_second, MPI_STATUS_IGNORE);
    }
    checksum += first + second;
  }

  // World seq 11..15: scans, alltoallw, and their non-blocking forms.
  int scanned = 0;
  MPI_Scan(&rank, &scanned, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);  // 4 bytes
  checksum += scanned;
  int exscanned = 0;
  MPI_Exscan(&rank, &exscanned, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);  // 4 bytes
  if (rank > 0) checksum += exscanned;
  int w_counts[3] = {1, 1, 1};
  int w_displs[3] = {0, 4, 8};
  MPI_Datatype w_types[3] = {MPI_INT, MPI_INT, MPI_INT};
  MPI_Alltoallw(to_all, w_counts, w_displs, w_types, from_all, w_counts, w_displs, w_types,
                MPI_COMM_WORLD);  // 12 bytes
  checksum += from_all[2];
  MPI_Iscan(&rank, &scanned, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request);  // 4 bytes
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  MPI_Ialltoallw(to_all, w_counts, w_displs, w_types, from_all, w_counts, w_displs, w_types,
                 MPI_COMM_WORLD, &request);  // 12 bytes
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  checksum += scanned + from_all[0];

  // A ring as a cartesian communicator over the world in reverse order (cart rank = 2 - world
  // rank), used only for a halo exchange (tag 60, 4 bytes each way): no collective on it tells
  // the coordinator who its ranks are.
  MPI_Comm reversed;
  MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &reversed);
  MPI_Comm ring_comm;
  int dims[1] = {size};
  int periods[1] = {1};
  MPI_Cart_create(reversed, 1, dims, periods, 0, &ring_comm);
  int left = -1;
  int right = -1;
  MPI_Cart_shift(ring_comm, 0, 1, &left, &right);
  int halo = -1;
  MPI_Sendrecv(&rank, 1, MPI_INT, right, 60, &halo, 1, MPI_INT, left, 60, ring_comm,
               MPI_STATUS_IGNORE);
  checksum += halo;

  // Neighbourhood collectives on a second cartesian ring (seq 0..2 there): 2 neighbours each.
  MPI_Comm hood;
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &hood);
  int from_hood[2] = {0, 0};
  MPI_Neighbor_allgather(&rank, 1, MPI_INT, from_hood, 1, MPI_INT, hood);  // 4 bytes
  checksum += from_hood[0];
  int to_hood[2] = {rank, rank + 10};
  MPI_Neighbor_alltoall(to_hood, 1, MPI_INT, from_hood, 1, MPI_INT, hood);  // 8 bytes
  checksum += from_hood[1];
  MPI_Ineighbor_alltoall(to_hood, 1, MPI_INT, from_hood, 1, MPI_INT, hood, &request);  // 8 bytes
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  checksum += from_hood[0];
  MPI_Comm_free(&hood);
  MPI_Comm_free(&ring_comm);
  MPI_Comm_free(&reversed);

  // One-sided synchronisation on a window over one int per rank.
  int window_value = rank;
  MPI_Win win;
  MPI_Win_create(&window_value, sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_fence(0, win);
  MPI_Win_fence(0, win);
  MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
  MPI_Win_flush(next, win);
  MPI_Win_flush_local(next, win);
  MPI_Win_unlock(next, win);
  MPI_Win_lock_all(0, win);
  MPI_Win_flush_all(win);
  MPI_Win_flush_local_all(win);
  MPI_Win_unlock_all(win);
  MPI_Group world_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Win_post(world_group, 0, win);
  MPI_Win_start(world_group, 0, win);
  MPI_Win_complete(win);
  MPI_Win_wait(win);
  MPI_Group_free(&world_group);
  MPI_Win_free(&win);

  // MPI-IO on a file of this rank's own (16 bytes per call).
  const std::string file_name =
      "/tmp/rankscope-mpi-inject-" + std::to_string(getpid()) + "-" + std::to_string(rank);
  MPI_File file;
  if (MPI_File_open(MPI_COMM_SELF, file_name.c_str(), MPI_MODE_CREATE | MPI_MODE_RDWR,
                    MPI_INFO_NULL, &file) == MPI_SUCCESS) {
    int block[4] = {rank, 1, 2, 3};
    int back[4] = {0, 0, 0, 0};
    MPI_File_write(file, block, 4, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_write_at(file, 16, block, 4, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_write_all(file, block, 4, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_write_at_all(file, 48, block, 4, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_read_at(file, 0, back, 4, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_read_at_all(file, 16, back, 4, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_seek(file, 0, MPI_SEEK_SET);
    MPI_File_read(file, back, 4, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_read_all(file, back, 4, MPI_INT, MPI_STATUS_IGNORE);
    checksum += back[0];
    MPI_File_close(&file);
    MPI_File_delete(file_name.c_str(), MPI_INFO_NULL);
  }

  // Persistent requests around the ring (tag 70): Startall, then Start on each again.
  int persistent_out = rank;
  int persistent_in = -1;
  MPI_Request persistent[2];
  MPI_Recv_init(&persistent_in, 1, MPI_INT, prev, 70, MPI_COMM_WORLD, &persistent[0]);
  MPI_Send_init(&persistent_out, 1, MPI_INT, next, 70, MPI_COMM_WORLD, &persistent[1]);
  MPI_Startall(2, persistent);
  MPI_Waitall(2, persistent, MPI_STATUSES_IGNORE);
  MPI_Start(&persistent[0]);
  MPI_Start(&persistent[1]);
  MPI_Waitall(2, persistent, MPI_STATUSES_IGNORE);
  checksum += persistent_in;
  MPI_Request_free(&persistent[0]);
  MPI_Request_free(&persistent[1]);

  MPI_Comm_free(&half);
  if (rank == 0) std::printf("checksum %ld\n", checksum);
  MPI_Finalize();
  return 0;
}
