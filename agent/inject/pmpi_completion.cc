// PMPI wrappers for the calls that complete non-blocking operations: MPI_Wait{,all,any,some},
// MPI_Test{,all,any,some}, and MPI_Request_free.
//
// Before the call, the pending operations of the requests it may complete are taken out of the
// table (after it, a completed request's handle is already MPI_REQUEST_NULL, and another thread
// may have been handed the same handle value). After the call, a request whose handle changed
// has completed: its record is emitted with this call's exit time. The others go back, with
// the time this call spent on them added to their PendingOp::tried, so the kWait record of a
// request completed after a loop of MPI_Test calls covers the time spent polling it.
#include <new>
#include <optional>

#include "agent/inject/comm_registry.h"
#include "agent/inject/pmpi_common.h"
#include "agent/inject/record_sink.h"

namespace rankscope::inject {
namespace {

// Statuses we lend MPI when the caller passes MPI_STATUSES_IGNORE, so completed receives can
// still report their source; beyond this many requests such receives report the posted peer.
constexpr int kLentStatuses = 16;

void EmitCompleted(const PendingOp& op, const MPI_Status* status, TimeNs enter, TimeNs exit,
                   TimeNs spin_start) {
  if (op.kind == PendingOp::Kind::kCollective) {
    CollectiveRecord r = op.collective;
    r.exit = exit;
    EmitCollective(r);
    return;
  }
  P2PRecord r = op.p2p;
  // Waiting started when the first Test/Wait on this request did: enter is pulled back by the
  // time the earlier, unsuccessful calls spent inside MPI (not by the gaps between them).
  r.enter = exit - (op.tried + (exit - enter));
  r.exit = exit;
  r.spin_start = spin_start;
  r.tid = ThreadId();
  if (r.completed == P2PKind::kIrecv && status != nullptr) {
    r.peer = status->MPI_SOURCE;
    r.world_peer = WorldPeerOf(op.comm, status->MPI_SOURCE);
    r.tag = status->MPI_TAG;
    int received = 0;
    if (PMPI_Get_count(status, ByteType(), &received) == MPI_SUCCESS && received != MPI_UNDEFINED) {
      r.bytes = received;
    }
  }
  EmitP2P(r);
}

// The spin start of a call over [enter, exit] that completed one of our requests (where the
// thread's polling before it began); otherwise 0, and a failed poll extends the thread's run
// (a loop polling for `first`, the first request it claimed) while anything else ends it.
TimeNs SpinStartOrPoll(bool completed_any, bool failed_poll, TimeNs enter, TimeNs exit,
                       const PendingOp* first) {
  if (completed_any) return SpinStart(enter);
  if (failed_poll) {
    const TimeNs start = NotePollFailed(enter, exit);
    if (first != nullptr && !StillPolling(start, exit)) {
      if (first->kind == PendingOp::Kind::kCollective) {
        NotePolling(first->collective, start, exit);
      } else {
        NotePolling(first->p2p, start, exit);
      }
    }
  } else {
    SpinStart(enter);
  }
  return 0;
}

// The pending operations taken for one Wait/Test call. Storage for a few is inline (left
// uninitialised: this runs on every Wait); more are allocated only for large request arrays.
class Claims {
 public:
  explicit Claims(int max_requests) : max_(max_requests) {}
  ~Claims() { delete[] heap_; }
  Claims(const Claims&) = delete;
  Claims& operator=(const Claims&) = delete;

  // Takes the pending operation of requests[0..n) that are tracked.
  void TakeAll(const MPI_Request* requests, int n) {
    if (requests == nullptr) return;
    for (int i = 0; i < n; ++i) Take(i, requests[i]);
  }

  void Take(int index, MPI_Request request) {
    if (request == MPI_REQUEST_NULL) return;
    Claim* slot = NextSlot();
    if (slot == nullptr) return;  // cannot hold it: leave it in the table, untouched
    if (!Pending().Take(RequestKey(request), &slot->op)) return;
    slot->index = index;
    slot->request = request;
    if (slot->op.kind == PendingOp::Kind::kP2P && slot->op.p2p.completed == P2PKind::kIrecv) {
      has_receive_ = true;
    }
    ++size_;
  }

  bool empty() const { return size_ == 0; }
  bool has_receive() const { return has_receive_; }

