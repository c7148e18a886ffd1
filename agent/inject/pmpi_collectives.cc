// PMPI wrappers for MPI collectives. Each wrapper describes the call (communicator id, seq,
// root, bytes), times the PMPI call, and emits a CollectiveRecord. Non-blocking variants record
// the post time and leave the record in the pending table for the Wait/Test that completes it.
//
// bytes is what this rank contributes: its send buffer (count x type size; for v-variants the
// counts it sends; MPI_IN_PLACE reads the receive side). Scatters, whose non-roots send nothing,
// report the chunk this rank receives. Arguments MPI calls insignificant at this rank are never
// read.
#include "agent/inject/comm_registry.h"
#include "agent/inject/pmpi_common.h"
#include "agent/inject/record_sink.h"

namespace rankscope::inject {
namespace {

// Describes a collective call of `op` on `comm` and consumes its sequence number. False when
// the communicator cannot be described; the caller then only forwards the call.
template <typename BytesFn>
bool Describe(CollectiveOp op, MPI_Comm comm, int root, bool nonblocking, BytesFn bytes,
              CollectiveRecord* r) {
  CommInfo* info = LookupComm(comm);
  if (info == nullptr) return false;
  r->comm_id = info->id;
  r->seq = info->next_seq.fetch_add(1, std::memory_order_relaxed);
  r->op = op;
  r->nonblocking = nonblocking;
  r->root = root;
  r->comm_size = info->size;
  r->comm_rank = info->rank;
  r->bytes = bytes(*info);
  r->tid = ThreadId();
  return true;
}

// Runs a blocking collective `call` and records it.
template <typename BytesFn, typename CallFn>
int Blocking(CollectiveOp op, MPI_Comm comm, int root, BytesFn bytes, CallFn call) {
  CollectiveRecord r;
  if (!Active() || !Describe(op, comm, root, false, bytes, &r)) return call();
  r.enter = FastNow();
  int rc;
  {
    const OpenCallScope open(r, r.enter);
    rc = call();
  }
  r.exit = FastNow();
  if (rc == MPI_SUCCESS) EmitCollective(r);
  return rc;
}

// Posts a non-blocking collective `call` and tracks *request until it completes.
template <typename BytesFn, typename CallFn>
int Posted(CollectiveOp op, MPI_Comm comm, int root, BytesFn bytes, MPI_Request* request,
           CallFn call) {
  PendingOp pending;
  pending.kind = PendingOp::Kind::kCollective;
  if (!Active() || !Describe(op, comm, root, true, bytes, &pending.collective)) return call();
  pending.collective.enter = FastNow();
  int rc = call();
  if (rc == MPI_SUCCESS && request != nullptr) TrackRequest(*request, pending);
  return rc;
}

bool IsRoot(const CommInfo& c, int root) { return root == c.rank || root == MPI_ROOT; }

// Payload helpers, one per argument shape.
auto None() {
  return [](const CommInfo&) -> Bytes { return 0; };
}
auto Plain(int count, MPI_Datatype type) {
  return [=](const CommInfo&) { return TypeBytes(count, type); };
}
// Allgather-like: one block sent, or with MPI_IN_PLACE this rank's block of the receive buffer.
auto OneBlock(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
              MPI_Datatype recvtype) {
  return [=](const CommInfo&) {
    return sendbuf == MPI_IN_PLACE ? TypeBytes(recvcount, recvtype)
                                   : TypeBytes(sendcount, sendtype);
  };
}
auto OneBlockV(const void* sendbuf, int sendcount, MPI_Datatype sendtype, const int recvcounts[],
               MPI_Datatype recvtype) {
  return [=](const CommInfo& c) {
    if (sendbuf != MPI_IN_PLACE) return TypeBytes(sendcount, sendtype);
    return recvcounts == nullptr ? 0 : TypeBytes(recvcounts[c.rank], recvtype);
  };
}
// Alltoall: one block to every member.
auto EveryBlock(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                MPI_Datatype recvtype) {
  return [=](const CommInfo& c) {
    return sendbuf == MPI_IN_PLACE ? TypeBytes(int64_t{recvcount} * c.size, recvtype)
                                   : TypeBytes(int64_t{sendcount} * c.size, sendtype);
  };
}
auto EveryBlockV(const void* sendbuf, const int sendcounts[], MPI_Datatype sendtype,
                 const int recvcounts[], MPI_Datatype recvtype) {
  return [=](const CommInfo& c) {
    return sendbuf == MPI_IN_PLACE ? TypeBytes(SumCounts(recvcounts, c.size), recvtype)
                                   : TypeBytes(SumCounts(sendcounts, c.size), sendtype);
  };
}
auto ReduceScatterV(const int recvcounts[], MPI_Datatype type) {
  return [=](const CommInfo& c) { return TypeBytes(SumCounts(recvcounts, c.size), type); };
}
auto ReduceScatterBlock(int recvcount, MPI_Datatype type) {
  return [=](const CommInfo& c) { return TypeBytes(int64_t{recvcount} * c.size, type); };
}
// Gather: every rank sends one block; the root's may be MPI_IN_PLACE in its receive buffer.
auto GatherBlock(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                 MPI_Datatype recvtype, int root) {
  return [=](const CommInfo& c) {
    if (IsRoot(c, root) && sendbuf == MPI_IN_PLACE) return TypeBytes(recvcount, recvtype);
    return TypeBytes(sendcount, sendtype);
  };
}
auto GatherBlockV(const void* sendbuf, int sendcount, MPI_Datatype sendtype, const int recvcounts[],
                  MPI_Datatype recvtype, int root) {
  return [=](const CommInfo& c) {
    if (IsRoot(c, root) && sendbuf == MPI_IN_PLACE) {
      return recvcounts == nullptr ? 0 : TypeBytes(recvcounts[c.rank], recvtype);
    }
    return TypeBytes(sendcount, sendtype);
  };
}
// Scatter: the chunk this rank receives; an in-place root keeps its chunk in the send buffer.
auto ScatterBlock(int sendcount, MPI_Datatype sendtype, const void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, int root) {
  return [=](const CommInfo& c) {
    if (IsRoot(c, root) && recvbuf == MPI_IN_PLACE) return TypeBytes(sendcount, sendtype);
    return TypeBytes(recvcount, recvtype);
  };
}
auto ScatterBlockV(const int sendcounts[], MPI_Datatype sendtype, const void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, int root) {
  return [=](const CommInfo& c) {
    if (IsRoot(c, root) && recvbuf == MPI_IN_PLACE) {
      return sendcounts == nullptr ? 0 : TypeBytes(sendcounts[c.rank], sendtype);
    }
    return TypeBytes(recvcount, recvtype);
  };
}

// Alltoallw: one block of its own type to every member.
auto EveryBlockW(const void* sendbuf, const int sendcounts[], const MPI_Datatype sendtypes[],
                 const int recvcounts[], const MPI_Datatype recvtypes[]) {
  return [=](const CommInfo& c) {
    const bool in_place = sendbuf == MPI_IN_PLACE;
    const int* counts = in_place ? recvcounts : sendcounts;
    const MPI_Datatype* types = in_place ? recvtypes : sendtypes;
    if (counts == nullptr || types == nullptr) return Bytes{0};
    Bytes sum = 0;
    for (int i = 0; i < c.size; ++i) sum += TypeBytes(counts[i], types[i]);
    return sum;
  };
}

// The neighbours this rank sends to in `comm`'s process topology (cartesian: two per
// dimension, MPI_PROC_NULL ones included, as MPI counts them; graph: its neighbours;
// distributed graph: its out-degree); 0 without a topology. Local calls only.
int OutDegree(MPI_Comm comm, int rank) {
  int kind = MPI_UNDEFINED;
  if (PMPI_Topo_test(comm, &kind) != MPI_SUCCESS) return 0;
  if (kind == MPI_CART) {
    int ndims = 0;
    return PMPI_Cartdim_get(comm, &ndims) == MPI_SUCCESS ? 2 * ndims : 0;
  }
  if (kind == MPI_GRAPH) {
    int n = 0;
    return PMPI_Graph_neighbors_count(comm, rank, &n) == MPI_SUCCESS ? n : 0;
  }
  if (kind == MPI_DIST_GRAPH) {
    int indegree = 0;
    int outdegree = 0;
    int weighted = 0;
    return PMPI_Dist_graph_neighbors_count(comm, &indegree, &outdegree, &weighted) == MPI_SUCCESS
               ? outdegree
               : 0;
  }
  return 0;
}

// Neighbourhood collectives: what this rank sends its out-neighbours. Allgather-like sends
// one block (as MPI_Allgather), alltoall-like one block to each.
auto NeighborOneBlock(int sendcount, MPI_Datatype sendtype) {
  return [=](const CommInfo&) { return TypeBytes(sendcount, sendtype); };
}
auto NeighborEveryBlock(MPI_Comm comm, int sendcount, MPI_Datatype sendtype) {
  return [=](const CommInfo& c) {
    return TypeBytes(int64_t{sendcount} * OutDegree(comm, c.rank), sendtype);
  };
}
auto NeighborEveryBlockV(MPI_Comm comm, const int sendcounts[], MPI_Datatype sendtype) {
  return [=](const CommInfo& c) {
    return TypeBytes(SumCounts(sendcounts, OutDegree(comm, c.rank)), sendtype);
  };
}
auto NeighborEveryBlockW(MPI_Comm comm, const int sendcounts[], const MPI_Datatype sendtypes[]) {
  return [=](const CommInfo& c) {
    if (sendcounts == nullptr || sendtypes == nullptr) return Bytes{0};
    const int n = OutDegree(comm, c.rank);
    Bytes sum = 0;
    for (int i = 0; i < n; ++i) sum += TypeBytes(sendcounts[i], sendtypes[i]);
    return sum;
  };
}

}  // namespace
}  // namespace rankscope::inject

