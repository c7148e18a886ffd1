#include "coordinator/pipeline.h"

#include "coordinator/aligner.h"
#include "coordinator/analysis/diagnosis.h"
#include "coordinator/collective_matcher.h"
#include "coordinator/completeness.h"
#include "coordinator/report/report_text.h"
#include "coordinator/report/session_writer.h"

namespace rankscope {

Result<PipelineOutput> AnalyzeAndWrite(Session raw, const std::string& out_dir) {
  AssessCompleteness(&raw);
  Session aligned = AlignSession(std::move(raw));
  std::vector<Finding> findings = Diagnose(aligned, AnalysisOptions{}, &aligned.analysis_notes);
  std::vector<CollectiveInstance> instances = MatchCollectives(aligned);
  PipelineOutput out;
  if (Status s = WriteSessionFolder(out_dir, aligned, instances, findings, &out.report_text);
      !s.ok()) {
    return s;
  }
  out.report_text_color = BuildReportText(aligned, findings, /*color=*/true);
  out.findings = static_cast<int>(findings.size());
  return out;
}

}  // namespace rankscope
