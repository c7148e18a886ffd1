#include "coordinator/analysis/kernel_reports.h"

#include <algorithm>
#include <set>

#include "core/format.h"
#include "model/ncu/ncu_html.h"
#include "model/ncu/ncu_report.h"

namespace rankscope {
KernelVerdict VerdictOf(const KernelAnalysis& k) {
  KernelVerdict v;
  v.kernel = ShortKernelName(k.kernel);
  v.bound = KernelBoundName(k.bound);
  v.why = k.why;
  v.report = k.file;
  if (!k.stalls.empty()) {
    const StallReason& top = k.stalls.front();
    v.stall =
        top.reason + FormatDouble(" %.2f cycles per issued instruction", top.cycles_per_issue);
    if (!k.AtRoof()) v.fix = top.fix;
  }
  return v;
}

namespace {

bool IsGpuCause(CauseKind cause) {
  return cause == CauseKind::kGpuKernels || cause == CauseKind::kGpuQueue;
}

// The verdicts `f` gets from `report`: the kernels it names, else (a GPU cause that names none,
// or a rank that ran under ncu in this run, whose GPU work nothing else saw: the tool holds CUDA's
// injection) every kernel of the report; one per kernel name, its first launch.
std::vector<KernelVerdict> VerdictsFor(const Finding& f, const RankKernelReport& report) {
  std::set<std::string> named;
  if (f.kernels) {
    for (const KernelExcess& k : *f.kernels) named.insert(ShortKernelName(k.name));
  }
  if (named.empty() && !IsGpuCause(f.cause) && !report.same_run) return {};
  std::vector<KernelVerdict> out;
  std::set<std::string> seen;
  for (const KernelAnalysis& k : report.kernels) {
    KernelVerdict v = VerdictOf(k);
    if ((!named.empty() && named.count(v.kernel) == 0) || !seen.insert(v.kernel).second) continue;
    out.push_back(std::move(v));
  }
  return out;
}

void JoinInto(const std::vector<RankKernelReport>& reports, Finding* f) {
  size_t under_tool = 0;  // of the finding's ranks
  for (const RankKernelReport& report : reports) {
    if (std::find(f->ranks.begin(), f->ranks.end(), report.rank) == f->ranks.end()) continue;
    if (report.same_run) {
      f->under_tool = report.tool;
      ++under_tool;
    }
    std::vector<KernelVerdict> verdicts = VerdictsFor(*f, report);
    f->kernel_verdicts.insert(f->kernel_verdicts.end(), verdicts.begin(), verdicts.end());
  }
  // Only ranks the tool slowed: measured on the H100, ncu's start-up alone held MPI_Init up 3 s
  // and the rank sat in its wrapper's wait() 99 % of the run, so what the finding says is mostly
  // the tool's. Kept (with the kernel's verdict, the reason for the run) but as information.
  if (under_tool > 0 && under_tool == f->ranks.size()) {
    f->severity = Severity::kInfo;
    f->summary = UnderToolNote(*f) + ". As measured: " + f->summary;
  } else if (under_tool > 0) {
    f->summary += " Note: " + UnderToolNote(*f) + ".";
  }
}

}  // namespace

std::vector<RankKernelReport> SessionKernelReports(const Session& session) {
  std::vector<RankKernelReport> out;
  for (const RankData& r : session.ranks) {
    if (!r.tool_run) continue;
    const ToolRun& t = *r.tool_run;
    RankKernelReport report{r.id.rank, t.tool, t.path, t.host, {}, {}, t.error, t.same_run};
    if (t.tool == "ncu" && !t.csv.empty()) {
      Result<NcuReport> parsed = ParseNcuRawCsv(t.csv, t.path);
      if (!parsed.ok()) {
        report.error = parsed.status().message();
      } else {
        for (const NcuLaunch& launch : parsed.value().launches) {
          report.kernels.push_back(AnalyzeKernel(launch));
          report.kernels.back().file = t.path;
        }
        report.problems = parsed.value().problems;
        if (report.kernels.empty() && report.error.empty()) {
          report.error = t.path + " holds no kernel launch";
        }
      }
    }
    out.push_back(std::move(report));
  }
  return out;
}

void JoinKernelReports(const std::vector<RankKernelReport>& reports,
                       std::vector<Finding>* findings) {
  if (reports.empty()) return;
  for (Finding& f : *findings) {
    JoinInto(reports, &f);
    for (Finding& j : f.joined) JoinInto(reports, &j);
  }
}

std::string DescribeToolRank(const RankKernelReport& r) {
  const std::string rank = "rank " + std::to_string(r.rank);
  return r.same_run ? rank + " ran under " + r.tool
                    : rank + "'s " + r.tool + " report (of another run)";
}

std::string UnderToolNote(const Finding& f) {
  std::string ranks;
  for (int r : f.ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  const bool ncu = f.under_tool == "ncu";
  return std::string(f.ranks.size() == 1 ? "rank " : "ranks ") + ranks + " ran under " +
         f.under_tool +
         (ncu ? ", whose start-up, launch interception and kernel replay slow it"
              : ", whose tracing slows it") +
         ": its lateness here is mostly the tool's; a run without --" +
         (ncu ? "ncu-rank" : "nsys-ranks") + " says whether it straggles on its own";
}

std::string DescribeVerdict(const KernelVerdict& v) {
  std::string out = v.kernel + ": " + v.bound + " (" + v.why + ")";
  if (!v.stall.empty()) out += "; top stall " + v.stall;
  if (!v.fix.empty()) out += ": " + v.fix;
  return out;
}

}  // namespace rankscope
