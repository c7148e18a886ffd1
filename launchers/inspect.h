// `rankscope inspect nccl-log FILE... [--json]`, `rankscope inspect topo FILE [--json]` and
// `rankscope inspect ncu FILE... [--json]`: offline views of NCCL debug logs, topology dumps and
// Nsight Compute reports for people who already have them.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace rankscope {

// Prints to stdout; errors (naming the file) to stderr. Returns the process exit code: 0, or 1
// if any file could not be read or parsed.
int InspectNcclLogs(const std::vector<std::string>& files, bool json);
int InspectTopology(const std::string& file, bool json);
// `rankscope inspect ncu FILE... [--json]`: per kernel launch of Nsight Compute raw-page CSVs (or
// .ncu-rep files, through ncu on PATH): roofline, verdict, occupancy, warp stalls and fixes.
// With `html_path`, also writes there a self-contained page with the roofline chart and each
// kernel's stall bars.
int InspectNcu(const std::vector<std::string>& files, bool json, const std::string& html_path);

// The raw page of an Nsight Compute report as CSV text: an .ncu-rep through `ncu --import FILE
// --csv --page raw` (ncu on PATH; its own messages go to stderr), any other file read as that
// command's output. Errors name the file and say what to run instead.
Result<std::string> NcuRawCsvText(const std::string& path);

}  // namespace rankscope