using rankscope::CollectiveOp;
namespace ri = rankscope::inject;

// ---- Blocking collectives ----

extern "C" int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kAllreduce, comm, -1, ri::Plain(count, datatype),
                      [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm); });
}

extern "C" int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, int root, MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kReduce, comm, root, ri::Plain(count, datatype), [&] {
    return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  });
}

extern "C" int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kBcast, comm, root, ri::Plain(count, datatype),
                      [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); });
}

extern "C" int MPI_Barrier(MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kBarrier, comm, -1, ri::None(),
                      [&] { return PMPI_Barrier(comm); });
}

extern "C" int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                             void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kAllgather, comm, -1,
                      ri::OneBlock(sendbuf, sendcount, sendtype, recvcount, recvtype), [&] {
                        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                              recvtype, comm);
                      });
}

extern "C" int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                              void* recvbuf, const int recvcounts[], const int displs[],
                              MPI_Datatype recvtype, MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kAllgatherv, comm, -1,
                      ri::OneBlockV(sendbuf, sendcount, sendtype, recvcounts, recvtype), [&] {
                        return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                               displs, recvtype, comm);
                      });
}

extern "C" int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                            void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kAlltoall, comm, -1,
                      ri::EveryBlock(sendbuf, sendcount, sendtype, recvcount, recvtype), [&] {
                        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             recvtype, comm);
                      });
}

