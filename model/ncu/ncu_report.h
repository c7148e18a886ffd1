// Nsight Compute's raw page (`ncu --import R.ncu-rep --csv --page raw`): row 1 the metric names,
// row 2 their units, then one row per profiled kernel launch. Pure: text in, launches out, every
// number in base units (bytes, seconds, hertz, per second) whatever prefix ncu printed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace rankscope {

// One profiled launch: its identity and every metric of its row.
struct NcuLaunch {
  int id = -1;         // ncu's "ID" column
  std::string kernel;  // "Kernel Name" (demangled, as ncu prints it)
  std::string device;  // device__attribute_display_name, e.g. "NVIDIA H200"
  int csv_line = 0;    // the line of the file its row starts on, for messages
  std::unordered_map<std::string, double> numbers;     // metric -> value in base units
  std::unordered_map<std::string, std::string> texts;  // metric -> text, for non-numbers

  // The metric's value in base units, or nullopt when the row lacks it or it is not a number.
  std::optional<double> Number(const std::string& metric) const;
};

struct NcuReport {
  std::vector<NcuLaunch> launches;
  // What could not be read, each naming the line: rows cut short, values that do not parse. A
  // report with problems keeps the launches that read whole.
  std::vector<std::string> problems;
  bool partial = false;  // a row was cut short (a file still being written or truncated)
};

// Parses the raw page's CSV. `source` names the input in messages. Errors: no header and unit
// rows, or a header without the columns every raw page has ("ID", "Kernel Name"), which is the
// sign of another page (--page details) or another tool's CSV.
Result<NcuReport> ParseNcuRawCsv(std::string_view text, std::string_view source);

// The factor that takes a value printed in `unit` to base units: "Kbyte/cycle" 1e3, "us" 1e-6,
// "Ghz" 1e9, "Tbyte/s" 1e12, "%" 1. Units without a known prefix scale by 1.
double NcuUnitScale(std::string_view unit);

}  // namespace rankscope
