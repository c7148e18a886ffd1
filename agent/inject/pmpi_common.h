// Pieces shared by the PMPI wrapper files (pmpi_collectives.cc, pmpi_p2p.cc,
// pmpi_completion.cc): payload sizes, request handles as keys, and the table of posted
// non-blocking operations.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "agent/inject/fast_clock.h"
#include "agent/inject/pending_requests.h"
#include "agent/inject/pmpi_weak.h"
#include "agent/inject/poll_run.h"
#include "agent/inject/record_sink.h"
#include "core/time.h"

namespace rankscope::inject {

// MPI_COMM_WORLD and MPI_BYTE. In Open MPI these are addresses of data symbols, which the
// dynamic linker binds when this library loads; if libmpi arrives later (dlopen'd with
// RTLD_GLOBAL, as mpi4py does) they are looked up again here. Valid after MPI_Init.
MPI_Comm WorldComm();
MPI_Datatype ByteType();

// Bytes in `count` elements of `type`: 0 for MPI_DATATYPE_NULL, a non-positive count, or a type
// MPI cannot size. Callers pass only types that are significant at this rank, so the check
// MPI makes on them is one the program's own call makes anyway.
Bytes TypeBytes(int64_t count, MPI_Datatype type);

// counts[0] + ... + counts[n-1]; 0 if counts is null.
int64_t SumCounts(const int counts[], int n);

// A request handle as a table key (Open MPI handles are pointers, MPICH's are integers).
uint64_t RequestKey(MPI_Request request);

// The posted non-blocking operations awaiting completion, shared by all threads.
PendingTable& Pending();

// Remembers `op` until `request` completes. When the table is full the operation is counted as
// dropped and the agent is told once.
void TrackRequest(MPI_Request request, const PendingOp& op);

// A point-to-point call of `kind` to or from `peer` (a rank of `comm`, or MPI_ANY_SOURCE, which
// is recorded as -1 until a status resolves it), all but enter/exit. *info (when not null) is
// set to the communicator's description, or null when MPI cannot describe it.
P2PRecord DescribeP2P(P2PKind kind, int peer, int tag, MPI_Comm comm, Bytes bytes,
                      const CommInfo** info = nullptr);

// Fills the message's source (as a rank of the communicator `info` describes and as a world
// rank), tag and size from a status MPI filled in for a receive or a probe.
void ReadStatus(const MPI_Status& status, const CommInfo* info, P2PRecord* r);

// True when `peer` names no process (MPI_PROC_NULL): such a call moves no message, so the
// wrappers record nothing for it.
inline bool NoMessage(int peer) { return peer == MPI_PROC_NULL; }

// The calling thread's polling (P2PRecord::spin_start, PollRun). A call that polls and completes
// nothing (MPI_Test*, MPI_Iprobe) reports its interval to NotePollFailed, with `describe()`
// saying what it polls for (a P2PRecord or CollectiveRecord, asked only when a new run begins on
// the main thread: record_sink.h NotePolling); the call that completes or finds something asks
// SpinStart for where the polling before it began, which ends the run.
TimeNs NotePollFailed(TimeNs enter, TimeNs exit);
template <typename Describe>
void NotePollFailed(TimeNs enter, TimeNs exit, Describe describe) {
  const TimeNs start = NotePollFailed(enter, exit);
  if (!StillPolling(start, exit)) NotePolling(describe(), start, exit);
}
TimeNs SpinStart(TimeNs enter);

}  // namespace rankscope::inject
