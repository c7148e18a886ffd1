// report.json: the machine-readable report of one session, schema "rankscope.report/v1"
// (report.schema.json beside this file, JSON Schema draft 2020-12). Tools and CI read this
// file, so its shape changes only with a new schema version.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "coordinator/analysis/blame.h"
#include "coordinator/findings.h"
#include "coordinator/report/collective_waits.h"
#include "coordinator/report/gpu_json.h"
#include "coordinator/report/record_facts.h"
#include "coordinator/session.h"
#include "core/status.h"

namespace rankscope {

inline constexpr char kReportSchemaId[] = "rankscope.report/v1";

// The report of an aligned session: the job, every rank with its clock model, exit and record
// counts, the findings worst first, and a summary of the matched collectives. The result
// validates against report.schema.json.
nlohmann::json BuildReportJson(const Session& session, const std::vector<Finding>& findings);
// The same with the session's GPU figures and collective overview already computed
// (BuildGpuReport(session), SummarizeCollectives(MatchCollectives(session))), and the blame model
// the stragglers were decided by (Diagnose), when there is one: then every rank has an "mpi"
// object (time inside and outside MPI, waits, calls not interpreted) and the report a "blame"
// section (who waited for whom, the what-if).
nlohmann::json BuildReportJson(const Session& session, const std::vector<Finding>& findings,
                               const GpuReport& gpu, const CollectiveOverview& collectives,
                               const BlameModel* blame = nullptr,
                               const RecordFacts* facts = nullptr);

// One finding as it appears in report.json (also how the session store keeps findings).
nlohmann::json FindingToJson(const Finding& finding);

// The inverse of FindingToJson. Fails, naming the field, on anything FindingToJson would not
// have written.
Result<Finding> FindingFromJson(const nlohmann::json& json);

}  // namespace rankscope
