// What the inject library knows about each MPI communicator it has seen: an id that every
// member computes identically without communicating, this process's rank and the size, and the
// per-communicator collective sequence counter. Together (id, seq) name one collective instance
// across ranks.
//
// The id hashes the MPI_COMM_WORLD ranks of the members in communicator-rank order. Two
// communicators over the same members in the same order (MPI_Comm_dup of one another) get the
// same id; their instances then share ids and the agent sees one sequence. Acceptable for now.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <span>

namespace rankscope::inject {

struct CommInfo {
  uint64_t id = 0;
  int32_t size = 0;
  int32_t rank = 0;  // this process's rank in the communicator
  // Collective calls this process has made on the communicator (blocking and non-blocking share
  // it; incremented at call or post time).
  std::atomic<uint64_t> next_seq{0};
};

// Returns the cached description of `comm`, computing it with local PMPI calls on first use.
// nullptr for MPI_COMM_NULL or when MPI cannot describe it (before MPI_Init, after
// MPI_Finalize); the caller then records nothing. Thread-safe; a repeat lookup on the same
// thread is a probe of a small per-thread cache, with no lock. The result lives until exit.
CommInfo* LookupComm(MPI_Comm comm);

// Drops the cached entry for `comm`. Call before MPI frees the handle: MPI may hand the same
// handle value to a later communicator.
void ForgetComm(MPI_Comm comm);

// The id of a communicator whose members have these MPI_COMM_WORLD ranks, in communicator rank
// order. Pure; exposed for tests.
uint64_t CommIdOf(std::span<const int> world_ranks);

}  // namespace rankscope::inject
