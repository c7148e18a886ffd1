#include "model/gpu/nccl_compute.h"

#include <algorithm>
#include <iterator>

namespace rankscope {
namespace {

// Adds [from, to) to a set of disjoint, non-touching spans, merging what it meets.
void AddSpan(std::map<TimeNs, TimeNs>* set, TimeNs from, TimeNs to) {
  auto it = set->upper_bound(from);
  if (it != set->begin() && std::prev(it)->second >= from) --it;
  while (it != set->end() && it->first <= to) {
    from = std::min(from, it->first);
    to = std::max(to, it->second);
    it = set->erase(it);
  }
  set->emplace(from, to);
}

// The parts of `set` in [from, until), in order.
Intervals PartsIn(const std::map<TimeNs, TimeNs>& set, TimeNs from, TimeNs until) {
  Intervals out;
  for (auto it = set.begin(); it != set.end() && it->first < until; ++it) {
    const TimeNs a = std::max(it->first, from);
    const TimeNs b = std::min(it->second, until);
    if (a < b) out.emplace_back(a, b);
  }
  return out;
}

// Drops what ends at or before `until`.
void DropEndedBy(std::map<TimeNs, TimeNs>* set, TimeNs until) {
  for (auto it = set->begin(); it != set->end() && it->first < until;) {
    it = it->second <= until ? set->erase(it) : std::next(it);
  }
}

}  // namespace

void NcclComputeFold::AddNcclKernel(TimeNs start, TimeNs end) {
  if (end < start) return;
  any_nccl_ = true;
  const TimeNs to = end > INT64_MAX - margin_ ? INT64_MAX : end + margin_;
  if (start < decided_) ++late_;  // the compute before decided_ is gone
  if (to > decided_) AddSpan(&wanted_, std::max(start, decided_), to);
}

void NcclComputeFold::AddComputeKernel(TimeNs start, TimeNs end) {
  if (end <= start) return;
  if (start < decided_ && any_nccl_) ++late_;  // a decided window may have missed it
  if (end > decided_) AddSpan(&compute_, std::max(start, decided_), end);
}

Intervals NcclComputeFold::TakeDecided(TimeNs until) {
  if (until <= decided_) return {};
  const Intervals wanted = PartsIn(wanted_, decided_, until);
  const Intervals compute = PartsIn(compute_, decided_, until);
  Intervals out;
  for (size_t w = 0, c = 0; w < wanted.size() && c < compute.size();) {
    const TimeNs a = std::max(wanted[w].first, compute[c].first);
    const TimeNs b = std::min(wanted[w].second, compute[c].second);
    if (a < b) {
      if (!out.empty() && out.back().second == a) {
        out.back().second = b;
      } else {
        out.emplace_back(a, b);
      }
    }
    (wanted[w].second < compute[c].second ? w : c) += 1;
  }
  DropEndedBy(&wanted_, until);
  DropEndedBy(&compute_, until);
  decided_ = until;
  return out;
}

}  // namespace rankscope
