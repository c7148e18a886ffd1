// Straggler findings decided by the blame model (analysis/blame.h): a rank is a straggler when
// its own work stands apart from the other ranks' and the what-if replay says the job would be a
// material share faster had it run like the typical rank. The arrival analysis
// (analysis/straggler_analysis.h) and the point-to-point wait states (analysis/p2p_analysis.h)
// still describe *how* the others waited; this file decides *whether* a rank is reported and
// says what it cost and why.
#pragma once

#include <string>
#include <vector>

#include "coordinator/analysis/blame.h"
#include "coordinator/findings.h"
#include "coordinator/session.h"

namespace rankscope {

// Applies the blame model's verdicts to the analyses' findings, in place:
//  - a straggler rank that a finding of `*findings` already names alone (kinds straggler,
//    late_sender, late_receiver, dataloader_skew) gets the what-if, the blame-based cost and
//    confidence, and a sentence saying what the job would take without it;
//  - a straggler rank no finding names gets a new "straggler" finding from the blame model, with
//    its cause (CPU starved, CPU-bound, I/O, an NVTX range, more work) from the evidence at hand;
//  - "straggler" findings for ranks the blame model does not flag are removed, and a sentence
//    saying why goes to *notes (may be nullptr).
void ApplyBlame(const Session& aligned, const BlameModel& blame, const BlameOptions& options,
                std::vector<Finding>* findings, std::vector<std::string>* notes);

// The blame model's confidence for one straggler rank and its parts (BlameConfidence,
// coordinator/evidence.h), each 0..1 and built of ThresholdMargin (0.5 at a threshold, towards 1
// far past it). Documented in docs/design.md ("Confidence"). outside_margin: the margin of the
// cause seen from outside the program (StarvationMargin, OffCpuMargin), 0 without one.
BlameConfidence ConfidenceOf(const RankBlame& rank, const BlameModel& model,
                             const BlameOptions& options, double outside_margin);

}  // namespace rankscope