extern "C" int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                             MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                             const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kAlltoallv, comm, -1,
                      ri::EveryBlockV(sendbuf, sendcounts, sendtype, recvcounts, recvtype), [&] {
                        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                              recvcounts, rdispls, recvtype, comm);
                      });
}

extern "C" int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return ri::Blocking(
      CollectiveOp::kReduceScatter, comm, -1, ri::ReduceScatterV(recvcounts, datatype),
      [&] { return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm); });
}

extern "C" int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return ri::Blocking(
      CollectiveOp::kReduceScatterBlock, comm, -1, ri::ReduceScatterBlock(recvcount, datatype),
      [&] { return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm); });
}

extern "C" int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                          int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return ri::Blocking(
      CollectiveOp::kGather, comm, root,
      ri::GatherBlock(sendbuf, sendcount, sendtype, recvcount, recvtype, root), [&] {
        return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
      });
}

extern "C" int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                           const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                           int root, MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kGatherv, comm, root,
                      ri::GatherBlockV(sendbuf, sendcount, sendtype, recvcounts, recvtype, root),
                      [&] {
                        return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                            displs, recvtype, root, comm);
                      });
}

extern "C" int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                           int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return ri::Blocking(
      CollectiveOp::kScatter, comm, root,
      ri::ScatterBlock(sendcount, sendtype, recvbuf, recvcount, recvtype, root), [&] {
        return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
      });
}

extern "C" int MPI_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                            MPI_Datatype sendtype, void* recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kScatterv, comm, root,
                      ri::ScatterBlockV(sendcounts, sendtype, recvbuf, recvcount, recvtype, root),
                      [&] {
                        return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf,
                                             recvcount, recvtype, root, comm);
                      });
}

extern "C" int MPI_Scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kScan, comm, -1, ri::Plain(count, datatype),
                      [&] { return PMPI_Scan(sendbuf, recvbuf, count, datatype, op, comm); });
}

extern "C" int MPI_Exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kExscan, comm, -1, ri::Plain(count, datatype),
                      [&] { return PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm); });
}

extern "C" int MPI_Alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
                             const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                             const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kAlltoallw, comm, -1,
                      ri::EveryBlockW(sendbuf, sendcounts, sendtypes, recvcounts, recvtypes), [&] {
                        return PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                              recvcounts, rdispls, recvtypes, comm);
                      });
}

