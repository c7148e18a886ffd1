// Decides whether a session is complete or partial, and says why. Pure.
#pragma once

#include <string>
#include <vector>

#include "coordinator/session.h"

namespace rankscope {

// Marks `session` partial (appending reasons) when: a rank of 0..world_size-1 never
// registered, an agent never sent its final batch, a rank exited non-zero or by a signal,
// records were dropped, or the launcher failed. Idempotent for the same input.
void AssessCompleteness(Session* session);

// Sorted ranks as ranges: {0,1,2,3,5} -> "0-3, 5".
std::string FormatRankList(const std::vector<int>& sorted_ranks);

}  // namespace rankscope
