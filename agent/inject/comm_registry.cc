#include "agent/inject/comm_registry.h"

#include <pthread.h>

#include <algorithm>
#include <new>
#include <unordered_map>
#include <vector>

#include "agent/inject/pmpi_common.h"

namespace rankscope::inject {
namespace {

// Every communicator described so far, by handle. Leaked on purpose (outlives static
// destructors); CommInfo objects are never freed because per-thread caches may point at them.
struct Registry {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  std::unordered_map<MPI_Comm, CommInfo*> by_handle;
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// Bumped by ForgetComm so every thread drops its cache before trusting a handle again.
std::atomic<uint64_t> g_generation{0};

// A small per-thread cache in front of the registry, so a hit takes no lock.
constexpr int kCacheEntries = 8;
struct CacheEntry {
  MPI_Comm comm;
  CommInfo* info;
};
thread_local CacheEntry t_cache[kCacheEntries];
thread_local uint64_t t_cache_generation = 0;
thread_local unsigned t_cache_next = 0;

uint64_t Mix(uint64_t h, uint64_t v) { return FnvMix(h, v); }

// World ranks of `group`'s members in group order; empty on failure.
std::vector<int> WorldRanksOf(MPI_Group group, MPI_Group world) {
  int n = 0;
  if (PMPI_Group_size(group, &n) != MPI_SUCCESS || n <= 0) return {};
  std::vector<int> local(static_cast<size_t>(n));
  std::vector<int> global(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) local[static_cast<size_t>(i)] = i;
  if (PMPI_Group_translate_ranks(group, n, local.data(), world, global.data()) != MPI_SUCCESS) {
    return {};
  }
  return global;
}

// Describes `comm` with local (non-communicating) PMPI calls; `salt` (0 = none) is mixed into
// the id. nullptr if MPI cannot.
CommInfo* Describe(MPI_Comm comm, uint64_t salt) {
  int initialized = 0;
  int finalized = 0;
  if (PMPI_Initialized(&initialized) != MPI_SUCCESS || !initialized) return nullptr;
  if (PMPI_Finalized(&finalized) != MPI_SUCCESS || finalized) return nullptr;

  int size = 0;
  int rank = 0;
  int is_inter = 0;
  if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS || PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
      PMPI_Comm_test_inter(comm, &is_inter) != MPI_SUCCESS) {
    return nullptr;
  }
  MPI_Group world = MPI_GROUP_NULL;
  MPI_Group group = MPI_GROUP_NULL;
  if (PMPI_Comm_group(WorldComm(), &world) != MPI_SUCCESS) return nullptr;
  if (PMPI_Comm_group(comm, &group) != MPI_SUCCESS) {
    PMPI_Group_free(&world);
    return nullptr;
  }
  std::vector<int> members = WorldRanksOf(group, world);
  std::vector<int> peers = members;  // point-to-point peers of an intracommunicator: its group
  if (is_inter) {
    // The two sides see local and remote swapped; the sorted union reads the same on both.
    MPI_Group remote = MPI_GROUP_NULL;
    peers.clear();
    if (PMPI_Comm_remote_group(comm, &remote) == MPI_SUCCESS) {
      std::vector<int> other = WorldRanksOf(remote, world);
      members.insert(members.end(), other.begin(), other.end());
      peers = std::move(other);  // an intercommunicator's peers are in the remote group
      PMPI_Group_free(&remote);
    }
    std::sort(members.begin(), members.end());
    members.push_back(-1);  // keep apart from an intracommunicator over the same processes
  }
  PMPI_Group_free(&group);
  PMPI_Group_free(&world);
  if (members.empty()) return nullptr;

