// Wording shared by the analyses' summaries: durations a person reads at a glance and the
// "rank 2 (node n3)" label.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "coordinator/session.h"
#include "core/format.h"
#include "core/time.h"

namespace rankscope {

// "rank 2 (node n3)", or "rank 2" when the session does not know the rank's node.
std::string RankLabel(const Session& session, int rank);

// The rank's node name, empty when unknown.
std::string NodeOf(const Session& session, int rank);

}  // namespace rankscope
