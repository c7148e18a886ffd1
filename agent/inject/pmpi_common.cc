#include "agent/inject/pmpi_common.h"

#include <dlfcn.h>

#include <cstring>

#include "agent/inject/comm_registry.h"
#include "agent/inject/record_sink.h"

namespace rankscope::inject {
namespace {

constinit PendingTable g_pending;

// Looks up `name` in the global scope once; for handles bound to null at load time.
void* LateSymbol(const char* name) { return dlsym(RTLD_DEFAULT, name); }

}  // namespace

MPI_Comm WorldComm() {
#if defined(OPEN_MPI)
  if (&ompi_mpi_comm_world == nullptr) {
    static void* late = LateSymbol("ompi_mpi_comm_world");
    return static_cast<MPI_Comm>(late);
  }
#endif
  return MPI_COMM_WORLD;
}

MPI_Datatype ByteType() {
#if defined(OPEN_MPI)
  if (&ompi_mpi_byte == nullptr) {
    static void* late = LateSymbol("ompi_mpi_byte");
    return static_cast<MPI_Datatype>(late);
  }
#endif
  return MPI_BYTE;
}

Bytes TypeBytes(int64_t count, MPI_Datatype type) {
  if (count <= 0 || type == MPI_DATATYPE_NULL) return 0;
  int size = 0;
  if (PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0) return 0;
  return count * size;
}

int64_t SumCounts(const int counts[], int n) {
  if (counts == nullptr) return 0;
  int64_t sum = 0;
  for (int i = 0; i < n; ++i) sum += counts[i];
  return sum;
}

uint64_t RequestKey(MPI_Request request) {
  static_assert(sizeof(MPI_Request) <= sizeof(uint64_t));
  uint64_t key = 0;
  std::memcpy(&key, &request, sizeof(request));
  return key;
}

PendingTable& Pending() { return g_pending; }

void TrackRequest(MPI_Request request, const PendingOp& op) {
  if (request == MPI_REQUEST_NULL) return;
  if (g_pending.Insert(RequestKey(request), op)) return;
  CountDropped(1);
  static std::atomic<bool> said{false};
  NoticeOnce(said,
             "too many non-blocking MPI operations in flight; some completions are not recorded");
}

P2PRecord DescribeP2P(P2PKind kind, int peer, int tag, MPI_Comm comm, Bytes bytes,
                      const CommInfo** info) {
  const CommInfo* described = LookupComm(comm);
  if (info != nullptr) *info = described;
  P2PRecord r;
  r.kind = kind;
  r.completed = kind;
  r.peer = peer == MPI_ANY_SOURCE ? -1 : peer;
  r.world_peer = WorldPeerOf(described, peer);
  r.tag = tag;
  r.comm_id = described == nullptr ? 0 : described->id;
  r.bytes = bytes;
  r.tid = ThreadId();
  return r;
}

void ReadStatus(const MPI_Status& status, const CommInfo* info, P2PRecord* r) {
  r->peer = status.MPI_SOURCE;
  r->world_peer = WorldPeerOf(info, status.MPI_SOURCE);
  r->tag = status.MPI_TAG;
  int received = 0;
  if (PMPI_Get_count(&status, ByteType(), &received) == MPI_SUCCESS && received != MPI_UNDEFINED) {
    r->bytes = received;
  }
}

namespace {
thread_local PollRun t_poll_run;
}  // namespace

TimeNs NotePollFailed(TimeNs enter, TimeNs exit) {
  return t_poll_run.Failed(enter, exit, LastMpiRecordExit());
}

TimeNs SpinStart(TimeNs enter) {
  EndPolling();
  return t_poll_run.Completed(enter, LastMpiRecordExit());
}

}  // namespace rankscope::inject
