// What each level of `rankscope sweep` does (docs/sweep.md): one table for `sweep-node` (how long
// each check measures, how much NCCL moves per call) and for the sweep command (the levels it
// accepts, the pair checks' batches, a node's default time limit).
#pragma once

#include <cstddef>
#include <string_view>

#include "core/time.h"

namespace rankscope {

struct SweepLevel {
  std::string_view name;  // "quick", "standard", "deep"
  DurationNs memory;      // mem.bandwidth
  DurationNs flops;       // cpu.flops
  DurationNs gpu;         // per GPU check kind, shared by the node's GPUs
  size_t nccl_bytes;      // per all-reduce call, in the node and between pairs
  int pair_batches;       // rankscope-pingpong --batches
  double node_limit_s;    // a node's sweep step, unless --node-limit says otherwise
};

inline constexpr SweepLevel kSweepLevels[] = {
    {"quick", 1 * kNsPerSec, kNsPerSec / 2, 1 * kNsPerSec, size_t{64} << 20, 5, 120},
    {"standard", 3 * kNsPerSec, 2 * kNsPerSec, 3 * kNsPerSec, size_t{256} << 20, 20, 300},
    {"deep", 10 * kNsPerSec, 5 * kNsPerSec, 10 * kNsPerSec, size_t{1} << 30, 100, 900},
};

// The level named `name`, nullptr for an unknown one.
inline const SweepLevel* FindSweepLevel(std::string_view name) {
  for (const SweepLevel& level : kSweepLevels) {
    if (level.name == name) return &level;
  }
  return nullptr;
}

}  // namespace rankscope
