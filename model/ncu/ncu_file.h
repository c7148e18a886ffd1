// Offline reading of an Nsight Compute raw-page CSV file (`rankscope inspect ncu FILE`): the
// I/O edge in front of the pure ParseNcuRawCsv.
#pragma once

#include <string>

#include "core/status.h"
#include "model/ncu/ncu_report.h"

namespace rankscope {

// The file at `path` as text (the raw page's CSV), or an error naming it: missing, unreadable.
Result<std::string> ReadNcuRawCsvText(const std::string& path);

// Reads the file at `path` and parses it. Errors name the file: missing, unreadable, empty, or
// not a raw page.
Result<NcuReport> ParseNcuRawCsvFile(const std::string& path);

}  // namespace rankscope
