#include "agent/inject/cupti_config.h"

#include <charconv>
#include <string_view>

namespace rankscope::inject {
namespace {

// Parses `name` as an integer in [lo, hi] into *out; a set but bad value leaves *out alone and
// says why in `problems`.
void ReadBounded(EnvLookup lookup, const char* name, long lo, long hi, long* out,
                 std::vector<std::string>* problems) {
  const char* text = lookup(name);
  if (text == nullptr || text[0] == '\0') return;
  std::string_view s(text);
  long value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || value < lo || value > hi) {
    problems->push_back(std::string(name) + "=" + std::string(s) + " is not a whole number in [" +
                        std::to_string(lo) + ", " + std::to_string(hi) + "]; using " +
                        std::to_string(*out));
    return;
  }
  *out = value;
}

}  // namespace

CuptiConfig CuptiConfigFromEnv(EnvLookup lookup) {
  CuptiConfig config;
  if (const char* mode = lookup("RANKSCOPE_CUPTI_MODE"); mode != nullptr && mode[0] != '\0') {
    std::string_view m(mode);
    if (m == "kernels") {
      config.mode = CuptiMode::kKernels;
    } else if (m == "gpu") {
      config.mode = CuptiMode::kGpu;
    } else if (m == "all") {
      config.mode = CuptiMode::kAll;
    } else if (m == "api") {
      config.mode = CuptiMode::kApi;
    } else {
      config.problems.push_back("RANKSCOPE_CUPTI_MODE=" + std::string(m) +
                                " is not one of kernels, gpu, all, api; using all");
    }
  }
  if (const char* path = lookup("RANKSCOPE_CUPTI_PATH"); path != nullptr) {
    config.library_path = path;
  }
  long count = static_cast<long>(config.buffer_count);
  ReadBounded(lookup, "RANKSCOPE_CUPTI_BUFFERS", 2, 64, &count, &config.problems);
  config.buffer_count = static_cast<size_t>(count);
  long kb = static_cast<long>(config.buffer_bytes >> 10);
  ReadBounded(lookup, "RANKSCOPE_CUPTI_BUFFER_KB", 256, 65536, &kb, &config.problems);
  config.buffer_bytes = static_cast<size_t>(kb) << 10;
  long ms = static_cast<long>(config.flush_period / kNsPerMs);
  ReadBounded(lookup, "RANKSCOPE_CUPTI_FLUSH_MS", 10, 60000, &ms, &config.problems);
  config.flush_period = ms * kNsPerMs;
  long pick = config.pick_launch_calls ? 1 : 0;
  ReadBounded(lookup, "RANKSCOPE_CUPTI_PICK_CALLS", 0, 1, &pick, &config.problems);
  config.pick_launch_calls = pick == 1;
  long sync = config.synchronization ? 1 : 0;
  ReadBounded(lookup, "RANKSCOPE_CUPTI_SYNC", 0, 1, &sync, &config.problems);
  config.synchronization = sync == 1;
  long discard = config.discard ? 1 : 0;
  ReadBounded(lookup, "RANKSCOPE_CUPTI_DISCARD", 0, 1, &discard, &config.problems);
  config.discard = discard == 1;
  return config;
}

std::vector<std::string> CuptiLibraryCandidates(const CuptiConfig& config, EnvLookup lookup) {
  if (!config.library_path.empty()) return {config.library_path};
  static constexpr const char* kNames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  std::vector<std::string> candidates(std::begin(kNames), std::end(kNames));
  std::vector<std::string> roots;
  if (const char* home = lookup("CUDA_HOME"); home != nullptr && home[0] != '\0') {
    roots.emplace_back(home);
  }
  roots.emplace_back("/usr/local/cuda");
  for (const std::string& root : roots) {
    for (const char* dir : {"/lib64/", "/extras/CUPTI/lib64/"}) {
      for (const char* name : kNames) candidates.push_back(root + dir + name);
    }
  }
  return candidates;
}

}  // namespace rankscope::inject
