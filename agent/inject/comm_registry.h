// What the inject library knows about each MPI communicator it has seen: an id that every
// member computes identically without communicating, this process's rank and the size, and the
// per-communicator collective sequence counter. Together (id, seq) name one collective instance
// across ranks.
//
// The id hashes the MPI_COMM_WORLD ranks of the members in communicator-rank order, salted for
// communicators made by a constructor we wrap (dup, split, create, cartesian/graph, merge) with
// the parent's id and how many communicators the parent had made before: constructors are
// collective over the parent, so every member counts the same. MPI_Comm_dup(MPI_COMM_WORLD)
// therefore gets its own id, as libraries that dup the world communicator need.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "core/comm_id.h"
#include "core/records.h"

namespace rankscope::inject {

struct CommInfo {
  uint64_t id = 0;
  int32_t size = 0;
  int32_t rank = 0;  // this process's rank in the communicator
  // Collective calls this process has made on the communicator (blocking and non-blocking share
  // it; incremented at call or post time).
  std::atomic<uint64_t> next_seq{0};
  // Communicators made from this one so far (the salt of the next child's id).
  std::atomic<uint64_t> children{0};
  // MPI_COMM_WORLD rank of each rank a point-to-point call on this communicator names (its
  // group; for an intercommunicator, the remote group), translated once when it is described:
  // the coordinator can place peers only as world ranks, and a communicator used only for
  // point-to-point (a cartesian halo exchange) gives it no other way. Set before the CommInfo
  // is published, never changed after.
  std::vector<int32_t> peer_world;
};

// The MPI_COMM_WORLD rank of `peer`, a rank of `info`'s communicator; kUnknownWorldPeer for a
// null info, a negative peer (MPI_PROC_NULL, MPI_ANY_SOURCE) or one out of range. No locks.
inline int32_t WorldPeerOf(const CommInfo* info, int peer) {
  if (info == nullptr || peer < 0 || static_cast<size_t>(peer) >= info->peer_world.size()) {
    return kUnknownWorldPeer;
  }
  return info->peer_world[static_cast<size_t>(peer)];
}

// Returns the cached description of `comm`, computing it with local PMPI calls on first use.
// nullptr for MPI_COMM_NULL or when MPI cannot describe it (before MPI_Init, after
// MPI_Finalize); the caller then records nothing. Thread-safe; a repeat lookup on the same
// thread is a probe of a small per-thread cache, with no lock. The result lives until exit.
CommInfo* LookupComm(MPI_Comm comm);

// Records that a collective constructor over `parent` produced `child` (MPI_COMM_NULL on ranks
// that got none, e.g. MPI_UNDEFINED in a split: they still count the construction).
// MPI_Comm_create_group is collective over its group only, so it is salted by the parent's id
// and its tag instead of the parent's counter.
void NoteCommCreated(MPI_Comm parent, MPI_Comm child);
void NoteCommCreatedFromGroup(MPI_Comm parent, MPI_Comm child, int tag);

// Drops the cached entry for `comm`. Call before MPI frees the handle: MPI may hand the same
// handle value to a later communicator.
void ForgetComm(MPI_Comm comm);

// The id of a communicator whose members have these MPI_COMM_WORLD ranks (core/comm_id.h).
using rankscope::CommIdOf;

}  // namespace rankscope::inject
