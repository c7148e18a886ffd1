// What every fuzz target checks of a JSON writer's output: that it is JSON (valid UTF-8
// included) and reads back. A failure aborts, which libFuzzer reports with the input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

namespace rankscope::fuzz {

// That a JSON writer's output is JSON (valid UTF-8 included) and reads back. A failure aborts,
// which libFuzzer reports with the input.
template <typename Json>
void CheckJsonRoundTrip(const Json& value, const char* writer) {
  const std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!nlohmann::json::accept(text)) {
    std::fprintf(stderr, "%s wrote text that is not JSON: %.200s\n", writer, text.c_str());
    std::abort();
  }
}

// Writes the input to TMPDIR/rankscope-fuzz-PID.SUFFIX (one file per process, rewritten for
// each input) for loaders that read files; "" when it cannot. The caller removes it.
inline std::string InputAsFile(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp");
  }();
  const std::string path =
      dir + "/rankscope-fuzz-" + std::to_string(getpid()) + "." + std::string(suffix);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return "";
  const bool ok = std::fwrite(data, 1, size, f) == size;
  std::fclose(f);
  return ok ? path : "";
}

}  // namespace rankscope::fuzz
