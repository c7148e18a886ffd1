// The Nsight Compute reports a session holds (ranks run under `rankscope run --ncu-rank R`, or a
// report given to `rankscope report --ncu`), read and analysed (model/ncu), and joined into the
// findings about their rank: a straggler's chain then ends with the verdict on the kernel it
// names. Pure: the CSV text comes in with the session.
#pragma once

#include <string>
#include <vector>

#include "coordinator/findings.h"
#include "coordinator/session.h"
#include "model/ncu/kernel_analysis.h"

namespace rankscope {

struct RankKernelReport {
  int rank = -1;
  std::string tool;  // "ncu" or "nsys"
  std::string path;  // the report, on `host`
  std::string host;
  std::vector<KernelAnalysis> kernels;  // one per profiled launch (ncu)
  std::vector<std::string> problems;    // rows of the CSV that did not read
  std::string error;                    // why there is nothing to analyse
  bool same_run = true;                 // ToolRun::same_run: the tool slowed this run's rank
};

// A report per rank that ran under a tool, in rank order.
std::vector<RankKernelReport> SessionKernelReports(const Session& session);

// Gives each finding about a rank with an ncu report the verdicts on the kernels it names (a GPU
// straggler's kernels; one that names none, on a GPU cause or a rank that ran under ncu in this
// run, gets the report's kernels), and marks the findings on a rank that ran under ncu or nsys
// in this run (under_tool): a finding about such ranks alone becomes information, its summary
// opening with UnderToolNote.
void JoinKernelReports(const std::vector<RankKernelReport>& reports,
                       std::vector<Finding>* findings);

// "rank 1 ran under ncu", or "rank 1's ncu report (of another run)".
std::string DescribeToolRank(const RankKernelReport& r);

// The verdict on one analysed launch.
KernelVerdict VerdictOf(const KernelAnalysis& k);

// What a reader of a finding marked under_tool should know: the tool slowed its rank.
std::string UnderToolNote(const Finding& f);

// One line: "heavy_stencil: compute-bound (...); top stall wait 3.10 cycles per issued
// instruction: <fix>".
std::string DescribeVerdict(const KernelVerdict& v);

}  // namespace rankscope
