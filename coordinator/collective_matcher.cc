#include "coordinator/collective_matcher.h"

#include <algorithm>
#include <map>
#include <utility>

namespace rankscope {

std::vector<CollectiveInstance> MatchCollectives(const Session& session) {
  std::map<std::pair<uint64_t, uint64_t>, CollectiveInstance> by_key;
  for (const RankData& rank : session.ranks) {
    for (const CollectiveRecord& c : rank.collectives) {
      CollectiveInstance& inst = by_key[{c.comm_id, c.seq}];
      if (inst.members.empty()) {
        inst.comm_id = c.comm_id;
        inst.seq = c.seq;
        inst.op = c.op;
        inst.comm_size = c.comm_size;
        inst.root_comm_rank = c.root;
      } else if (inst.op != c.op || inst.comm_size != c.comm_size ||
                 inst.root_comm_rank != c.root) {
        inst.mismatched = true;
      }
      inst.members.push_back({rank.id.rank, c.comm_rank, c.enter, c.exit, c.bytes, c.launched});
    }
  }
  std::vector<CollectiveInstance> out;
  out.reserve(by_key.size());
  for (auto& [key, inst] : by_key) {
    std::sort(inst.members.begin(), inst.members.end(),
              [](const auto& a, const auto& b) { return a.rank < b.rank; });
    inst.complete = !inst.mismatched && static_cast<int>(inst.members.size()) == inst.comm_size;
    out.push_back(std::move(inst));
  }
  auto first_enter = [](const CollectiveInstance& i) {
    TimeNs t = i.members.front().enter;
    for (const auto& m : i.members) t = std::min(t, m.enter);
    return t;
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const auto& a, const auto& b) { return first_enter(a) < first_enter(b); });
  return out;
}

}  // namespace rankscope
