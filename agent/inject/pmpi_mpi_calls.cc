// PMPI wrappers for MPI calls the analyses do not interpret, each recorded as one MpiCallRecord
// (core/records.h) so the coordinator can tell how much of a rank's time was spent inside MPI
// and in how many calls it cannot read: MPI-IO reads and writes, one-sided synchronisation
// (fence, lock/unlock, flush, post/start/complete/wait) and persistent request starts.
//
// comm_id is 0 for all of them: a file or window handle names no communicator without more MPI
// calls (MPI_File_get_group, then hashing the group) than a wrapper should make per call.
#include "agent/inject/pmpi_common.h"
#include "agent/inject/record_sink.h"

namespace rankscope::inject {
namespace {

// Runs `call` and records it as `which`, with `peer` (-1: none) and the bytes `bytes()` says.
template <typename BytesFn, typename CallFn>
int Recorded(MpiCall which, int peer, BytesFn bytes, CallFn call) {
  if (!Active()) return call();
  MpiCallRecord r;
  r.call = which;
  r.peer = peer;
  r.bytes = bytes();
  r.tid = ThreadId();
  r.enter = FastNow();
  int rc = call();
  r.exit = FastNow();
  if (rc == MPI_SUCCESS) EmitMpiCall(r);
  return rc;
}

auto NoBytes() {
  return [] { return Bytes{0}; };
}
auto Payload(int count, MPI_Datatype type) {
  return [=] { return TypeBytes(count, type); };
}

}  // namespace
}  // namespace rankscope::inject

using rankscope::MpiCall;
namespace ri = rankscope::inject;

// ---- MPI-IO ----

extern "C" int MPI_File_read(MPI_File fh, void* buf, int count, MPI_Datatype datatype,
                             MPI_Status* status) {
  return ri::Recorded(MpiCall::kFileRead, -1, ri::Payload(count, datatype),
                      [&] { return PMPI_File_read(fh, buf, count, datatype, status); });
}

extern "C" int MPI_File_read_at(MPI_File fh, MPI_Offset offset, void* buf, int count,
                                MPI_Datatype datatype, MPI_Status* status) {
  return ri::Recorded(MpiCall::kFileReadAt, -1, ri::Payload(count, datatype),
                      [&] { return PMPI_File_read_at(fh, offset, buf, count, datatype, status); });
}

extern "C" int MPI_File_read_all(MPI_File fh, void* buf, int count, MPI_Datatype datatype,
                                 MPI_Status* status) {
  return ri::Recorded(MpiCall::kFileReadAll, -1, ri::Payload(count, datatype),
                      [&] { return PMPI_File_read_all(fh, buf, count, datatype, status); });
}

extern "C" int MPI_File_read_at_all(MPI_File fh, MPI_Offset offset, void* buf, int count,
                                    MPI_Datatype datatype, MPI_Status* status) {
  return ri::Recorded(MpiCall::kFileReadAtAll, -1, ri::Payload(count, datatype), [&] {
    return PMPI_File_read_at_all(fh, offset, buf, count, datatype, status);
  });
}

extern "C" int MPI_File_write(MPI_File fh, const void* buf, int count, MPI_Datatype datatype,
                              MPI_Status* status) {
  return ri::Recorded(MpiCall::kFileWrite, -1, ri::Payload(count, datatype),
                      [&] { return PMPI_File_write(fh, buf, count, datatype, status); });
}

extern "C" int MPI_File_write_at(MPI_File fh, MPI_Offset offset, const void* buf, int count,
                                 MPI_Datatype datatype, MPI_Status* status) {
  return ri::Recorded(MpiCall::kFileWriteAt, -1, ri::Payload(count, datatype),
                      [&] { return PMPI_File_write_at(fh, offset, buf, count, datatype, status); });
}

extern "C" int MPI_File_write_all(MPI_File fh, const void* buf, int count, MPI_Datatype datatype,
                                  MPI_Status* status) {
  return ri::Recorded(MpiCall::kFileWriteAll, -1, ri::Payload(count, datatype),
                      [&] { return PMPI_File_write_all(fh, buf, count, datatype, status); });
}