  // Marks the control page's open call (OpenCallScope) as a wait on the first claimed operation:
  // the collective, or the message to or from its peer. Blocking waits only.
  void Open(std::optional<OpenCallScope>* open, TimeNs enter) {
    if (size_ == 0) return;
    const PendingOp& op = data()[0].op;
    if (op.kind == PendingOp::Kind::kCollective) {
      open->emplace(op.collective, enter);
    } else {
      open->emplace(op.p2p, enter);
    }
  }

  // Emits the completed operations and returns the others to the table. `after[i]` is request
  // i's handle after the call; status_of(i) its status, or nullptr when unknown. `poll`: the call
  // returns whether or not anything completed (MPI_Test*); one that completed none of our
  // requests then extends the thread's polling run. A blocking call that completed none of them
  // (an untracked request, an error) ends the run instead.
  template <typename StatusOf>
  void Settle(const MPI_Request* after, TimeNs enter, TimeNs exit, bool poll, int rc,
              StatusOf status_of) {
    Claim* claims = data();
    bool completed_any = false;
    for (int k = 0; k < size_ && !completed_any; ++k) {
      completed_any = after[claims[k].index] != claims[k].request;
    }
    // Asked before the completed records are emitted (they would end the run themselves).
    const TimeNs spin_start = SpinStartOrPoll(completed_any, poll && rc == MPI_SUCCESS, enter, exit,
                                              size_ > 0 ? &claims[0].op : nullptr);
    for (int k = 0; k < size_; ++k) {
      Claim& c = claims[k];
      if (after[c.index] != c.request) {
        EmitCompleted(c.op, status_of(c.index), enter, exit, spin_start);
        continue;
      }
      c.op.tried += exit - enter;
      if (!Pending().Insert(RequestKey(c.request), c.op)) CountDropped(1);
    }
    size_ = 0;
  }

 private:
  struct Claim {
    int index;
    MPI_Request request;
    PendingOp op;
  };
  static constexpr int kInline = 4;

  Claim* data() { return heap_ != nullptr ? heap_ : reinterpret_cast<Claim*>(inline_); }

  Claim* NextSlot() {
    if (size_ < kInline) return data() + size_;
    if (heap_ == nullptr) {
      heap_ = new (std::nothrow) Claim[static_cast<size_t>(max_)];
      if (heap_ == nullptr) return nullptr;
      Claim* inl = reinterpret_cast<Claim*>(inline_);
      for (int k = 0; k < size_; ++k) heap_[k] = inl[k];
    }
    return size_ < max_ ? heap_ + size_ : nullptr;
  }

  int max_;
  int size_ = 0;
  bool has_receive_ = false;
  Claim* heap_ = nullptr;
  alignas(Claim) unsigned char inline_[kInline * sizeof(Claim)];
};

// True when a Wait/Test call needs no bookkeeping at all.
bool NothingToTrack() { return !Active() || Pending().empty(); }

}  // namespace
}  // namespace rankscope::inject

namespace ri = rankscope::inject;
using rankscope::TimeNs;
using rankscope::inject::FastNow;

extern "C" int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (ri::NothingToTrack() || request == nullptr) return PMPI_Wait(request, status);
  ri::Claims claims(1);
  claims.Take(0, *request);
  if (claims.empty()) return PMPI_Wait(request, status);
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  TimeNs enter = FastNow();
  std::optional<ri::OpenCallScope> open;
  claims.Open(&open, enter);
  int rc = PMPI_Wait(request, st);
  open.reset();
  claims.Settle(request, enter, FastNow(), false, rc, [&](int) { return st; });
  return rc;
}

extern "C" int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (ri::NothingToTrack() || request == nullptr) return PMPI_Test(request, flag, status);
  ri::Claims claims(1);
  claims.Take(0, *request);
  if (claims.empty()) return PMPI_Test(request, flag, status);
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  TimeNs enter = FastNow();
  int rc = PMPI_Test(request, flag, st);
  claims.Settle(request, enter, FastNow(), true, rc, [&](int) { return st; });
  return rc;
}

extern "C" int MPI_Waitany(int count, MPI_Request array_of_requests[], int* index,
                           MPI_Status* status) {
  if (ri::NothingToTrack()) return PMPI_Waitany(count, array_of_requests, index, status);
  ri::Claims claims(count);
  claims.TakeAll(array_of_requests, count);
  if (claims.empty()) return PMPI_Waitany(count, array_of_requests, index, status);
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  TimeNs enter = FastNow();
  std::optional<ri::OpenCallScope> open;
  claims.Open(&open, enter);
  int rc = PMPI_Waitany(count, array_of_requests, index, st);
  open.reset();
  claims.Settle(array_of_requests, enter, FastNow(), false, rc, [&](int) { return st; });
  return rc;
}

