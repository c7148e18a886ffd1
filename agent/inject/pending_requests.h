// Non-blocking MPI operations between their post (MPI_Isend, MPI_Iallreduce, ...) and the
// Wait/Test call that completes them, keyed by request handle. The completing call may run on
// another thread, so the table is shared; it is fixed-size and lock-free so posting and
// completing never allocate or block.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/records.h"
#include "core/time.h"

namespace rankscope::inject {

struct CommInfo;  // comm_registry.h

// What to report when the request completes.
struct PendingOp {
  enum class Kind : uint8_t { kCollective, kP2P };
  Kind kind = Kind::kCollective;
  // kCollective: the record to emit, all but `exit`.
  CollectiveRecord collective;
  // kP2P: the kWait record to emit, all but enter/exit/tid (and, for receives, peer, tag,
  // bytes and world_peer when the completing call's status says).
  P2PRecord p2p;
  // kP2P: the communicator, to translate a source read from the status into a world rank
  // (CommInfo objects live until exit); null when it could not be described.
  const CommInfo* comm = nullptr;
  // Time spent so far inside Wait/Test calls that tried this request and did not complete it:
  // a busy MPI_Test loop is waiting, and the completing kWait record starts that much earlier.
  DurationNs tried = 0;
};

// A map from request handle to PendingOp with a fixed number of slots. A key lives in one of
// kProbe slots after its home slot; when all of those are taken, Insert fails (the caller counts
// the operation as dropped). Thread-safe; one key must not be inserted or taken by two threads
// at once (MPI forbids completing one request on two threads).
class PendingTable {
 public:
  static constexpr size_t kSlots = 4096;
  static constexpr size_t kProbe = 32;

  constexpr PendingTable() = default;
  PendingTable(const PendingTable&) = delete;
  PendingTable& operator=(const PendingTable&) = delete;

  // Stores `op` under `key` (nonzero), replacing a stale entry with the same key: a handle is
  // live only once, so an old entry means its completion was never seen. False if full.
  bool Insert(uint64_t key, const PendingOp& op);

  // Removes the op stored under `key` into *op. False if there is none.
  bool Take(uint64_t key, PendingOp* op);

  // True when nothing is pending; lets Wait/Test skip all lookups.
  bool empty() const { return size_.load(std::memory_order_relaxed) == 0; }

 private:
  enum : uint32_t { kFree = 0, kBusy = 1, kReady = 2 };
  struct Slot {
    std::atomic<uint32_t> state{kFree};
    std::atomic<uint64_t> key{0};  // atomic only so a racing look at it is well defined
    PendingOp op;
  };

  static size_t Home(uint64_t key);

  Slot slots_[kSlots];
  std::atomic<int64_t> size_{0};
};

}  // namespace rankscope::inject
