// The JSON form of a parsed NCCL log, for `rankscope inspect nccl-log --json`. Field names are
// the public contract (comm_id as NCCL prints it, skipped_lines, ...); values NCCL did not print
// are null, never a made-up 0.
#pragma once

#include <nlohmann/json.hpp>

#include "model/nccl/nccl_log.h"

namespace rankscope {

nlohmann::ordered_json NcclLogToJson(const NcclLog& log);

}  // namespace rankscope
