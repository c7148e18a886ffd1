#include "launchers/live_status.h"

#include <cstdio>

namespace rankscope {
namespace {

// 1234567 -> "1,234,567".
std::string Grouped(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string Rate(double per_second) {
  char buf[32];
  if (per_second >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f M", per_second / 1e6);
  } else if (per_second >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f k", per_second / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", per_second);
  }
  return buf;
}

}  // namespace

std::string LiveStatusLine(const LiveProgress& now, const LiveProgress& before, DurationNs interval,
                           DurationNs elapsed, bool capturing) {
  std::string line =
      "rankscope: " + std::to_string(now.ranks) + (now.ranks == 1 ? " rank" : " ranks");
  if (now.finished > 0) line += " (" + std::to_string(now.finished) + " done)";
  if (now.steps > 0) line += ", step " + Grouped(now.steps);
  if (!capturing) {
    line += ", dormant (rankscope capture starts it)";
  } else if (interval > 0) {
    const uint64_t got = now.records >= before.records ? now.records - before.records : 0;
    line +=
        ", " + Rate(static_cast<double>(got) * 1e9 / static_cast<double>(interval)) + " records/s";
  }
  if (now.summed > 0) {
    line += ", " + std::to_string(now.summed) + (now.summed == 1 ? " rank sends" : " ranks send") +
            " GPU kernels summed";
  }
  if (now.dropped > 0) line += ", " + Grouped(now.dropped) + " records dropped";
  line += ", " + std::to_string(elapsed / kNsPerSec) + " s";
  return line;
}

}  // namespace rankscope
