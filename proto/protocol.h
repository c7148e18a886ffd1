// Constants of the agent <-> coordinator protocol shared by both ends.
#pragma once

#include <cstdint>

#include "core/version.h"

namespace rankscope {

// The protocol version this build speaks (proto/rankscope/v1, ProtocolVersion).
// 2: every call streams its requests (read only once the token is checked); uploads in chunks,
// an NCCL summary in parts.
inline constexpr uint32_t kProtocolVersion = 2;
// Metadata key carrying the session secret on every RPC.
inline constexpr char kTokenMetadataKey[] = "x-rankscope-token";

}  // namespace rankscope
