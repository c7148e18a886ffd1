#include "coordinator/completeness.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string>

#include "core/clock_model.h"
#include "core/format.h"

namespace rankscope {
namespace {

void AddReason(Session* s, std::string reason) {
  s->partial = true;
  for (const std::string& r : s->partial_reasons) {
    if (r == reason) return;
  }
  s->partial_reasons.push_back(std::move(reason));
}

// Of the ranks that ended badly (a non-zero code, a signal, an unseen status while the launcher
// failed: with the launcher at 0 every rank exited 0), the one whose agent
// saw it end first, and how long before the next: with a launcher that kills the others once
// one fails, every rank reads as failed and only the order tells the first. Times are the
// agents' clocks brought to the coordinator's (the session is not aligned yet).
std::string FirstToEndBadly(const Session& s) {
  struct Ended {
    TimeNs at;
    const RankData* rank;
  };
  std::vector<Ended> ended;
  const bool launcher_failed = s.launcher_exit_code.value_or(1) != 0;
  for (const RankData& r : s.ranks) {
    const bool bad = (r.exit_code && *r.exit_code != 0) || (r.exit_unseen && launcher_failed);
    if (!bad || r.exit_time == 0) continue;
    TimeNs at = r.exit_time;
    if (!s.aligned) {
      if (Result<ClockModel> fit = FitClockModel(r.clock_samples); fit.ok()) {
        at = fit.value().ToCoordinator(at);
      }
    }
    ended.push_back({at, &r});
  }
  if (ended.size() < 2) return "";
  std::sort(ended.begin(), ended.end(), [](const Ended& a, const Ended& b) { return a.at < b.at; });
  const RankData& first = *ended[0].rank;
  std::string how = first.exit_unseen        ? "its status not seen"
                    : first.term_signal != 0 ? "signal " + std::to_string(first.term_signal) +
                                                   " (" + strsignal(first.term_signal) + ")"
                                             : "code " + std::to_string(*first.exit_code);
  return "rank " + std::to_string(first.id.rank) + " (" + first.id.node + ") ended first (" + how +
         "), " + FormatDuration(ended[1].at - ended[0].at) + " before the next (rank " +
         std::to_string(ended[1].rank->id.rank) + ")";
}

}  // namespace

std::string FormatRankList(const std::vector<int>& sorted_ranks) {
  std::string out;
  for (size_t i = 0; i < sorted_ranks.size();) {
    size_t j = i;
    while (j + 1 < sorted_ranks.size() && sorted_ranks[j + 1] == sorted_ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(sorted_ranks[i]);
    if (j > i) out += "-" + std::to_string(sorted_ranks[j]);
    i = j + 1;
  }
  return out;
}

MissingRanks FindMissingRanks(const Session& session) {
  std::set<int> present;
  for (const RankData& r : session.ranks) {
    if (r.id.rank >= 0 && r.id.rank < session.world_size) present.insert(r.id.rank);
  }
  MissingRanks out;
  int ranges = 0;
  auto gap = [&](int64_t first, int64_t last) {  // [first, last]
    if (first > last) return;
    out.count += last - first + 1;
    if (++ranges > 16) return;
    if (!out.ranges.empty()) out.ranges += ", ";
    out.ranges += std::to_string(first);
    if (last > first) out.ranges += "-" + std::to_string(last);
  };
  int64_t next = 0;
  for (int rank : present) {
    gap(next, static_cast<int64_t>(rank) - 1);
    next = static_cast<int64_t>(rank) + 1;
  }
  gap(next, static_cast<int64_t>(session.world_size) - 1);
  if (ranges > 16) out.ranges += " and " + std::to_string(ranges - 16) + " more ranges";
  return out;
}

void AssessCompleteness(Session* session) {
  if (std::string first = FirstToEndBadly(*session); !first.empty()) {
    AddReason(session, std::move(first));  // before the ranks it names as failed
  }
  std::vector<int> unfinished;
  for (const RankData& r : session->ranks) {
    if (!r.finished) unfinished.push_back(r.id.rank);
    if (r.exit_code && *r.exit_code != 0) {
      std::string how = r.term_signal != 0
                            ? "was killed by signal " + std::to_string(r.term_signal) + " (" +
                                  strsignal(r.term_signal) + ")"
                            : "exited with code " + std::to_string(*r.exit_code);
      AddReason(session, "rank " + std::to_string(r.id.rank) + " (" + r.id.node + ") " + how);
    }
    // Its status unseen: with the launcher failing it may be the rank that failed.
    if (r.exit_unseen && session->launcher_exit_code.value_or(1) != 0) {
      AddReason(session, "rank " + std::to_string(r.id.rank) + " (" + r.id.node +
                             ") ended without calling exit() (a signal, or _exit); its status "
                             "was not seen");
    }
    if (r.dropped_records > 0) {
      AddReason(session, "rank " + std::to_string(r.id.rank) + " dropped " +
                             std::to_string(r.dropped_records) + " records");
    }
  }
  const MissingRanks missing = FindMissingRanks(*session);
  if (session->ranks.empty()) {
    AddReason(session, "no agent registered with the coordinator (did the launcher start?)");
  }
  if (missing.count > 0) AddReason(session, "no data from rank(s) " + missing.ranges);
  if (!unfinished.empty()) {
    AddReason(session, "rank(s) " + FormatRankList(unfinished) +
                           " never sent their final records (agent killed or unreachable)");
  }
  if (session->launcher_exit_code && *session->launcher_exit_code != 0) {
    AddReason(session, "launcher exited with code " + std::to_string(*session->launcher_exit_code));
  }
}

}  // namespace rankscope
