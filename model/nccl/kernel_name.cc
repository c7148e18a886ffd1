#include "model/nccl/kernel_name.h"

#include <array>
#include <cctype>
#include <utility>
#include <vector>

#include "model/nccl/text.h"

namespace rankscope {
namespace {

constexpr std::string_view kDevPrefix = "ncclDevKernel_";
constexpr std::string_view kLegacyPrefix = "ncclKernel_";
constexpr std::array<std::string_view, 2> kSymmetricPrefixes = {"ncclSymkDevKernel_",
                                                                "ncclSymDevKernel_"};

// Short names (2.19+ and symmetric kernels) and C++ types (legacy) for NCCL's data types.
constexpr std::array<std::pair<std::string_view, NcclDataType>, 24> kTypeNames = {{
    {"i8", NcclDataType::kInt8},
    {"u8", NcclDataType::kUint8},
    {"i32", NcclDataType::kInt32},
    {"u32", NcclDataType::kUint32},
    {"i64", NcclDataType::kInt64},
    {"u64", NcclDataType::kUint64},
    {"f16", NcclDataType::kFloat16},
    {"f32", NcclDataType::kFloat32},
    {"f64", NcclDataType::kFloat64},
    {"bf16", NcclDataType::kBfloat16},
    {"f8e4m3", NcclDataType::kFloat8e4m3},
    {"f8e5m2", NcclDataType::kFloat8e5m2},
    {"int8_t", NcclDataType::kInt8},
    {"uint8_t", NcclDataType::kUint8},
    {"int32_t", NcclDataType::kInt32},
    {"uint32_t", NcclDataType::kUint32},
    {"int64_t", NcclDataType::kInt64},
    {"uint64_t", NcclDataType::kUint64},
    {"half", NcclDataType::kFloat16},
    {"float", NcclDataType::kFloat32},
    {"double", NcclDataType::kFloat64},
    {"__nv_bfloat16", NcclDataType::kBfloat16},
    {"__nv_fp8_e4m3", NcclDataType::kFloat8e4m3},
    {"__nv_fp8_e5m2", NcclDataType::kFloat8e5m2},
}};

constexpr std::array<std::pair<std::string_view, NcclKernelRedOp>, 8> kRedOpNames = {{
    {"Sum", NcclKernelRedOp::kSum},
    {"sum", NcclKernelRedOp::kSum},  // symmetric kernels spell it in lower case
    {"Prod", NcclKernelRedOp::kProd},
    {"Min", NcclKernelRedOp::kMin},
    {"Max", NcclKernelRedOp::kMax},
    {"MinMax", NcclKernelRedOp::kMinMax},
    {"PreMulSum", NcclKernelRedOp::kPreMulSum},
    {"SumPostDiv", NcclKernelRedOp::kSumPostDiv},
}};

NcclDataType TypeFromName(std::string_view name) {
  for (const auto& [text, type] : kTypeNames) {
    if (text == name) return type;
  }
  return NcclDataType::kUnknown;
}

std::optional<NcclKernelRedOp> RedOpFromName(std::string_view name) {
  for (const auto& [text, op] : kRedOpNames) {
    if (text == name) return op;
  }
  return std::nullopt;
}

std::string Join(const std::vector<std::string_view>& parts, size_t begin, size_t end) {
  std::string joined;
  for (size_t i = begin; i < end && i < parts.size(); ++i) {
    if (i > begin) joined += '_';
    joined += parts[i];
  }
  return joined;
}

// The function's own name: the length-prefixed identifier of an Itanium-mangled name
// ("_Z<len><name><params>"), or a demangled/bare name up to its parameter list.
std::optional<std::string_view> FunctionName(std::string_view text) {
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  if (text.substr(0, 2) == "_Z") {
    text.remove_prefix(2);
    size_t digits = 0;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
      ++digits;
    }
    auto length = ParseUint(text.substr(0, digits));
    if (!length || *length == 0 || *length > text.size() - digits) return std::nullopt;
    return text.substr(digits, *length);
  }
  if (text.substr(0, 5) == "void ") text.remove_prefix(5);
  size_t end = text.find_first_of("(< \t");
  return text.substr(0, end);
}

// ncclDevKernel_AllReduce_Sum_f32_RING_LL, ncclDevKernel_AllGather_RING_LL,
// ncclDevKernel_Reduce_Sum_f32_COLLNET_DIRECT_SIMPLE (algorithm names contain '_').
void DecodeDev(std::string_view rest, NcclKernel* k) {
  if (rest == "Generic" || rest.substr(0, 8) == "Generic_") {
    k->family = NcclKernelFamily::kGeneric;
    return;
  }
  auto parts = SplitOn(rest, '_');
  k->op = ParseNcclOp(parts[0]);
  if (k->op == NcclOp::kSendRecv) {
    k->family = NcclKernelFamily::kSendRecv;
    return;
  }
  size_t algo_begin = 1;
  if (parts.size() >= 3) {
    if (auto redop = RedOpFromName(parts[1])) {
      k->redop = *redop;
      k->datatype = TypeFromName(parts[2]);
      algo_begin = 3;
    }
  }
  if (parts.size() >= algo_begin + 2) {
    k->algo = ParseNcclAlgo(Join(parts, algo_begin, parts.size() - 1));
    k->proto = ParseNcclProto(parts.back());
  }
}

// ncclKernel_AllReduce_RING_LL_Sum_float, ncclKernel_AllGather_NVLS_TREE_LL_Sum_int8_t,
// ncclKernel_Reduce_RING_LL_Sum___nv_bfloat16 (the C type keeps its own underscores).
void DecodeLegacy(std::string_view rest, NcclKernel* k) {
  auto parts = SplitOn(rest, '_');
  k->op = ParseNcclOp(parts[0]);
  if (k->op == NcclOp::kSendRecv) k->family = NcclKernelFamily::kSendRecv;
  for (size_t p = 2; p + 1 < parts.size(); ++p) {
    NcclProto proto = ParseNcclProto(parts[p]);
    if (proto == NcclProto::kUnknown) continue;
    k->algo = ParseNcclAlgo(Join(parts, 1, p));
    k->proto = proto;
    k->redop = RedOpFromName(parts[p + 1]).value_or(NcclKernelRedOp::kUnknown);
    k->datatype = TypeFromName(Join(parts, p + 2, parts.size()));
    break;
  }
  // Copy-only operations are compiled with a dummy Sum over int8_t.
  if (k->op == NcclOp::kAllGather || k->op == NcclOp::kBroadcast || k->op == NcclOp::kSendRecv) {
    k->redop = NcclKernelRedOp::kNone;
    k->datatype = NcclDataType::kUnknown;
  }
}

// ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32, ncclSymkDevKernel_AllGather_LLMC.
void DecodeSymmetric(std::string_view rest, NcclKernel* k) {
  auto parts = SplitOn(rest, '_');
  k->op = ParseNcclOp(parts[0]);
  size_t algo_end = parts.size();
  if (parts.size() >= 4) {
    auto redop = RedOpFromName(parts[parts.size() - 2]);
    NcclDataType type = TypeFromName(parts.back());
    if (redop && type != NcclDataType::kUnknown) {
      k->redop = *redop;
      k->datatype = type;
      algo_end -= 2;
    }
  }
  k->symmetric_algo = Join(parts, 1, algo_end);
}

}  // namespace

