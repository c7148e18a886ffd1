#include "coordinator/pipeline.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <system_error>

#include "coordinator/advise/advisor.h"
#include "coordinator/aligner.h"
#include "coordinator/analysis/diagnosis.h"
#include "coordinator/attempts.h"
#include "coordinator/collective_matcher.h"
#include "coordinator/completeness.h"
#include "coordinator/nccl_instances.h"
#include "coordinator/report/session_writer.h"
#include "coordinator/report/stored_windows.h"
#include "coordinator/windows.h"

namespace rankscope {

namespace {

// Matching, analyses and writers: the part a saved session goes through again.
Result<PipelineOutput> DiagnoseAndWrite(Session aligned, const std::string& out_dir,
                                        const AnalysisOptions& options, const OutputOptions& output,
                                        const std::string& stored_path = "") {
  // torchrun restarts: the last attempt is analysed, the earlier ones are kept beside it.
  SeparateAttempts(&aligned);
  std::vector<std::string> notes;
  if (std::string attempts = DescribeAttempts(aligned); !attempts.empty()) {
    notes.push_back(std::move(attempts));
  }
  std::optional<WindowedReading> windowed;
  SessionMatches matches;
  if (options.by_window && !stored_path.empty()) {
    // The folds read their windows from the file, as a session too long to hold would be read.
    Result<std::unique_ptr<StoredWindows>> stored = StoredWindows::Open(stored_path, aligned);
    if (!stored.ok()) return stored.status();
    Result<WindowPlan> plan = stored.value()->Plan(*options.by_window);
    if (!plan.ok()) return plan.status();
    windowed.emplace(aligned);
    Result<SessionMatches> read = MatchWindows(
        aligned, options, plan->size(), [&] { return stored.value()->Next(plan.value()); },
        &*windowed);
    if (!read.ok()) return read.status();
    matches = std::move(read).value();
  } else if (options.by_window) {
    windowed.emplace(aligned);
    matches = MatchSessionByWindow(aligned, options, &*windowed);
  } else {
    matches = MatchSession(aligned);
  }
  BlameModel blame;
  std::vector<Finding> findings =
      Diagnose(aligned, matches, options, &notes, &blame, windowed ? &*windowed : nullptr);
  std::error_code absolute_error;
  const std::filesystem::path dir = std::filesystem::absolute(out_dir, absolute_error);
  PlanNextSteps(aligned, absolute_error ? out_dir : dir.lexically_normal().string(), &findings);
  for (std::string& n : notes) {
    // A re-analysis of a saved session may arrive at a note it already carries.
    if (std::find(aligned.analysis_notes.begin(), aligned.analysis_notes.end(), n) ==
        aligned.analysis_notes.end()) {
      aligned.analysis_notes.push_back(std::move(n));
    }
  }
  const std::optional<TraceWindow> window =
      ChooseTraceWindow(aligned, matches, output.max_trace_events);
  if (window) aligned.analysis_notes.push_back(DescribeTraceWindow(*window));
  PipelineOutput out;
  if (Status s = WriteSessionFolder(out_dir, aligned, matches, findings, &out.report_text,
                                    &out.report_text_color, window, &blame);
      !s.ok()) {
    if (out.report_text.empty()) return s;  // no folder at all
    out.write_error = s.message();
  }
  out.findings = static_cast<int>(findings.size());
  return out;
}

}  // namespace

Result<PipelineOutput> ReanalyzeAndWrite(Session stored, const std::string& out_dir,
                                         const AnalysisOptions& options,
                                         const OutputOptions& output,
                                         const std::string& stored_path) {
  SeparateAttempts(&stored);
  if (!stored.aligned) {
    AssessCompleteness(&stored);
    stored = AlignSession(std::move(stored));
  }
  // Notes of an earlier trace window are the writer's, not the session's: recomputed below.
  std::erase_if(stored.analysis_notes,
                [](const std::string& n) { return n.rfind("trace.json holds ", 0) == 0; });
  return DiagnoseAndWrite(std::move(stored), out_dir, options, output, stored_path);
}

Result<PipelineOutput> AnalyzeAndWrite(Session raw, const std::string& out_dir,
                                       const AnalysisOptions& options,
                                       const OutputOptions& output) {
  SeparateAttempts(&raw);  // a torchrun restart's failed attempt does not make the run partial
  AssessCompleteness(&raw);
  Session aligned = AlignSession(std::move(raw));
  const NcclJoinStats nccl = AddNcclCollectives(&aligned);
  if (nccl.calls_without_kernel > 0 || nccl.kernels_without_call > 0) {
    aligned.analysis_notes.push_back(
        "NCCL: " + std::to_string(nccl.joined) + " calls joined with their GPU kernels; " +
        std::to_string(nccl.calls_without_kernel) + " calls had no kernel and " +
        std::to_string(nccl.kernels_without_call) +
        " NCCL kernels no call (capture window, or a log line NCCL did not write)");
  }
  if (nccl.windowed_ranks > 0) {
    aligned.analysis_notes.push_back(
        "NCCL: " + std::to_string(nccl.windowed_ranks) +
        " rank(s) captured GPU activity in windows (RANKSCOPE_CAPTURE_*), so their NCCL calls "
        "were not joined with kernels: NCCL's log does not time calls, and only a whole-run "
        "capture lines calls and kernels up. Their kernels are in trace.json; MPI collectives "
        "are analysed as usual.");
  }
  return DiagnoseAndWrite(std::move(aligned), out_dir, options, output);
}

}  // namespace rankscope
