#include "core/format.h"

#include <cxxabi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace rankscope {

std::string FormatDouble(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

std::string FormatDuration(DurationNs d) {
  if (d < 0) return "-" + FormatDuration(d == INT64_MIN ? INT64_MAX : -d);
  if (d < kNsPerUs) return std::to_string(d) + " ns";
  if (d < kNsPerMs) return FormatDouble("%.1f us", NsToUs(d));
  if (d < kNsPerSec) return FormatDouble("%.2f ms", NsToMs(d));
  if (d < 120 * kNsPerSec) return FormatDouble("%.2f s", static_cast<double>(d) / 1e9);
  int64_t seconds = d / kNsPerSec;
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%lldm %02llds", static_cast<long long>(seconds / 60),
                static_cast<long long>(seconds % 60));
  return buffer;
}

std::string FormatHex(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "0x%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

std::string FormatBytes(Bytes b) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int unit = 0;
  while ((v >= 1024 || v <= -1024) && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), unit == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[unit]);
  return buf;
}

std::string Demangle(const std::string& symbol) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && out != nullptr ? std::string(out.get()) : symbol;
}

std::string HtmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace rankscope
