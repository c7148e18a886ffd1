// PMPI wrappers for point-to-point sends and receives. Blocking calls emit one P2PRecord each
// (MPI_Sendrecv and MPI_Sendrecv_replace one kSend and one kRecv over the same call). The
// non-blocking sends and MPI_Irecv emit a record for the post and leave a kWait record in the
// pending table for the Wait/Test call that completes them (pmpi_completion.cc).
//
// Send modes: MPI_Ssend/MPI_Issend and MPI_Bsend/MPI_Ibsend have kinds of their own (a
// synchronous send can always wait for its receiver, a buffered one never does); a ready send
// (MPI_Rsend/MPI_Irsend) is recorded as a standard one. A side whose peer is MPI_PROC_NULL
// moves no message and is not recorded.
#include "agent/inject/comm_registry.h"
#include "agent/inject/pmpi_common.h"
#include "agent/inject/record_sink.h"

namespace rankscope::inject {
namespace {

// Runs a blocking send `call` of `kind` and records it.
template <typename CallFn>
int BlockingSend(P2PKind kind, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                 CallFn call) {
  if (!Active() || NoMessage(dest)) return call();
  P2PRecord r = DescribeP2P(kind, dest, tag, comm, TypeBytes(count, type));
  r.enter = FastNow();
  int rc;
  {
    const OpenCallScope open(r, r.enter);
    rc = call();
  }
  r.exit = FastNow();
  if (rc == MPI_SUCCESS) EmitP2P(r);
  return rc;
}

// Posts a non-blocking send or receive `call` and tracks *request until it completes.
template <typename CallFn>
int Posted(P2PKind kind, int peer, int tag, MPI_Comm comm, int count, MPI_Datatype type,
           MPI_Request* request, CallFn call) {
  if (!Active() || NoMessage(peer)) return call();
  const CommInfo* info = nullptr;
  P2PRecord post = DescribeP2P(kind, peer, tag, comm, TypeBytes(count, type), &info);
  post.enter = FastNow();
  int rc = call();
  post.exit = FastNow();
  if (rc != MPI_SUCCESS) return rc;
  EmitP2P(post);
  if (request != nullptr) {
    PendingOp pending;
    pending.kind = PendingOp::Kind::kP2P;
    pending.p2p = post;
    pending.p2p.kind = P2PKind::kWait;
    pending.p2p.completed = kind;
    pending.comm = info;
    TrackRequest(*request, pending);
  }
  return rc;
}

// Runs a combined send-receive `call(status)` and records its send and its receive, both with
// the call's enter and exit.
template <typename CallFn>
int SendReceive(int dest, int sendtag, Bytes sent, int source, int recvtag, Bytes room,
                MPI_Comm comm, MPI_Status* status, CallFn call) {
  if (!Active()) return call(status);
  const CommInfo* info = nullptr;
  P2PRecord send = DescribeP2P(P2PKind::kSend, dest, sendtag, comm, sent, &info);
  P2PRecord recv = DescribeP2P(P2PKind::kRecv, source, recvtag, comm, room);
  // The status says who sent and how much arrived; borrow one if the caller ignores it.
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  send.enter = FastNow();
  int rc;
  {
    // A combined call blocks on its receive, unless that names no process.
    const OpenCallScope open(NoMessage(source) ? send : recv, send.enter);
    rc = call(st);
  }
  send.exit = FastNow();
  if (rc != MPI_SUCCESS) return rc;
  recv.enter = send.enter;
  recv.exit = send.exit;
  if (!NoMessage(dest)) EmitP2P(send);
  if (!NoMessage(source)) {
    ReadStatus(*st, info, &recv);
    EmitP2P(recv);
  }
  return rc;
}

}  // namespace
}  // namespace rankscope::inject

using rankscope::P2PKind;
namespace ri = rankscope::inject;

extern "C" int MPI_Send(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                        MPI_Comm comm) {
  return ri::BlockingSend(P2PKind::kSend, count, datatype, dest, tag, comm,
                          [&] { return PMPI_Send(buf, count, datatype, dest, tag, comm); });
}