extern "C" int MPI_File_write_at_all(MPI_File fh, MPI_Offset offset, const void* buf, int count,
                                     MPI_Datatype datatype, MPI_Status* status) {
  return ri::Recorded(MpiCall::kFileWriteAtAll, -1, ri::Payload(count, datatype), [&] {
    return PMPI_File_write_at_all(fh, offset, buf, count, datatype, status);
  });
}

// ---- One-sided synchronisation (peer: the target's rank in the window's group) ----

extern "C" int MPI_Win_fence(int assert_flags, MPI_Win win) {
  return ri::Recorded(MpiCall::kWinFence, -1, ri::NoBytes(),
                      [&] { return PMPI_Win_fence(assert_flags, win); });
}

extern "C" int MPI_Win_lock(int lock_type, int rank, int assert_flags, MPI_Win win) {
  return ri::Recorded(MpiCall::kWinLock, rank, ri::NoBytes(),
                      [&] { return PMPI_Win_lock(lock_type, rank, assert_flags, win); });
}

extern "C" int MPI_Win_unlock(int rank, MPI_Win win) {
  return ri::Recorded(MpiCall::kWinUnlock, rank, ri::NoBytes(),
                      [&] { return PMPI_Win_unlock(rank, win); });
}

extern "C" int MPI_Win_lock_all(int assert_flags, MPI_Win win) {
  return ri::Recorded(MpiCall::kWinLockAll, -1, ri::NoBytes(),
                      [&] { return PMPI_Win_lock_all(assert_flags, win); });
}

extern "C" int MPI_Win_unlock_all(MPI_Win win) {
  return ri::Recorded(MpiCall::kWinUnlockAll, -1, ri::NoBytes(),
                      [&] { return PMPI_Win_unlock_all(win); });
}

extern "C" int MPI_Win_flush(int rank, MPI_Win win) {
  return ri::Recorded(MpiCall::kWinFlush, rank, ri::NoBytes(),
                      [&] { return PMPI_Win_flush(rank, win); });
}

extern "C" int MPI_Win_flush_all(MPI_Win win) {
  return ri::Recorded(MpiCall::kWinFlushAll, -1, ri::NoBytes(),
                      [&] { return PMPI_Win_flush_all(win); });
}

extern "C" int MPI_Win_flush_local(int rank, MPI_Win win) {
  return ri::Recorded(MpiCall::kWinFlushLocal, rank, ri::NoBytes(),
                      [&] { return PMPI_Win_flush_local(rank, win); });
}

extern "C" int MPI_Win_flush_local_all(MPI_Win win) {
  return ri::Recorded(MpiCall::kWinFlushLocalAll, -1, ri::NoBytes(),
                      [&] { return PMPI_Win_flush_local_all(win); });
}

extern "C" int MPI_Win_start(MPI_Group group, int assert_flags, MPI_Win win) {
  return ri::Recorded(MpiCall::kWinStart, -1, ri::NoBytes(),
                      [&] { return PMPI_Win_start(group, assert_flags, win); });
}

extern "C" int MPI_Win_complete(MPI_Win win) {
  return ri::Recorded(MpiCall::kWinComplete, -1, ri::NoBytes(),
                      [&] { return PMPI_Win_complete(win); });
}

extern "C" int MPI_Win_post(MPI_Group group, int assert_flags, MPI_Win win) {
  return ri::Recorded(MpiCall::kWinPost, -1, ri::NoBytes(),
                      [&] { return PMPI_Win_post(group, assert_flags, win); });
}

extern "C" int MPI_Win_wait(MPI_Win win) {
  return ri::Recorded(MpiCall::kWinWait, -1, ri::NoBytes(), [&] { return PMPI_Win_wait(win); });
}

// ---- Persistent requests: the start is recorded; their completions are not tracked ----

extern "C" int MPI_Start(MPI_Request* request) {
  return ri::Recorded(MpiCall::kStart, -1, ri::NoBytes(), [&] { return PMPI_Start(request); });
}

extern "C" int MPI_Startall(int count, MPI_Request array_of_requests[]) {
  return ri::Recorded(MpiCall::kStartall, -1, ri::NoBytes(),
                      [&] { return PMPI_Startall(count, array_of_requests); });
}
