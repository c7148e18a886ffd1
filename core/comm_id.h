// The id of an MPI communicator, computed the same way by every member without communicating
// (the inject library, agent/inject/comm_registry) and by the coordinator (which needs
// MPI_COMM_WORLD's id to read point-to-point peers on it as world ranks). FNV-1a over the
// members' MPI_COMM_WORLD ranks in communicator-rank order. Pure (comm_id.cc).
#pragma once

#include <cstdint>
#include <span>

namespace rankscope {

inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
inline constexpr uint64_t kFnvPrime = 0x100000001b3ULL;

// Folds the 8 bytes of v into the FNV-1a hash h.
constexpr uint64_t FnvMix(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= kFnvPrime;
  }
  return h;
}

// The id of a communicator whose members have these MPI_COMM_WORLD ranks, in communicator rank
// order (not salted: see comm_registry.h for communicators made by dup/split).
inline uint64_t CommIdOf(std::span<const int> world_ranks) {
  uint64_t h = FnvMix(kFnvOffset, world_ranks.size());
  for (int r : world_ranks) h = FnvMix(h, static_cast<uint32_t>(r));
  return h;
}

// MPI_COMM_WORLD's id in a job of `world_size` ranks.
uint64_t WorldCommId(int world_size);

}  // namespace rankscope