  auto* info = new (std::nothrow) CommInfo;
  if (info == nullptr) return nullptr;
  info->id = salt == 0 ? CommIdOf(members) : Mix(CommIdOf(members), salt);
  info->size = size;
  info->rank = rank;
  try {
    // MPI_UNDEFINED (a process outside MPI_COMM_WORLD, after a spawn) is no world rank.
    info->peer_world.reserve(peers.size());
    for (int w : peers) info->peer_world.push_back(w < 0 ? kUnknownWorldPeer : w);
  } catch (...) {
    info->peer_world.clear();  // out of memory: peers stay unplaced, the id is still right
  }
  return info;
}

CommInfo* LookupSlow(MPI_Comm comm) {
  Registry& reg = registry();
  pthread_mutex_lock(&reg.mu);
  auto it = reg.by_handle.find(comm);
  CommInfo* found = it == reg.by_handle.end() ? nullptr : it->second;
  pthread_mutex_unlock(&reg.mu);
  if (found != nullptr) return found;

  // Describe outside the lock: it calls into MPI.
  CommInfo* fresh = Describe(comm, 0);
  if (fresh == nullptr) return nullptr;
  CommInfo* result = nullptr;
  pthread_mutex_lock(&reg.mu);
  try {
    auto [pos, inserted] = reg.by_handle.emplace(comm, fresh);
    result = pos->second;
    if (inserted) fresh = nullptr;
  } catch (...) {
    // Out of memory: describe this communicator again next time.
    result = fresh;
    fresh = nullptr;
  }
  pthread_mutex_unlock(&reg.mu);
  delete fresh;  // another thread described it first
  return result;
}

// Describes a newly made communicator with its salt and replaces whatever the registry held for
// that handle value (MPI may reuse a freed handle).
void RegisterSalted(MPI_Comm child, uint64_t salt) {
  CommInfo* fresh = Describe(child, salt);
  if (fresh == nullptr) return;
  Registry& reg = registry();
  pthread_mutex_lock(&reg.mu);
  try {
    reg.by_handle[child] = fresh;  // an old CommInfo stays allocated: caches may point at it
    fresh = nullptr;
  } catch (...) {
  }
  pthread_mutex_unlock(&reg.mu);
  delete fresh;
  g_generation.fetch_add(1, std::memory_order_acq_rel);
}

void AtForkPrepare() { pthread_mutex_lock(&registry().mu); }
void AtForkRelease() { pthread_mutex_unlock(&registry().mu); }

__attribute__((constructor)) void RegisterForkHandlers() {
  registry();
  pthread_atfork(AtForkPrepare, AtForkRelease, AtForkRelease);
}

}  // namespace

CommInfo* LookupComm(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return nullptr;
  uint64_t generation = g_generation.load(std::memory_order_acquire);
  if (generation != t_cache_generation) {
    for (CacheEntry& e : t_cache) e.info = nullptr;
    t_cache_generation = generation;
  }
  for (const CacheEntry& e : t_cache) {
    if (e.info != nullptr && e.comm == comm) return e.info;
  }
  CommInfo* info = LookupSlow(comm);
  if (info != nullptr) {
    t_cache[t_cache_next % kCacheEntries] = CacheEntry{comm, info};
    ++t_cache_next;
  }
  return info;
}

void NoteCommCreated(MPI_Comm parent, MPI_Comm child) {
  CommInfo* p = LookupComm(parent);
  if (p == nullptr) return;
  const uint64_t index = p->children.fetch_add(1, std::memory_order_relaxed);
  if (child == MPI_COMM_NULL) return;
  RegisterSalted(child, Mix(Mix(p->id, 0x636f6d6dULL /* "comm" */), index + 1));
}

void NoteCommCreatedFromGroup(MPI_Comm parent, MPI_Comm child, int tag) {
  CommInfo* p = LookupComm(parent);
  if (p == nullptr || child == MPI_COMM_NULL) return;
  RegisterSalted(child, Mix(Mix(p->id, 0x67726f75ULL /* "grou" */), static_cast<uint32_t>(tag)));
}

void ForgetComm(MPI_Comm comm) {
  Registry& reg = registry();
  pthread_mutex_lock(&reg.mu);
  reg.by_handle.erase(comm);  // the CommInfo itself stays: caches may still point at it
  pthread_mutex_unlock(&reg.mu);
  g_generation.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace rankscope::inject
