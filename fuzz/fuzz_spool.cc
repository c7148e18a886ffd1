// An agent's spool (proto/spool.h) read back and rebuilt into a session (coordinator/ingest.h),
// as `rankscope report --spools` does with files left on nodes: cut, corrupt, or not spools.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "coordinator/ingest.h"
#include "fuzz/fuzz_util.h"
#include "proto/spool.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = rankscope::fuzz::InputAsFile(data, size, "spool");
  if (path.empty()) return 0;
  rankscope::Result<rankscope::SpoolContents> spool = rankscope::ReadSpool(path);
  std::remove(path.c_str());
  if (spool.ok()) (void)rankscope::SessionFromSpools({spool.value()}, {path});
  return 0;
}