extern "C" int MPI_Testany(int count, MPI_Request array_of_requests[], int* index, int* flag,
                           MPI_Status* status) {
  if (ri::NothingToTrack()) return PMPI_Testany(count, array_of_requests, index, flag, status);
  ri::Claims claims(count);
  claims.TakeAll(array_of_requests, count);
  if (claims.empty()) return PMPI_Testany(count, array_of_requests, index, flag, status);
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  TimeNs enter = FastNow();
  int rc = PMPI_Testany(count, array_of_requests, index, flag, st);
  claims.Settle(array_of_requests, enter, FastNow(), true, rc, [&](int) { return st; });
  return rc;
}

namespace rankscope::inject {
namespace {

// Runs an all-or-some completion `call(statuses)` over `count` requests, lending statuses when
// the caller ignores them and a receive needs its source. `status_index(i)` maps request i to
// its position in the status array (or -1).
template <typename CallFn, typename StatusIndexFn>
int CompleteMany(int count, MPI_Request requests[], MPI_Status statuses[], bool poll, CallFn call,
                 StatusIndexFn status_index) {
  if (NothingToTrack()) return call(statuses);
  Claims claims(count);
  claims.TakeAll(requests, count);
  if (claims.empty()) return call(statuses);
  MPI_Status lent[kLentStatuses];
  MPI_Status* st = statuses;
  if (statuses == MPI_STATUSES_IGNORE && claims.has_receive() && count <= kLentStatuses) {
    st = lent;
  }
  TimeNs enter = FastNow();
  std::optional<OpenCallScope> open;
  if (!poll) claims.Open(&open, enter);
  int rc = call(st);
  open.reset();
  TimeNs exit = FastNow();
  claims.Settle(requests, enter, exit, poll, rc, [&](int i) -> const MPI_Status* {
    if (st == MPI_STATUSES_IGNORE) return nullptr;
    int k = status_index(i);
    return k < 0 ? nullptr : &st[k];
  });
  return rc;
}

}  // namespace
}  // namespace rankscope::inject

extern "C" int MPI_Waitall(int count, MPI_Request array_of_requests[],
                           MPI_Status* array_of_statuses) {
  return ri::CompleteMany(
      count, array_of_requests, array_of_statuses, false,
      [&](MPI_Status* st) { return PMPI_Waitall(count, array_of_requests, st); },
      [](int i) { return i; });
}

extern "C" int MPI_Testall(int count, MPI_Request array_of_requests[], int* flag,
                           MPI_Status array_of_statuses[]) {
  return ri::CompleteMany(
      count, array_of_requests, array_of_statuses, true,
      [&](MPI_Status* st) { return PMPI_Testall(count, array_of_requests, flag, st); },
      [](int i) { return i; });
}

extern "C" int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int* outcount,
                            int array_of_indices[], MPI_Status array_of_statuses[]) {
  return ri::CompleteMany(
      incount, array_of_requests, array_of_statuses, false,
      [&](MPI_Status* st) {
        return PMPI_Waitsome(incount, array_of_requests, outcount, array_of_indices, st);
      },
      [&](int i) {
        for (int k = 0; k < *outcount && *outcount != MPI_UNDEFINED; ++k) {
          if (array_of_indices[k] == i) return k;
        }
        return -1;
      });
}

extern "C" int MPI_Testsome(int incount, MPI_Request array_of_requests[], int* outcount,
                            int array_of_indices[], MPI_Status array_of_statuses[]) {
  return ri::CompleteMany(
      incount, array_of_requests, array_of_statuses, true,
      [&](MPI_Status* st) {
        return PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices, st);
      },
      [&](int i) {
        for (int k = 0; k < *outcount && *outcount != MPI_UNDEFINED; ++k) {
          if (array_of_indices[k] == i) return k;
        }
        return -1;
      });
}

extern "C" int MPI_Request_free(MPI_Request* request) {
  if (!ri::NothingToTrack() && request != nullptr && *request != MPI_REQUEST_NULL) {
    rankscope::inject::PendingOp dropped;
    ri::Pending().Take(ri::RequestKey(*request), &dropped);  // it will never be waited for
  }
  return PMPI_Request_free(request);
}
