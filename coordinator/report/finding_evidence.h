// A finding's evidence as the report shows it: the analyses' figures (Finding::evidence) with
// the finding's typed facts written in, and back. report.json, report.txt and report.html all
// show what EvidenceJson makes.
#pragma once

#include <nlohmann/json.hpp>

#include "coordinator/findings.h"

namespace rankscope {

// Finding::evidence with the typed facts under their keys (findings.h: cause_kind, what_if,
// limiting_link, the communicator's measure, late arrivals, cause range, kernels, step_source),
// and each joined finding under its key (measured, below_link_ceiling, straggler). Evidence
// that is not an object (from a later rankscope's report) comes back as it is.
nlohmann::json EvidenceJson(const Finding& finding);

// The inverse: moves the typed facts and joined findings out of `evidence` (as EvidenceJson
// wrote them) into *f, and the rest into f->evidence. A kind's whole figures, which nothing reads
// after the analyses (process_outlier's), stay JSON and are written back as they are. A fact this
// build cannot read (another type, an unknown name) stays in f->evidence as it was. Throws
// nlohmann::json::exception on a fact of the wrong type where its key says it is one.
void TakeEvidence(nlohmann::json evidence, Finding* f);

}  // namespace rankscope
