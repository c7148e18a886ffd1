// PMPI wrappers for probes and matched receives: MPI_Probe, MPI_Iprobe, MPI_Mprobe,
// MPI_Improbe, MPI_Mrecv, MPI_Imrecv.
//
// A probe is a receive-side wait for a message (P2PKind::kProbe, with the message's source, tag
// and size). A blocking probe is recorded as its call. Codes that poll with MPI_Iprobe wait in
// a loop of unsuccessful calls: those emit nothing, but their time inside MPI accumulates per
// thread, and the successful call emits one record that ends at its exit and is as long as all
// the probe calls since the previous success together.
//
// A matched probe hands out a message handle, which names no communicator; the receive the
// message is later given to (MPI_Mrecv: kRecv; MPI_Imrecv: kIrecv plus the kWait of its
// request) takes the description of the message from the pending table, keyed by the handle.
#include <cstring>

#include "agent/inject/comm_registry.h"
#include "agent/inject/pmpi_common.h"
#include "agent/inject/record_sink.h"

namespace rankscope::inject {
namespace {

// Time this thread spent inside unsuccessful MPI_Iprobe/MPI_Improbe calls since its last
// successful one.
thread_local DurationNs t_probing = 0;

uint64_t MessageKey(MPI_Message message) {
  static_assert(sizeof(MPI_Message) <= sizeof(uint64_t));
  uint64_t key = 0;
  std::memcpy(&key, &message, sizeof(message));
  return key;
}

// True for the handles that name no message to receive.
bool NoMessageHandle(MPI_Message message) {
  return message == MPI_MESSAGE_NULL || message == MPI_MESSAGE_NO_PROC;
}

// The probe record for a successful probe of `source`/`tag` on `comm`, as its status says.
P2PRecord Probed(int source, int tag, MPI_Comm comm, const MPI_Status& status, TimeNs enter,
                 TimeNs exit, const CommInfo** info) {
  P2PRecord r = DescribeP2P(P2PKind::kProbe, source, tag, comm, 0, info);
  ReadStatus(status, *info, &r);
  r.enter = enter;
  r.exit = exit;
  return r;
}

// Emits the record of a successful probe, and remembers which message a matched probe took so
// its receive knows the communicator.
void ProbeSucceeded(const P2PRecord& probe, const CommInfo* info, MPI_Message* message) {
  if (NoMessage(probe.peer)) return;
  EmitP2P(probe);
  if (message == nullptr || NoMessageHandle(*message)) return;
  PendingOp op;
  op.kind = PendingOp::Kind::kP2P;
  op.p2p = probe;
  op.p2p.kind = P2PKind::kRecv;
  op.p2p.completed = P2PKind::kRecv;
  op.p2p.spin_start = 0;  // the receive's own call is not a poll
  op.comm = info;
  if (!Pending().Insert(MessageKey(*message), op)) CountDropped(1);
}

// Runs a polling probe `call(flag, status)` (MPI_Iprobe, MPI_Improbe).
template <typename CallFn>
int Polled(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status, MPI_Message* message,
           CallFn call) {
  if (!Active() || NoMessage(source) || flag == nullptr) return call(status);
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  const TimeNs enter = FastNow();
  int rc = call(st);
  const TimeNs exit = FastNow();
  if (rc != MPI_SUCCESS) return rc;
  t_probing += exit - enter;
  if (!*flag) {
    NotePollFailed(enter, exit, [&] { return DescribeP2P(P2PKind::kProbe, source, tag, comm, 0); });
    return rc;
  }
  const TimeNs since = exit - t_probing;
  t_probing = 0;
  const CommInfo* info = nullptr;
  P2PRecord probe = Probed(source, tag, comm, *st, since, exit, &info);
  probe.spin_start = SpinStart(enter);
  ProbeSucceeded(probe, info, message);
  return rc;
}

// Runs a blocking probe `call(status)` (MPI_Probe, MPI_Mprobe).
template <typename CallFn>
int Blocking(int source, int tag, MPI_Comm comm, MPI_Status* status, MPI_Message* message,
             CallFn call) {
  if (!Active() || NoMessage(source)) return call(status);
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  const TimeNs enter = FastNow();
  int rc = call(st);
  const TimeNs exit = FastNow();
  if (rc != MPI_SUCCESS) return rc;
  const CommInfo* info = nullptr;
  P2PRecord probe = Probed(source, tag, comm, *st, enter, exit, &info);
  probe.spin_start = SpinStart(enter);
  ProbeSucceeded(probe, info, message);
  return rc;
}

// The receive record for `message`, all but its times: what its probe saw, or (a message probed
// before capture started) a receive on an unknown communicator.
PendingOp TakeMessage(MPI_Message message) {
  PendingOp op;
  if (!Pending().Take(MessageKey(message), &op)) {
    op.kind = PendingOp::Kind::kP2P;
    op.p2p.kind = P2PKind::kRecv;
    op.p2p.completed = P2PKind::kRecv;
    op.p2p.tid = ThreadId();
  }
  return op;
}

}  // namespace
}  // namespace rankscope::inject

