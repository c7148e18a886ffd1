// Constants of the agent <-> coordinator protocol shared by both ends.
#pragma once

#include <cstdint>

#include "core/version.h"

namespace rankscope {

// The protocol version this build speaks (proto/rankscope/v1, ProtocolVersion).
// 2: every call streams its requests (read only once the token is checked); uploads in chunks,
// an NCCL summary in parts. 3: NCCL's operations, data types, algorithms, protocols and
// transports as enums, the net device a field (model/nccl/rank_nccl.h).
inline constexpr uint32_t kProtocolVersion = 3;
// Metadata key carrying the session secret on every RPC.
inline constexpr char kTokenMetadataKey[] = "x-rankscope-token";
// The records of compute kernels and their launch calls a session holds raw by default, all ranks
// together (RegisterResponse.raw_compute_records gives each agent its share).
inline constexpr uint64_t kDefaultRawComputeRecords = 400'000;

}  // namespace rankscope
