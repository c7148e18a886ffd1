#include "coordinator/report/record_facts.h"

#include <algorithm>
#include <cctype>

namespace rankscope {

bool IsStepRange(const RangeRecord& r) {
  return r.depth == 0 && r.name.size() >= 4 &&
         std::equal(r.name.begin(), r.name.begin() + 4, "step", [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

RecordFacts GatherRecordFacts(const Session& session) {
  RecordFacts out;
  for (const RankData& rank : session.ranks) out.ranks.push_back(GatherRankFacts(rank));
  return out;
}

RankRecordFacts GatherRankFacts(const RankData& rank) {
  RankRecordFacts f;
  f.collectives = rank.collectives.size();
  f.p2p = rank.p2p.size();
  f.mpi_calls = rank.mpi_calls.size();
  f.ranges = rank.ranges.size();
  f.marks = rank.marks.size();
  f.gpu = rank.gpu.size();
  for (const RangeRecord& r : rank.ranges) {
    f.range_time[r.name] += std::max<DurationNs>(0, r.end - r.start);
    if (IsStepRange(r)) f.steps.emplace_back(r.start, r.end);
  }
  std::sort(f.steps.begin(), f.steps.end());
  if (f.steps.size() < 2) f.steps.clear();
  return f;
}

std::pair<std::string, DurationNs> TopRange(const RankRecordFacts& rank) {
  std::pair<std::string, DurationNs> top{"", 0};
  for (const auto& [name, time] : rank.range_time) {
    if (time > top.second) top = {name, time};
  }
  return top;
}

}  // namespace rankscope