std::string_view NcclKernelFamilyName(NcclKernelFamily family) {
  switch (family) {
    case NcclKernelFamily::kDev:
      return "dev";
    case NcclKernelFamily::kLegacy:
      return "legacy";
    case NcclKernelFamily::kSymmetric:
      return "symk";
    case NcclKernelFamily::kSendRecv:
      return "sendrecv";
    case NcclKernelFamily::kGeneric:
      return "generic";
  }
  return "unknown";
}

std::string_view NcclKernelRedOpName(NcclKernelRedOp op) {
  switch (op) {
    case NcclKernelRedOp::kNone:
      return "none";
    case NcclKernelRedOp::kSum:
      return "Sum";
    case NcclKernelRedOp::kProd:
      return "Prod";
    case NcclKernelRedOp::kMin:
      return "Min";
    case NcclKernelRedOp::kMax:
      return "Max";
    case NcclKernelRedOp::kMinMax:
      return "MinMax";
    case NcclKernelRedOp::kPreMulSum:
      return "PreMulSum";
    case NcclKernelRedOp::kSumPostDiv:
      return "SumPostDiv";
    case NcclKernelRedOp::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<NcclKernel> DecodeNcclKernel(std::string_view cupti_name) {
  auto name = FunctionName(cupti_name);
  if (!name) return std::nullopt;
  NcclKernel kernel;
  kernel.name = std::string(*name);
  std::string_view rest;
  if (name->substr(0, kDevPrefix.size()) == kDevPrefix) {
    kernel.family = NcclKernelFamily::kDev;
    rest = name->substr(kDevPrefix.size());
    if (rest.empty()) return std::nullopt;
    DecodeDev(rest, &kernel);
    return kernel;
  }
  if (name->substr(0, kLegacyPrefix.size()) == kLegacyPrefix) {
    kernel.family = NcclKernelFamily::kLegacy;
    rest = name->substr(kLegacyPrefix.size());
    if (rest.empty()) return std::nullopt;
    DecodeLegacy(rest, &kernel);
    return kernel;
  }
  for (std::string_view prefix : kSymmetricPrefixes) {
    if (name->substr(0, prefix.size()) != prefix) continue;
    kernel.family = NcclKernelFamily::kSymmetric;
    rest = name->substr(prefix.size());
    if (rest.empty()) return std::nullopt;
    DecodeSymmetric(rest, &kernel);
    return kernel;
  }
  return std::nullopt;
}

}  // namespace rankscope
