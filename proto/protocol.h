// Constants of the agent <-> coordinator protocol shared by both ends.
#pragma once

#include <cstdint>

#include "core/version.h"

namespace rankscope {

// The protocol version this build speaks (proto/rankscope/v1, ProtocolVersion).
inline constexpr uint32_t kProtocolVersion = 1;
// Metadata key carrying the session secret on every RPC.
inline constexpr char kTokenMetadataKey[] = "x-rankscope-token";

}  // namespace rankscope
