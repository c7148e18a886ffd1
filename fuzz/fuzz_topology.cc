// The NCCL topology dump parser (model/topology) and its JSON writer (`inspect topo --json`):
// XML truncated, malformed, huge or in another encoding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "model/topology/topology.h"
#include "model/topology/topology_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto topo = rankscope::ParseNcclTopology(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.xml");
  if (topo.ok()) {
    rankscope::fuzz::CheckJsonRoundTrip(rankscope::TopologyToJson(topo.value()), "TopologyToJson");
  }
  return 0;
}
