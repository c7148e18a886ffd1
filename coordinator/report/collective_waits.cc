#include "coordinator/report/collective_waits.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <unordered_map>

#include "core/records.h"

namespace rankscope {

std::vector<DurationNs> MemberWaits(const CollectiveInstance& instance) {
  const auto& members = instance.members;
  std::vector<DurationNs> waits(members.size(), 0);
  if (members.size() < 2) return waits;

  const CollectiveParticipant* root = nullptr;
  for (const CollectiveParticipant& m : members) {
    if (m.comm_rank == instance.root_comm_rank) root = &m;
  }
  TimeNs last_enter = members.front().enter;
  TimeNs last_nonroot_enter = INT64_MIN;
  for (const CollectiveParticipant& m : members) {
    last_enter = std::max(last_enter, m.enter);
    if (&m != root) last_nonroot_enter = std::max(last_nonroot_enter, m.enter);
  }

  for (size_t i = 0; i < members.size(); ++i) {
    const CollectiveParticipant& m = members[i];
    DurationNs wait = 0;
    switch (WaitPatternOf(instance.op)) {
      case WaitPattern::kAllToAll:
        wait = last_enter - m.enter;
        break;
      case WaitPattern::kRootToAll:
        if (root != nullptr && &m != root) wait = root->enter - m.enter;
        break;
      case WaitPattern::kAllToRoot:
        if (&m == root) wait = last_nonroot_enter - m.enter;
        break;
    }
    waits[i] = std::clamp<DurationNs>(wait, 0, std::max<DurationNs>(0, m.exit - m.enter));
  }
  return waits;
}

namespace {

DurationNs Median(std::vector<DurationNs>& values) {
  if (values.empty()) return 0;
  auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

}  // namespace

CollectiveOverview SummarizeCollectives(const std::vector<CollectiveInstance>& instances) {
  CollectiveOverview overview;
  std::map<int, RankCollectiveStats> stats;  // ordered, so ranks come out sorted
  std::unordered_map<int, std::vector<DurationNs>> lateness;

  for (const CollectiveInstance& inst : instances) {
    ++overview.instances;
    ++overview.by_op[std::string(CollectiveOpName(inst.op))];
    if (inst.mismatched) ++overview.mismatched;
    if (!inst.complete) continue;
    ++overview.complete;

    std::vector<DurationNs> waits = MemberWaits(inst);
    TimeNs first = inst.members.front().enter;
    size_t last_index = 0;
    bool last_is_unique = inst.members.size() >= 2;
    for (size_t i = 0; i < inst.members.size(); ++i) {
      first = std::min(first, inst.members[i].enter);
      if (i == 0) continue;
      if (inst.members[i].enter > inst.members[last_index].enter) {
        last_index = i;
        last_is_unique = true;
      } else if (inst.members[i].enter == inst.members[last_index].enter) {
        last_is_unique = false;
      }
    }
    for (size_t i = 0; i < inst.members.size(); ++i) {
      const CollectiveParticipant& m = inst.members[i];
      RankCollectiveStats& s = stats[m.rank];
      s.rank = m.rank;
      ++s.instances;
      s.time_in_calls += std::max<DurationNs>(0, m.exit - m.enter);
      s.wait += waits[i];
      if (last_is_unique && i == last_index) ++s.times_last;
      if (inst.members.size() >= 2) lateness[m.rank].push_back(m.enter - first);
    }
  }

  for (auto& [rank, s] : stats) {
    auto it = lateness.find(rank);
    if (it != lateness.end()) s.median_lateness = Median(it->second);
    if (overview.max_median_lateness_rank < 0 || s.median_lateness > overview.max_median_lateness) {
      overview.max_median_lateness = s.median_lateness;
      overview.max_median_lateness_rank = rank;
    }
    overview.ranks.push_back(s);
  }
  return overview;
}

std::optional<size_t> StepContaining(const TimeSpans& steps, TimeNs t) {
  auto it = std::upper_bound(steps.begin(), steps.end(), std::make_pair(t, TimeNs{0}),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
  if (it == steps.begin() || t > std::prev(it)->second) return std::nullopt;
  return static_cast<size_t>(std::prev(it) - steps.begin());
}

SessionSteps FindSessionSteps(const Session& session, const RecordFacts& facts) {
  SessionSteps out;
  for (size_t r = 0; r < session.ranks.size(); ++r) {
    const RankData& rank = session.ranks[r];
    TimeSpans mine = facts.ranks[r].steps;
    if (mine.empty() && facts.ranks[r].collectives > 0) return {};
    for (size_t k = 0; k < mine.size(); ++k) {
      if (k == out.spans.size()) out.spans.push_back(mine[k]);
      out.spans[k].first = std::min(out.spans[k].first, mine[k].first);
      out.spans[k].second = std::max(out.spans[k].second, mine[k].second);
    }
    out.of_rank.emplace(rank.id.rank, std::move(mine));
  }
  return out;
}

std::vector<DurationNs> WaitPerStep(const SessionSteps& steps,
                                    const std::vector<CollectiveInstance>& instances) {
  std::vector<DurationNs> wait(steps.spans.size(), 0);
  for (const CollectiveInstance& inst : instances) {
    const std::vector<DurationNs> waits = MemberWaits(inst);
    for (size_t m = 0; m < inst.members.size(); ++m) {
      auto mine = steps.of_rank.find(inst.members[m].rank);
      if (mine == steps.of_rank.end()) continue;
      if (std::optional<size_t> k = StepContaining(mine->second, inst.members[m].enter)) {
        wait[*k] += waits[m];
      }
    }
  }
  return wait;
}

std::optional<size_t> MostWaitingStep(const std::vector<DurationNs>& wait) {
  if (wait.empty()) return std::nullopt;
  size_t worst = wait.size() > 2 ? 1 : 0;
  for (size_t k = worst; k < wait.size(); ++k) {
    if (wait[k] > wait[worst]) worst = k;
  }
  if (wait[worst] <= 0) return std::nullopt;
  return worst;
}

}  // namespace rankscope
