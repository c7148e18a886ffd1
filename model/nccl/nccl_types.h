// NCCL's vocabulary as rankscope names it: operations, data types, reduction operators,
// algorithms and protocols, with the spellings NCCL prints in its logs and the numeric codes
// its public header (nccl.h) and INFO lines use. Shared by the log parser, the kernel-name
// decoder and the bandwidth formulas.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/time.h"

namespace rankscope {

// A NCCL API call. kSendRecv exists only as a kernel family (NCCL fuses point-to-point work
// into one kernel); log lines name kSend and kRecv.
enum class NcclOp : uint8_t {
  kUnknown,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kGather,
  kScatter,
  kSend,
  kRecv,
  kSendRecv,
};

// NCCL's spelling ("AllReduce", "AllToAll", ...); "Unknown" for kUnknown.
std::string_view NcclOpName(NcclOp op);
// Accepts the names NCCL prints in "<Op>: opCount" and tuning lines ("AllReduce", "AlltoAll"
// as 2.28 spells it, "AllToAll", ...). kUnknown for anything else.
NcclOp ParseNcclOp(std::string_view name);
// True for kSend, kRecv and kSendRecv: point-to-point work, which is not called symmetrically
// on every rank and has no tuning line.
bool IsPointToPoint(NcclOp op);

// ncclDataType_t. The numeric values are NCCL's ("datatype 7" in a call line is ncclFloat32,
// unchanged from 2.18 to 2.28); kUnknown is ours.
enum class NcclDataType : int8_t {
  kUnknown = -1,
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
  kFloat8e4m3 = 10,  // NCCL 2.24+
  kFloat8e5m2 = 11,  // NCCL 2.24+
};

// kUnknown unless 0 <= code <= 11.
NcclDataType NcclDataTypeFromCode(int64_t code);
// NCCL's enumerator name ("ncclFloat32"); "unknown" for kUnknown.
std::string_view NcclDataTypeName(NcclDataType type);
// The inverse of NcclDataTypeName: kUnknown for a name it does not give.
NcclDataType ParseNcclDataTypeName(std::string_view name);
// Bytes per element; 0 for kUnknown, so a byte count computed from it reads as "unknown".
Bytes NcclDataTypeSizeBytes(NcclDataType type);

// ncclRedOp_t as passed to the API ("op 0" in a call line). Codes 5 and above are operators the
// application created (ncclRedOpCreatePreMulSum); they read as kUserDefined.
enum class NcclRedOp : int8_t {
  kUnknown = -1,
  kSum = 0,
  kProd = 1,
  kMax = 2,
  kMin = 3,
  kAvg = 4,
  kUserDefined = 5,
};

NcclRedOp NcclRedOpFromCode(int64_t code);
// "sum", "prod", "max", "min", "avg", "user", "unknown".
std::string_view NcclRedOpName(NcclRedOp op);

// NCCL_ALGO_*; the numeric values are NCCL's (2.20-2.23 tuning lines print them as numbers).
enum class NcclAlgo : int8_t {
  kUnknown = -1,
  kTree = 0,
  kRing = 1,
  kCollNetDirect = 2,
  kCollNetChain = 3,
  kNvls = 4,
  kNvlsTree = 5,
  kPat = 6,  // NCCL 2.23+
};

// Accepts NCCL's upper-case names ("RING", "COLLNET_DIRECT", "NVLS_TREE", "PAT") and the
// numeric codes older tuning lines print ("1"). kUnknown otherwise.
NcclAlgo ParseNcclAlgo(std::string_view text);
// NCCL's upper-case name; "UNKNOWN" for kUnknown.
std::string_view NcclAlgoName(NcclAlgo algo);

// NCCL_PROTO_*; numeric values are NCCL's.
enum class NcclProto : int8_t {
  kUnknown = -1,
  kLL = 0,
  kLL128 = 1,
  kSimple = 2,
};

// Accepts "LL", "LL128", "SIMPLE" and the numeric codes "0".."2". kUnknown otherwise.
NcclProto ParseNcclProto(std::string_view text);
// "LL", "LL128", "SIMPLE"; "UNKNOWN" for kUnknown.
std::string_view NcclProtoName(NcclProto proto);

}  // namespace rankscope
