// Offline reading of a NCCL log file (`rankscope inspect nccl-log FILE`): the I/O edge in
// front of the pure NcclLogParser.
#pragma once

#include <string>

#include "core/status.h"
#include "model/nccl/nccl_log.h"

namespace rankscope {

// Reads the file at `path` in chunks and parses it. Errors (file missing or unreadable) name
// the file and the reason; a file that reads but holds no NCCL lines is not an error (the log
// says so: no communicators, skipped_lines > 0). Parse problems stay in NcclLog::errors, whose
// line numbers refer to this file.
Result<NcclLog> ParseNcclLogFile(const std::string& path);

}  // namespace rankscope
