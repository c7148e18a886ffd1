// The session.sqlite loader (coordinator/report/session_store.h): `rankscope report` opens
// folders users copy around, truncate and edit. The bytes become a file; loading it must give a
// session or an error naming the file, never a crash or an allocation the file's numbers ask
// for.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "coordinator/report/session_store.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = rankscope::fuzz::InputAsFile(data, size, "sqlite");
  if (path.empty()) return 0;
  (void)rankscope::LoadSession(path);
  (void)rankscope::LoadFindings(path);
  std::remove(path.c_str());
  return 0;
}
