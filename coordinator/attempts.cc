#include "coordinator/attempts.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "core/format.h"

namespace rankscope {

int SeparateAttempts(Session* session) {
  int last = 0;
  for (const RankData& r : session->ranks) last = std::max(last, r.id.restart_count);
  for (const RankData& r : session->earlier_attempts) last = std::max(last, r.id.restart_count);
  if (last == 0) return 1;
  std::vector<RankData> kept;
  for (RankData& r : session->ranks) {
    (r.id.restart_count == last ? kept : session->earlier_attempts).push_back(std::move(r));
  }
  session->ranks = std::move(kept);
  std::stable_sort(session->earlier_attempts.begin(), session->earlier_attempts.end(),
                   [](const RankData& a, const RankData& b) {
                     return std::make_pair(a.id.restart_count, a.id.rank) <
                            std::make_pair(b.id.restart_count, b.id.rank);
                   });
  return last + 1;
}

std::string DescribeAttempts(const Session& session) {
  if (session.earlier_attempts.empty()) return "";
  std::map<int, std::vector<const RankData*>> by_attempt;
  for (const RankData& r : session.earlier_attempts) by_attempt[r.id.restart_count].push_back(&r);
  const int last = session.ranks.empty() ? static_cast<int>(by_attempt.size())
                                         : session.ranks.front().id.restart_count;
  std::string out = "torchrun restarted the workers " + std::to_string(last) +
                    (last == 1 ? " time" : " times") +
                    "; the findings and timeline cover the last " + "attempt (restart " +
                    std::to_string(last) + ")";
  for (const auto& [attempt, ranks] : by_attempt) {
    std::string failed;
    for (const RankData* r : ranks) {
      const bool bad = (r->exit_code && *r->exit_code != 0) || r->term_signal != 0;
      if (!bad) continue;
      failed += (failed.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r->id.rank) +
                (r->term_signal != 0 ? " killed by signal " + std::to_string(r->term_signal)
                                     : " exited with code " + std::to_string(*r->exit_code));
    }
    out += "; attempt " + std::to_string(attempt) + " (" + std::to_string(ranks.size()) +
           (ranks.size() == 1 ? " rank" : " ranks") + ")" +
           (failed.empty() ? std::string(": no rank reported a failure") : ": " + failed);
  }
  return out + " (report.json \"attempts\")";
}

}  // namespace rankscope
