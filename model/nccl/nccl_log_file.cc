#include "model/nccl/nccl_log_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "model/nccl/nccl_log_parser.h"

namespace rankscope {

Result<NcclLog> ParseNcclLogFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Result<NcclLog>::Error("cannot open NCCL log " + path + ": " + std::strerror(errno) +
                                  " (pass the file NCCL_DEBUG_FILE named)");
  }
  NcclLogParser parser;
  // Chunked, the way the agent tails a live file, so big logs need no big buffer.
  char buffer[64 * 1024];
  while (in) {
    in.read(buffer, sizeof(buffer));
    parser.Feed(std::string_view(buffer, static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) {
    return Result<NcclLog>::Error("error reading NCCL log " + path + ": " + std::strerror(errno));
  }
  parser.Finish();
  return parser.log();
}

}  // namespace rankscope
