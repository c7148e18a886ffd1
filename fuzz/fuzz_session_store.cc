// The session.sqlite loader (coordinator/report/session_store.h): `rankscope report` opens
// folders users copy around, truncate and edit. The bytes become a file; loading it must give a
// session or an error naming the file, never a crash or an allocation the file's numbers ask
// for.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "coordinator/report/session_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp") + "/rankscope-fuzz-" +
           std::to_string(getpid()) + ".sqlite";
  }();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  (void)rankscope::LoadSession(path);
  (void)rankscope::LoadFindings(path);
  std::remove(path.c_str());
  return 0;
}
