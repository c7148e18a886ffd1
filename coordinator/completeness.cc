#include "coordinator/completeness.h"

#include <cstring>
#include <set>
#include <string>

namespace rankscope {
namespace {

void AddReason(Session* s, std::string reason) {
  s->partial = true;
  for (const std::string& r : s->partial_reasons) {
    if (r == reason) return;
  }
  s->partial_reasons.push_back(std::move(reason));
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

void AssessCompleteness(Session* session) {
  std::set<int> present;
  std::vector<int> unfinished;
  for (const RankData& r : session->ranks) {
    present.insert(r.id.rank);
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
  std::vector<int> missing;
  for (int rank = 0; rank < session->world_size; ++rank) {
    if (!present.count(rank)) missing.push_back(rank);
  }
  if (session->ranks.empty()) {
    AddReason(session, "no agent registered with the coordinator (did the launcher start?)");
  }
  if (!missing.empty()) AddReason(session, "no data from rank(s) " + FormatRankList(missing));
  if (!unfinished.empty()) {
    AddReason(session, "rank(s) " + FormatRankList(unfinished) +
                           " never sent their final records (agent killed or unreachable)");
  }
  if (session->launcher_exit_code && *session->launcher_exit_code != 0) {
    AddReason(session, "launcher exited with code " + std::to_string(*session->launcher_exit_code));
  }
}

}  // namespace rankscope
