// The live check's findings (coordinator/live_check.h) as JSON: how report.json shows them and
// session.sqlite keeps them (meta 'live_findings'), so that a re-analysed session still says
// what was seen while its job ran.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "coordinator/live_check.h"
#include "coordinator/stall_check.h"
#include "core/status.h"

namespace rankscope {

// One object per finding: rank, cause (LiveCauseName), began_s and found_s (since the launch),
// window_s, the shares, and its sentence as printed ("text").
nlohmann::json LiveFindingsJson(const std::vector<LiveFinding>& findings);

// Back from LiveFindingsJson's array; an error naming what is wrong (`where`: the file and key).
Result<std::vector<LiveFinding>> LiveFindingsFromJson(const nlohmann::json& array,
                                                      const std::string& where);

// The stall check's findings (coordinator/stall_check.h), kept the same way (meta
// 'live_stalls', report.json job.live_stalls): kind, holder, waiting, the call waited in, the
// holder's state, began_s and found_s, and the sentence ("text").
nlohmann::json StallFindingsJson(const std::vector<StallFinding>& findings);
Result<std::vector<StallFinding>> StallFindingsFromJson(const nlohmann::json& array,
                                                        const std::string& where);

}  // namespace rankscope
