#include "model/nccl/bus_bandwidth.h"

namespace rankscope {

double BusBandwidthFactor(NcclOp op, int nranks) {
  if (nranks < 1) return 0.0;
  const double n = static_cast<double>(nranks);
  switch (op) {
    case NcclOp::kAllReduce:
      return 2.0 * (n - 1.0) / n;
    case NcclOp::kAllGather:
    case NcclOp::kReduceScatter:
    case NcclOp::kAllToAll:
    case NcclOp::kGather:
    case NcclOp::kScatter:
      return (n - 1.0) / n;
    case NcclOp::kBroadcast:
    case NcclOp::kReduce:
    case NcclOp::kSend:
    case NcclOp::kRecv:
    case NcclOp::kSendRecv:
      return 1.0;
    case NcclOp::kUnknown:
      break;
  }
  return 0.0;
}

Bytes NcclTestsSizeBytes(NcclOp op, Bytes call_bytes, int nranks) {
  switch (op) {
    case NcclOp::kAllGather:
    case NcclOp::kReduceScatter:
    case NcclOp::kAllToAll:
    case NcclOp::kGather:
    case NcclOp::kScatter:
      return call_bytes * nranks;
    default:
      return call_bytes;
  }
}

double AlgBandwidthGBps(Bytes size, DurationNs duration) {
  if (duration <= 0) return 0.0;
  // bytes per nanosecond is GB/s.
  return static_cast<double>(size) / static_cast<double>(duration);
}

double BusBandwidthGBps(NcclOp op, Bytes size, DurationNs duration, int nranks) {
  return AlgBandwidthGBps(size, duration) * BusBandwidthFactor(op, nranks);
}

}  // namespace rankscope
