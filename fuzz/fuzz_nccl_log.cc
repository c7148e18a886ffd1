// The NCCL debug log parser (model/nccl) and its JSON writer (`inspect nccl-log --json`), on any
// bytes: a log is the job's output, cut anywhere and in any encoding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "model/nccl/nccl_log_json.h"
#include "model/nccl/nccl_log_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const rankscope::NcclLog log =
      rankscope::ParseNcclLog(std::string_view(reinterpret_cast<const char*>(data), size));
  rankscope::fuzz::CheckJsonRoundTrip(rankscope::NcclLogToJson(log), "NcclLogToJson");
  return 0;
}
