// A rank run under Nsight Compute or Nsight Systems (`rankscope run --ncu-rank R ... /
// --nsys-ranks LIST`): the `-o out_rank%q{RANK}` practice, done by the agent, which knows its
// rank before the program starts. Only the chosen ranks run the tool; the others run as they are.
// Pure: the environment comes in as a map and the PATH lookup as a function.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "agent/identity.h"

namespace rankscope {

// The variables `rankscope run` sets for every rank (launchers/run.cc); the agent reads them.
inline constexpr const char* kNcuRanksVar = "RANKSCOPE_NCU_RANKS";    // "1" or "1,3"
inline constexpr const char* kNcuKernelVar = "RANKSCOPE_NCU_KERNEL";  // a regex; empty: any
inline constexpr const char* kNcuSetVar = "RANKSCOPE_NCU_SET";        // default "full"
inline constexpr const char* kNcuCountVar = "RANKSCOPE_NCU_COUNT";    // launches; default 1
inline constexpr const char* kNcuSkipVar = "RANKSCOPE_NCU_SKIP";      // launches; default 0
inline constexpr const char* kNsysRanksVar = "RANKSCOPE_NSYS_RANKS";  // "0,3"
// Where the reports go: the session folder (absolute), when the rank's node has it; else the
// agent's temporary directory.
inline constexpr const char* kToolDirVar = "RANKSCOPE_TOOL_DIR";

struct ToolWrap {
  std::string tool;               // "ncu" or "nsys"; empty: the program runs as it is
  std::vector<std::string> argv;  // the tool's command line, ending with the program's
  std::string report;             // the file the tool writes (with its extension)
  std::string binary;             // the tool's executable, as found (for `ncu --import`)
  std::string note;               // what the user should know (the tool is missing, ...)

  bool active() const { return !tool.empty(); }
};

// Whether `rank` is in `list` ("1", "0,3", "2-5", "all"); false for an empty or malformed list.
bool RankInList(const std::string& list, int rank);

// The wrap for `rank` running `program`, from kNcu*/kNsys* in `env`. `find` returns a tool's
// executable path, or "" when it is not there (PATH lookup; RANKSCOPE_NCU / RANKSCOPE_NSYS name
// one explicitly). `writable` says whether a directory is there and writable; `tmp_dir` is used
// when kToolDirVar's is not. A missing tool leaves the program unwrapped, with a note.
ToolWrap PlanToolWrap(const EnvMap& env, int rank, const std::vector<std::string>& program,
                      const std::string& tmp_dir,
                      const std::function<std::string(const std::string&)>& find,
                      const std::function<bool(const std::string&)>& writable);

// The executable `name` on PATH (as execvp would find it), or "".
std::string FindOnPath(const std::string& name, const EnvMap& env);

}  // namespace rankscope