extern "C" int MPI_Neighbor_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                      MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kNeighborAllgather, comm, -1,
                      ri::NeighborOneBlock(sendcount, sendtype), [&] {
                        return PMPI_Neighbor_allgather(sendbuf, sendcount, sendtype, recvbuf,
                                                       recvcount, recvtype, comm);
                      });
}

extern "C" int MPI_Neighbor_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void* recvbuf, const int recvcounts[], const int displs[],
                                       MPI_Datatype recvtype, MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kNeighborAllgatherv, comm, -1,
                      ri::NeighborOneBlock(sendcount, sendtype), [&] {
                        return PMPI_Neighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf,
                                                        recvcounts, displs, recvtype, comm);
                      });
}

extern "C" int MPI_Neighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                     MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kNeighborAlltoall, comm, -1,
                      ri::NeighborEveryBlock(comm, sendcount, sendtype), [&] {
                        return PMPI_Neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf,
                                                      recvcount, recvtype, comm);
                      });
}

extern "C" int MPI_Neighbor_alltoallv(const void* sendbuf, const int sendcounts[],
                                      const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                      const int recvcounts[], const int rdispls[],
                                      MPI_Datatype recvtype, MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kNeighborAlltoallv, comm, -1,
                      ri::NeighborEveryBlockV(comm, sendcounts, sendtype), [&] {
                        return PMPI_Neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype,
                                                       recvbuf, recvcounts, rdispls, recvtype,
                                                       comm);
                      });
}

extern "C" int MPI_Neighbor_alltoallw(const void* sendbuf, const int sendcounts[],
                                      const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                      void* recvbuf, const int recvcounts[],
                                      const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                      MPI_Comm comm) {
  return ri::Blocking(CollectiveOp::kNeighborAlltoallw, comm, -1,
                      ri::NeighborEveryBlockW(comm, sendcounts, sendtypes), [&] {
                        return PMPI_Neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes,
                                                       recvbuf, recvcounts, rdispls, recvtypes,
                                                       comm);
                      });
}

// ---- Non-blocking collectives: enter = post, exit = the Wait/Test that completes them ----

extern "C" int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(CollectiveOp::kAllreduce, comm, -1, ri::Plain(count, datatype), request, [&] {
    return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
  });
}

extern "C" int MPI_Ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                           MPI_Op op, int root, MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(CollectiveOp::kReduce, comm, root, ri::Plain(count, datatype), request, [&] {
    return PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request);
  });
}

extern "C" int MPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                          MPI_Request* request) {
  return ri::Posted(CollectiveOp::kBcast, comm, root, ri::Plain(count, datatype), request,
                    [&] { return PMPI_Ibcast(buffer, count, datatype, root, comm, request); });
}

extern "C" int MPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(CollectiveOp::kBarrier, comm, -1, ri::None(), request,
                    [&] { return PMPI_Ibarrier(comm, request); });
}

extern "C" int MPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                              void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                              MPI_Request* request) {
  return ri::Posted(CollectiveOp::kAllgather, comm, -1,
                    ri::OneBlock(sendbuf, sendcount, sendtype, recvcount, recvtype), request, [&] {
                      return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             recvtype, comm, request);
                    });
}

extern "C" int MPI_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                               void* recvbuf, const int recvcounts[], const int displs[],
                               MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(CollectiveOp::kAllgatherv, comm, -1,
                    ri::OneBlockV(sendbuf, sendcount, sendtype, recvcounts, recvtype), request,
                    [&] {
                      return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                              displs, recvtype, comm, request);
                    });
}

extern "C" int MPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                             void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request* request) {
  return ri::Posted(CollectiveOp::kAlltoall, comm, -1,
                    ri::EveryBlock(sendbuf, sendcount, sendtype, recvcount, recvtype), request,
                    [&] {
                      return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                            recvtype, comm, request);
                    });
}

extern "C" int MPI_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                              MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                              const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                              MPI_Request* request) {
  return ri::Posted(CollectiveOp::kAlltoallv, comm, -1,
                    ri::EveryBlockV(sendbuf, sendcounts, sendtype, recvcounts, recvtype), request,
                    [&] {
                      return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                             recvcounts, rdispls, recvtype, comm, request);
                    });
}

extern "C" int MPI_Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                   MPI_Request* request) {
  return ri::Posted(CollectiveOp::kReduceScatter, comm, -1,
                    ri::ReduceScatterV(recvcounts, datatype), request, [&] {
                      return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm,
                                                  request);
                    });
}

extern "C" int MPI_Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                         MPI_Request* request) {
  return ri::Posted(CollectiveOp::kReduceScatterBlock, comm, -1,
                    ri::ReduceScatterBlock(recvcount, datatype), request, [&] {
                      return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op,
                                                        comm, request);
                    });
}

