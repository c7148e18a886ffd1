#include "coordinator/collective_matcher.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

namespace rankscope {
namespace {

// Sorts the members and says whether the instance is whole.
CollectiveInstance Settle(CollectiveInstance inst) {
  std::sort(inst.members.begin(), inst.members.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  inst.complete = !inst.mismatched && static_cast<int>(inst.members.size()) == inst.comm_size;
  return inst;
}

}  // namespace

void CollectiveFold::Add(int world_rank, const CollectiveRecord& c) {
  const std::pair<uint64_t, uint64_t> key{c.comm_id, c.seq};
  CollectiveInstance& inst = open_[key];
  if (inst.members.empty()) {
    inst.comm_id = c.comm_id;
    inst.seq = c.seq;
    inst.op = c.op;
    inst.comm_size = c.comm_size;
    inst.root_comm_rank = c.root;
    // One allocation for a small communicator instead of one per doubling; capped, so that an
    // instance that never fills (a session of some of a large communicator's ranks, a garbage
    // size) holds no room it will not use.
    inst.members.reserve(static_cast<size_t>(std::clamp(c.comm_size, 1, 16)));
  } else if (inst.op != c.op || inst.comm_size != c.comm_size || inst.root_comm_rank != c.root) {
    inst.mismatched = true;
  }
  inst.members.push_back({world_rank, c.comm_rank, c.enter, c.exit, c.bytes, c.launched});
  // (An instance whose calls say no size waits for the end of the run.)
  if (inst.comm_size > 0 && static_cast<int>(inst.members.size()) >= inst.comm_size) {
    full_.push_back(Settle(std::move(inst)));
    open_.erase(key);
  }
}

std::vector<CollectiveInstance> CollectiveFold::TakeFull() { return std::exchange(full_, {}); }

std::vector<CollectiveInstance> CollectiveFold::Finish() {
  std::vector<CollectiveInstance> out = TakeFull();
  for (auto& [key, inst] : open_) out.push_back(Settle(std::move(inst)));
  open_.clear();
  return out;
}

void OrderInstances(std::vector<CollectiveInstance>* instances) {
  auto first_enter = [](const CollectiveInstance& i) {
    TimeNs t = i.members.front().enter;
    for (const auto& m : i.members) t = std::min(t, m.enter);
    return t;
  };
  std::sort(instances->begin(), instances->end(), [&](const auto& a, const auto& b) {
    return std::make_tuple(first_enter(a), a.comm_id, a.seq) <
           std::make_tuple(first_enter(b), b.comm_id, b.seq);
  });
}

std::vector<CollectiveInstance> MatchCollectives(const Session& session) {
  CollectiveFold fold;
  for (const RankData& rank : session.ranks) {
    for (const CollectiveRecord& c : rank.collectives) fold.Add(rank.id.rank, c);
  }
  std::vector<CollectiveInstance> out = fold.Finish();
  OrderInstances(&out);
  return out;
}

}  // namespace rankscope
