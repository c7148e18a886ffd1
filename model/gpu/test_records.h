// A GPU record for tests of what reads them (header only; tests alone include it).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "core/records.h"
#include "core/time.h"

namespace rankscope {

// A record of `kind` with its correlation id, start and name, 5 ns long.
inline GpuActivityRecord TestGpuRecord(GpuActivityKind kind, uint32_t correlation, TimeNs start,
                                       std::string name) {
  GpuActivityRecord g;
  g.kind = kind;
  g.correlation_id = correlation;
  g.start = start;
  g.end = start + 5;
  g.name = std::move(name);
  return g;
}

}  // namespace rankscope
