// What every fuzz target checks of a JSON writer's output: that it is JSON (valid UTF-8
// included) and reads back. A failure aborts, which libFuzzer reports with the input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

namespace rankscope::fuzz {

template <typename Json>
void CheckJsonRoundTrip(const Json& value, const char* writer) {
  const std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!nlohmann::json::accept(text)) {
    std::fprintf(stderr, "%s wrote text that is not JSON: %.200s\n", writer, text.c_str());
    std::abort();
  }
}

}  // namespace rankscope::fuzz
