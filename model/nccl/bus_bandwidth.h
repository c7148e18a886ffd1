// Bandwidth of a collective the way nccl-tests reports it, so rankscope's numbers can be put
// next to an nccl-tests run. algbw = size / time. busbw = algbw * factor, where the factor
// turns algbw into the rate each link of a ring must sustain, comparable across ops and rank
// counts: allreduce 2(n-1)/n; allgather, reducescatter, alltoall (and gather/scatter)
// (n-1)/n; broadcast, reduce, send/recv 1.
//
// nccl-tests' "size" is not always the count NCCL's API takes: for allgather it is the whole
// receive buffer, for reducescatter the whole send buffer, for alltoall the whole send buffer
// (NCCL's count is per rank or per peer there). NcclTestsSizeBytes converts.
#pragma once

#include "core/time.h"
#include "model/nccl/nccl_types.h"

namespace rankscope {

// nccl-tests' bus bandwidth factor for `op` on `nranks` ranks; 0 for nranks < 1 or kUnknown.
double BusBandwidthFactor(NcclOp op, int nranks);

// nccl-tests' "size" for a call whose own buffer (NcclCollective::bytes: count * element size)
// is `call_bytes`: call_bytes * nranks for AllGather, ReduceScatter, AllToAll, Gather and
// Scatter; call_bytes otherwise.
Bytes NcclTestsSizeBytes(NcclOp op, Bytes call_bytes, int nranks);

// size / duration in GB/s (10^9 bytes per second, as nccl-tests prints). 0 when duration <= 0.
double AlgBandwidthGBps(Bytes size, DurationNs duration);

// AlgBandwidthGBps(size, duration) * BusBandwidthFactor(op, nranks); `size` is nccl-tests'
// size (see NcclTestsSizeBytes).
double BusBandwidthGBps(NcclOp op, Bytes size, DurationNs duration, int nranks);

}  // namespace rankscope