extern "C" int MPI_Ssend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm) {
  return ri::BlockingSend(P2PKind::kSsend, count, datatype, dest, tag, comm,
                          [&] { return PMPI_Ssend(buf, count, datatype, dest, tag, comm); });
}

extern "C" int MPI_Bsend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm) {
  return ri::BlockingSend(P2PKind::kBsend, count, datatype, dest, tag, comm,
                          [&] { return PMPI_Bsend(buf, count, datatype, dest, tag, comm); });
}

extern "C" int MPI_Rsend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm) {
  return ri::BlockingSend(P2PKind::kSend, count, datatype, dest, tag, comm,
                          [&] { return PMPI_Rsend(buf, count, datatype, dest, tag, comm); });
}

extern "C" int MPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag,
                        MPI_Comm comm, MPI_Status* status) {
  if (!ri::Active() || ri::NoMessage(source)) {
    return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
  }
  const ri::CommInfo* info = nullptr;
  rankscope::P2PRecord r =
      ri::DescribeP2P(P2PKind::kRecv, source, tag, comm, ri::TypeBytes(count, datatype), &info);
  // The status says who sent and how much arrived; borrow one if the caller ignores it.
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  r.enter = rankscope::inject::FastNow();
  int rc;
  {
    const ri::OpenCallScope open(r, r.enter);
    rc = PMPI_Recv(buf, count, datatype, source, tag, comm, st);
  }
  r.exit = rankscope::inject::FastNow();
  if (rc != MPI_SUCCESS) return rc;
  ri::ReadStatus(*st, info, &r);
  ri::EmitP2P(r);
  return rc;
}

extern "C" int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                            int sendtag, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                            int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  const bool active = ri::Active();
  return ri::SendReceive(
      dest, sendtag, active ? ri::TypeBytes(sendcount, sendtype) : 0, source, recvtag,
      active ? ri::TypeBytes(recvcount, recvtype) : 0, comm, status, [&](MPI_Status* st) {
        return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                             recvtype, source, recvtag, comm, st);
      });
}

extern "C" int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype datatype, int dest,
                                    int sendtag, int source, int recvtag, MPI_Comm comm,
                                    MPI_Status* status) {
  const rankscope::Bytes bytes = ri::Active() ? ri::TypeBytes(count, datatype) : 0;
  return ri::SendReceive(dest, sendtag, bytes, source, recvtag, bytes, comm, status,
                         [&](MPI_Status* st) {
                           return PMPI_Sendrecv_replace(buf, count, datatype, dest, sendtag, source,
                                                        recvtag, comm, st);
                         });
}

extern "C" int MPI_Isend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(P2PKind::kIsend, dest, tag, comm, count, datatype, request,
                    [&] { return PMPI_Isend(buf, count, datatype, dest, tag, comm, request); });
}

extern "C" int MPI_Issend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(P2PKind::kIssend, dest, tag, comm, count, datatype, request,
                    [&] { return PMPI_Issend(buf, count, datatype, dest, tag, comm, request); });
}

extern "C" int MPI_Ibsend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(P2PKind::kIbsend, dest, tag, comm, count, datatype, request,
                    [&] { return PMPI_Ibsend(buf, count, datatype, dest, tag, comm, request); });
}

extern "C" int MPI_Irsend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(P2PKind::kIsend, dest, tag, comm, count, datatype, request,
                    [&] { return PMPI_Irsend(buf, count, datatype, dest, tag, comm, request); });
}

extern "C" int MPI_Irecv(void* buf, int count, MPI_Datatype datatype, int source, int tag,
                         MPI_Comm comm, MPI_Request* request) {
  return ri::Posted(P2PKind::kIrecv, source, tag, comm, count, datatype, request,
                    [&] { return PMPI_Irecv(buf, count, datatype, source, tag, comm, request); });
}
