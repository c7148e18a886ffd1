#include "model/nccl/nccl_types.h"

#include <array>
#include <utility>

#include "model/nccl/text.h"

namespace rankscope {
namespace {

constexpr std::array<std::pair<NcclOp, std::string_view>, 11> kOpNames = {{
    {NcclOp::kAllReduce, "AllReduce"},
    {NcclOp::kAllGather, "AllGather"},
    {NcclOp::kReduceScatter, "ReduceScatter"},
    {NcclOp::kBroadcast, "Broadcast"},
    {NcclOp::kReduce, "Reduce"},
    {NcclOp::kAllToAll, "AllToAll"},
    {NcclOp::kGather, "Gather"},
    {NcclOp::kScatter, "Scatter"},
    {NcclOp::kSend, "Send"},
    {NcclOp::kRecv, "Recv"},
    {NcclOp::kSendRecv, "SendRecv"},
}};

constexpr std::array<std::string_view, 12> kDataTypeNames = {
    "ncclInt8",    "ncclUint8",   "ncclInt32",   "ncclUint32",   "ncclInt64",      "ncclUint64",
    "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2",
};
constexpr std::array<Bytes, 12> kDataTypeSizes = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

constexpr std::array<std::string_view, 7> kAlgoNames = {
    "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT",
};
constexpr std::array<std::string_view, 3> kProtoNames = {"LL", "LL128", "SIMPLE"};

}  // namespace

std::string_view NcclOpName(NcclOp op) {
  for (const auto& [value, name] : kOpNames) {
    if (value == op) return name;
  }
  return "Unknown";
}

NcclOp ParseNcclOp(std::string_view name) {
  // NCCL 2.28 spells the all-to-all function "AlltoAll"; accept both spellings.
  if (name == "AlltoAll") return NcclOp::kAllToAll;
  for (const auto& [value, op_name] : kOpNames) {
    if (op_name == name) return value;
  }
  return NcclOp::kUnknown;
}

bool IsPointToPoint(NcclOp op) {
  return op == NcclOp::kSend || op == NcclOp::kRecv || op == NcclOp::kSendRecv;
}

NcclDataType NcclDataTypeFromCode(int64_t code) {
  if (code < 0 || code >= static_cast<int64_t>(kDataTypeNames.size())) {
    return NcclDataType::kUnknown;
  }
  return static_cast<NcclDataType>(code);
}

std::string_view NcclDataTypeName(NcclDataType type) {
  if (type == NcclDataType::kUnknown) return "unknown";
  return kDataTypeNames[static_cast<size_t>(type)];
}

NcclDataType ParseNcclDataTypeName(std::string_view name) {
  for (size_t i = 0; i < kDataTypeNames.size(); ++i) {
    if (kDataTypeNames[i] == name) return static_cast<NcclDataType>(i);
  }
  return NcclDataType::kUnknown;
}

Bytes NcclDataTypeSizeBytes(NcclDataType type) {
  if (type == NcclDataType::kUnknown) return 0;
  return kDataTypeSizes[static_cast<size_t>(type)];
}

NcclRedOp NcclRedOpFromCode(int64_t code) {
  if (code < 0) return NcclRedOp::kUnknown;
  if (code >= 5) return NcclRedOp::kUserDefined;
  return static_cast<NcclRedOp>(code);
}

std::string_view NcclRedOpName(NcclRedOp op) {
  switch (op) {
    case NcclRedOp::kSum:
      return "sum";
    case NcclRedOp::kProd:
      return "prod";
    case NcclRedOp::kMax:
      return "max";
    case NcclRedOp::kMin:
      return "min";
    case NcclRedOp::kAvg:
      return "avg";
    case NcclRedOp::kUserDefined:
      return "user";
    case NcclRedOp::kUnknown:
      break;
  }
  return "unknown";
}

NcclAlgo ParseNcclAlgo(std::string_view text) {
  for (size_t i = 0; i < kAlgoNames.size(); ++i) {
    if (kAlgoNames[i] == text) return static_cast<NcclAlgo>(i);
  }
  if (auto code = ParseInt(text); code && *code >= 0 && *code < std::ssize(kAlgoNames)) {
    return static_cast<NcclAlgo>(*code);
  }
  return NcclAlgo::kUnknown;
}

std::string_view NcclAlgoName(NcclAlgo algo) {
  if (algo == NcclAlgo::kUnknown) return "UNKNOWN";
  return kAlgoNames[static_cast<size_t>(algo)];
}

NcclProto ParseNcclProto(std::string_view text) {
  for (size_t i = 0; i < kProtoNames.size(); ++i) {
    if (kProtoNames[i] == text) return static_cast<NcclProto>(i);
  }
  if (auto code = ParseInt(text); code && *code >= 0 && *code < std::ssize(kProtoNames)) {
    return static_cast<NcclProto>(*code);
  }
  return NcclProto::kUnknown;
}

std::string_view NcclProtoName(NcclProto proto) {
  if (proto == NcclProto::kUnknown) return "UNKNOWN";
  return kProtoNames[static_cast<size_t>(proto)];
}

}  // namespace rankscope
