// PMPI wrappers for point-to-point calls. Blocking calls emit one P2PRecord each. MPI_Isend and
// MPI_Irecv emit a record for the post and leave a kWait record in the pending table for the
// Wait/Test call that completes them (pmpi_completion.cc).
#include "agent/inject/comm_registry.h"
#include "agent/inject/pmpi_common.h"
#include "agent/inject/record_sink.h"

namespace rankscope::inject {
namespace {

uint64_t CommId(MPI_Comm comm) {
  CommInfo* info = LookupComm(comm);
  return info == nullptr ? 0 : info->id;
}

P2PRecord Describe(P2PKind kind, int peer, int tag, MPI_Comm comm, Bytes bytes) {
  P2PRecord r;
  r.kind = kind;
  r.completed = kind;
  r.peer = peer == MPI_ANY_SOURCE ? -1 : peer;
  r.tag = tag;
  r.comm_id = CommId(comm);
  r.bytes = bytes;
  r.tid = ThreadId();
  return r;
}

// Posts a non-blocking send or receive `call` and tracks *request until it completes.
template <typename CallFn>
int Posted(P2PKind kind, int peer, int tag, MPI_Comm comm, Bytes bytes, MPI_Request* request,
           CallFn call) {
  if (!Active()) return call();
  P2PRecord post = Describe(kind, peer, tag, comm, bytes);
  post.enter = MonotonicNow();
  int rc = call();
  post.exit = MonotonicNow();
  if (rc != MPI_SUCCESS) return rc;
  EmitP2P(post);
  if (request != nullptr) {
    PendingOp pending;
    pending.kind = PendingOp::Kind::kP2P;
    pending.p2p = post;
    pending.p2p.kind = P2PKind::kWait;
    pending.p2p.completed = kind;
    TrackRequest(*request, pending);
  }
  return rc;
}

}  // namespace
}  // namespace rankscope::inject

using rankscope::P2PKind;
namespace ri = rankscope::inject;

extern "C" int MPI_Send(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                        MPI_Comm comm) {
  if (!ri::Active()) return PMPI_Send(buf, count, datatype, dest, tag, comm);
  rankscope::P2PRecord r =
      ri::Describe(P2PKind::kSend, dest, tag, comm, ri::TypeBytes(count, datatype));
  r.enter = rankscope::MonotonicNow();
  int rc = PMPI_Send(buf, count, datatype, dest, tag, comm);
  r.exit = rankscope::MonotonicNow();
  if (rc == MPI_SUCCESS) ri::EmitP2P(r);
  return rc;
}

extern "C" int MPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag,
                        MPI_Comm comm, MPI_Status* status) {
  if (!ri::Active()) return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
  rankscope::P2PRecord r =
      ri::Describe(P2PKind::kRecv, source, tag, comm, ri::TypeBytes(count, datatype));
  // The status says who sent and how much arrived; borrow one if the caller ignores it.
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  r.enter = rankscope::MonotonicNow();
  int rc = PMPI_Recv(buf, count, datatype, source, tag, comm, st);
  r.exit = rankscope::MonotonicNow();
  if (rc != MPI_SUCCESS) return rc;
  r.peer = st->MPI_SOURCE;
  r.tag = st->MPI_TAG;
  int received = 0;
  if (PMPI_Get_count(st, ri::ByteType(), &received) == MPI_SUCCESS && received != MPI_UNDEFINED) {
    r.bytes = received;
  }
  ri::EmitP2P(r);
  return rc;
}

extern "C" int MPI_Isend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(P2PKind::kIsend, dest, tag, comm,
                    ri::Active() ? ri::TypeBytes(count, datatype) : 0, request,
                    [&] { return PMPI_Isend(buf, count, datatype, dest, tag, comm, request); });
}

extern "C" int MPI_Irecv(void* buf, int count, MPI_Datatype datatype, int source, int tag,
                         MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(P2PKind::kIrecv, source, tag, comm,
                    ri::Active() ? ri::TypeBytes(count, datatype) : 0, request,
                    [&] { return PMPI_Irecv(buf, count, datatype, source, tag, comm, request); });
}
