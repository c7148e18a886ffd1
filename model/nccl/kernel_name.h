// Decodes the names of NCCL's GPU kernels as CUPTI reports them, so a kernel record can be
// recognised as NCCL work and joined with the call that launched it.
//
// Which protocol ran is NOT reliably in the name. NCCL compiles a specialised kernel for only
// some (op, redop, type, algo, proto) combinations, one per op and type with the LL protocol
// for most, and runs every other combination through that kernel or through
// ncclDevKernel_Generic, choosing the real algorithm/protocol per work item at run time. The
// 2xH200 fixture shows it: the kernel is ncclDevKernel_AllReduce_Sum_f32_RING_LL while the
// tuning line (NcclCollective::algo/proto) says RING/SIMPLE. The log's tuning line is
// authoritative; the name only tells the op and, usually, the type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/nccl/nccl_types.h"

namespace rankscope {

enum class NcclKernelFamily : uint8_t {
  kDev,        // ncclDevKernel_<Op>[_<RedOp>_<type>]_<ALGO>_<PROTO> (2.19+)
  kLegacy,     // ncclKernel_<Op>_<ALGO>_<PROTO>_<RedOp>_<c type> (up to 2.18)
  kSymmetric,  // ncclSymkDevKernel_<Op>_<algo>[_<red>_<type>] (2.28), ncclSymDevKernel_ (2.27)
  kSendRecv,   // ncclDevKernel_SendRecv, legacy ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t
  kGeneric,    // ncclDevKernel_Generic: runs whatever work it is given
};

// Stable lower-case names: "dev", "legacy", "symk", "sendrecv", "generic".
std::string_view NcclKernelFamilyName(NcclKernelFamily family);

// The device-side reduction a kernel is compiled for. NCCL maps API operators onto these:
// max and min share MinMax (2.19+), avg becomes SumPostDiv (integers) or PreMulSum (floats).
enum class NcclKernelRedOp : uint8_t {
  kNone,  // the kernel does not reduce (AllGather, Broadcast, SendRecv, Generic)
  kSum,
  kProd,
  kMin,  // legacy names only
  kMax,  // legacy names only
  kMinMax,
  kPreMulSum,
  kSumPostDiv,
  kUnknown,
};

std::string_view NcclKernelRedOpName(NcclKernelRedOp op);

struct NcclKernel {
  NcclKernelFamily family = NcclKernelFamily::kGeneric;
  std::string name;  // the bare function name, e.g. "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
  NcclOp op = NcclOp::kUnknown;  // kUnknown for Generic
  NcclKernelRedOp redop = NcclKernelRedOp::kNone;
  NcclDataType datatype = NcclDataType::kUnknown;
  // As encoded in the name; see the file comment for why proto may not be what ran.
  NcclAlgo algo = NcclAlgo::kUnknown;
  NcclProto proto = NcclProto::kUnknown;
  std::string symmetric_algo;  // symmetric kernels' own algorithm names: "AGxLL_R", "LDMC"
};

// Decodes a kernel name as CUPTI gives it: mangled ("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL
// P24ncclDevKernelArgsStorageILm4096EE", the length prefix is honoured), demangled with its
// parameter list ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"), or bare. Returns
// nullopt for anything that is not a NCCL kernel; parts of a NCCL name it cannot read stay
// kUnknown rather than failing the whole name.
std::optional<NcclKernel> DecodeNcclKernel(std::string_view cupti_name);

}  // namespace rankscope