extern "C" int MPI_Igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                           int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                           MPI_Request* request) {
  return ri::Posted(CollectiveOp::kGather, comm, root,
                    ri::GatherBlock(sendbuf, sendcount, sendtype, recvcount, recvtype, root),
                    request, [&] {
                      return PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                          recvtype, root, comm, request);
                    });
}

extern "C" int MPI_Igatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                            void* recvbuf, const int recvcounts[], const int displs[],
                            MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(CollectiveOp::kGatherv, comm, root,
                    ri::GatherBlockV(sendbuf, sendcount, sendtype, recvcounts, recvtype, root),
                    request, [&] {
                      return PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                           displs, recvtype, root, comm, request);
                    });
}

extern "C" int MPI_Iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                            void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                            MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(CollectiveOp::kScatter, comm, root,
                    ri::ScatterBlock(sendcount, sendtype, recvbuf, recvcount, recvtype, root),
                    request, [&] {
                      return PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                           recvtype, root, comm, request);
                    });
}

extern "C" int MPI_Iscatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                             MPI_Datatype sendtype, void* recvbuf, int recvcount,
                             MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(CollectiveOp::kScatterv, comm, root,
                    ri::ScatterBlockV(sendcounts, sendtype, recvbuf, recvcount, recvtype, root),
                    request, [&] {
                      return PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf,
                                            recvcount, recvtype, root, comm, request);
                    });
}

extern "C" int MPI_Iscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(CollectiveOp::kScan, comm, -1, ri::Plain(count, datatype), request, [&] {
    return PMPI_Iscan(sendbuf, recvbuf, count, datatype, op, comm, request);
  });
}

extern "C" int MPI_Iexscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                           MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(CollectiveOp::kExscan, comm, -1, ri::Plain(count, datatype), request, [&] {
    return PMPI_Iexscan(sendbuf, recvbuf, count, datatype, op, comm, request);
  });
}

extern "C" int MPI_Ialltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
                              const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                              const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                              MPI_Request* request) {
  return ri::Posted(CollectiveOp::kAlltoallw, comm, -1,
                    ri::EveryBlockW(sendbuf, sendcounts, sendtypes, recvcounts, recvtypes), request,
                    [&] {
                      return PMPI_Ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                             recvcounts, rdispls, recvtypes, comm, request);
                    });
}

extern "C" int MPI_Ineighbor_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                       MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(CollectiveOp::kNeighborAllgather, comm, -1,
                    ri::NeighborOneBlock(sendcount, sendtype), request, [&] {
                      return PMPI_Ineighbor_allgather(sendbuf, sendcount, sendtype, recvbuf,
                                                      recvcount, recvtype, comm, request);
                    });
}

extern "C" int MPI_Ineighbor_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                        void* recvbuf, const int recvcounts[], const int displs[],
                                        MPI_Datatype recvtype, MPI_Comm comm,
                                        MPI_Request* request) {
  return ri::Posted(CollectiveOp::kNeighborAllgatherv, comm, -1,
                    ri::NeighborOneBlock(sendcount, sendtype), request, [&] {
                      return PMPI_Ineighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf,
                                                       recvcounts, displs, recvtype, comm, request);
                    });
}

extern "C" int MPI_Ineighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                      MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(CollectiveOp::kNeighborAlltoall, comm, -1,
                    ri::NeighborEveryBlock(comm, sendcount, sendtype), request, [&] {
                      return PMPI_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf,
                                                     recvcount, recvtype, comm, request);
                    });
}

extern "C" int MPI_Ineighbor_alltoallv(const void* sendbuf, const int sendcounts[],
                                       const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                       const int recvcounts[], const int rdispls[],
                                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(CollectiveOp::kNeighborAlltoallv, comm, -1,
                    ri::NeighborEveryBlockV(comm, sendcounts, sendtype), request, [&] {
                      return PMPI_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype,
                                                      recvbuf, recvcounts, rdispls, recvtype, comm,
                                                      request);
                    });
}

extern "C" int MPI_Ineighbor_alltoallw(const void* sendbuf, const int sendcounts[],
                                       const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                       void* recvbuf, const int recvcounts[],
                                       const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                       MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(CollectiveOp::kNeighborAlltoallw, comm, -1,
                    ri::NeighborEveryBlockW(comm, sendcounts, sendtypes), request, [&] {
                      return PMPI_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes,
                                                      recvbuf, recvcounts, rdispls, recvtypes, comm,
                                                      request);
                    });
}