using rankscope::P2PKind;
using rankscope::TimeNs;
namespace ri = rankscope::inject;

extern "C" int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  return ri::Blocking(source, tag, comm, status, nullptr,
                      [&](MPI_Status* st) { return PMPI_Probe(source, tag, comm, st); });
}

extern "C" int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  return ri::Polled(source, tag, comm, flag, status, nullptr,
                    [&](MPI_Status* st) { return PMPI_Iprobe(source, tag, comm, flag, st); });
}

extern "C" int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message,
                          MPI_Status* status) {
  return ri::Blocking(source, tag, comm, status, message,
                      [&](MPI_Status* st) { return PMPI_Mprobe(source, tag, comm, message, st); });
}

extern "C" int MPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message,
                           MPI_Status* status) {
  return ri::Polled(source, tag, comm, flag, status, message, [&](MPI_Status* st) {
    return PMPI_Improbe(source, tag, comm, flag, message, st);
  });
}

extern "C" int MPI_Mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message,
                         MPI_Status* status) {
  if (!ri::Active() || message == nullptr || ri::NoMessageHandle(*message)) {
    return PMPI_Mrecv(buf, count, type, message, status);
  }
  // Taken before the call: MPI sets *message to MPI_MESSAGE_NULL, and may reuse the handle.
  ri::PendingOp op = ri::TakeMessage(*message);
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  const TimeNs enter = rankscope::inject::FastNow();
  int rc = PMPI_Mrecv(buf, count, type, message, st);
  const TimeNs exit = rankscope::inject::FastNow();
  if (rc != MPI_SUCCESS) return rc;
  rankscope::P2PRecord r = op.p2p;
  ri::ReadStatus(*st, op.comm, &r);
  r.enter = enter;
  r.exit = exit;
  r.tid = ri::ThreadId();
  ri::EmitP2P(r);
  return rc;
}

extern "C" int MPI_Imrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message,
                          MPI_Request* request) {
  if (!ri::Active() || message == nullptr || ri::NoMessageHandle(*message)) {
    return PMPI_Imrecv(buf, count, type, message, request);
  }
  ri::PendingOp op = ri::TakeMessage(*message);
  rankscope::P2PRecord post = op.p2p;
  post.kind = P2PKind::kIrecv;
  post.completed = P2PKind::kIrecv;
  post.tid = ri::ThreadId();
  post.enter = rankscope::inject::FastNow();
  int rc = PMPI_Imrecv(buf, count, type, message, request);
  post.exit = rankscope::inject::FastNow();
  if (rc != MPI_SUCCESS) return rc;
  ri::EmitP2P(post);
  if (request != nullptr) {
    op.p2p = post;
    op.p2p.kind = P2PKind::kWait;
    op.p2p.completed = P2PKind::kIrecv;
    op.tried = 0;
    ri::TrackRequest(*request, op);
  }
  return rc;
}
