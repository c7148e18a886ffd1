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
      "scatterv"};
  auto index = static_cast<size_t>(op);
  return index < kNames.size() ? kNames[index] : kNames[0];
}

WaitPattern WaitPatternOf(CollectiveOp op) {
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
  }
  return "unknown";
}

}  // namespace rankscope
