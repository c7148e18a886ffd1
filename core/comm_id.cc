#include "core/comm_id.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace rankscope {

uint64_t WorldCommId(int world_size) {
  std::vector<int> ranks(static_cast<size_t>(std::max(world_size, 0)));
  std::iota(ranks.begin(), ranks.end(), 0);
  return CommIdOf(ranks);
}

}  // namespace rankscope
