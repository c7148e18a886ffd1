// Decides whether a session is complete or partial, and says why. Pure.
#pragma once

#include <cstdint>
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

// The ranks of 0..world_size-1 with no data in `session`, as FormatRankList ranges (the first
// 16, then "and N more ranges"), and how many they are; found from the ranks present, so its
// cost does not depend on the world size (a bad one of 2^31 once allocated 8 GB here).
struct MissingRanks {
  int64_t count = 0;
  std::string ranges;  // "" when none
};
MissingRanks FindMissingRanks(const Session& session);

}  // namespace rankscope
