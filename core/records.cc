#include "core/records.h"

#include <array>

namespace rankscope {

std::string_view CollectiveOpName(CollectiveOp op) {
  static constexpr std::array<std::string_view, kMaxCollectiveOp + 1> kNames = {
      "unknown",
      "allreduce",
      "reduce",
      "bcast",
      "barrier",
      "allgather",
      "allgatherv",
      "alltoall",
      "alltoallv",
      "reduce_scatter",
      "reduce_scatter_block",
      "gather",
      "gatherv",
      "scatter",
      "scatterv",
      "scan",
      "exscan",
      "alltoallw",
      "neighbor_allgather",
      "neighbor_allgatherv",
      "neighbor_alltoall",
      "neighbor_alltoallv",
      "neighbor_alltoallw"};
  auto index = static_cast<size_t>(op);
  return index < kNames.size() ? kNames[index] : kNames[0];
}

WaitPattern WaitPatternOf(CollectiveOp op) {
  // Scans, alltoallw and the neighbourhood collectives are kAllToAll through the default: a
  // rank may wait for any member (a scan for its predecessors, a neighbourhood op for its
  // neighbours), and the last arrival is the best single blame.
  switch (op) {
    case CollectiveOp::kBcast:
    case CollectiveOp::kScatter:
    case CollectiveOp::kScatterv:
      return WaitPattern::kRootToAll;
    case CollectiveOp::kReduce:
    case CollectiveOp::kGather:
    case CollectiveOp::kGatherv:
      return WaitPattern::kAllToRoot;
    default:
      return WaitPattern::kAllToAll;
  }
}

std::string_view P2PKindName(P2PKind kind) {
  switch (kind) {
    case P2PKind::kSend:
      return "send";
    case P2PKind::kRecv:
      return "recv";
    case P2PKind::kIsend:
      return "isend";
    case P2PKind::kIrecv:
      return "irecv";
    case P2PKind::kWait:
      return "wait";
    case P2PKind::kSsend:
      return "ssend";
    case P2PKind::kBsend:
      return "bsend";
    case P2PKind::kIssend:
      return "issend";
    case P2PKind::kIbsend:
      return "ibsend";
    case P2PKind::kProbe:
      return "probe";
  }
  return "unknown";
}

std::string_view MpiCallName(MpiCall call) {
  static constexpr std::array<std::string_view, kMaxMpiCall + 1> kNames = {
      "MPI_unknown",
      "MPI_File_read",
      "MPI_File_read_at",
      "MPI_File_read_all",
      "MPI_File_read_at_all",
      "MPI_File_write",
      "MPI_File_write_at",
      "MPI_File_write_all",
      "MPI_File_write_at_all",
      "MPI_Win_fence",
      "MPI_Win_lock",
      "MPI_Win_unlock",
      "MPI_Win_lock_all",
      "MPI_Win_unlock_all",
      "MPI_Win_flush",
      "MPI_Win_flush_all",
      "MPI_Win_flush_local",
      "MPI_Win_flush_local_all",
      "MPI_Win_start",
      "MPI_Win_complete",
      "MPI_Win_post",
      "MPI_Win_wait",
      "MPI_Start",
      "MPI_Startall",
      "MPI_Init"};
  auto index = static_cast<size_t>(call);
  return index < kNames.size() ? kNames[index] : kNames[0];
}

}  // namespace rankscope
