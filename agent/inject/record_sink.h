// The inject library's only way out. Records go into a per-thread batch (wire::BatchBuilder over
// a fixed buffer); batches go to the agent as datagrams on the AF_UNIX SOCK_SEQPACKET socket
// named by RANKSCOPE_IPC_SOCKET. Without that variable the library is inert.
//
// The sink never blocks the program for long, never allocates after a thread's first record,
// and never throws. When the agent is gone or something internal fails it disables capture for
// the rest of the process and says so once on stderr ("rankscope-inject: ...").
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "core/records.h"
#include "core/time.h"

namespace rankscope::inject {

// True while the library captures: RANKSCOPE_IPC_SOCKET was set and nothing has disabled it
// since. One relaxed atomic load, so every entry point checks it first and an inert library
// costs a branch.
bool Active();

// False while the agent holds the rank dormant (RANKSCOPE_CONTROL_FILE, core/control_page.h):
// records are then not made at all. True without a control page. One relaxed load.
bool Capturing();

// The calling thread's OS thread id (gettid), cached per thread (and refreshed after fork).
uint32_t ThreadId();

// Each Emit appends one record to the calling thread's batch, then sends the batch if it was
// full or if more than 100 ms passed since it was last sent, judged by the record's own
// timestamp (so the hot path reads no extra clock). Callers check Active() first. Thread-safe;
// records that cannot be delivered are counted and reported to the agent as dropped.
void EmitCollective(const CollectiveRecord& r);
void EmitP2P(const P2PRecord& r);
void EmitMpiCall(const MpiCallRecord& r);
// The exit of the last MPI record (collective, point-to-point, other call) the calling thread
// emitted, 0 for none, whether or not capture was on: the polling bookkeeping of the completion
// wrappers asks whether another call came between two polls.
TimeNs LastMpiRecordExit();
void EmitRange(std::string_view domain, std::string_view name, TimeNs start, TimeNs end,
               uint32_t tid, uint32_t depth);
void EmitMark(std::string_view domain, std::string_view name, TimeNs time, uint32_t tid);
// GPU activity arrives in bulk on CUPTI's thread, long after it happened, so the 100 ms rule is
// judged by the current time rather than the record's.
void EmitGpuActivity(const GpuActivityRecord& r);

// While one lives, the control page (core/control_page.h OpenCallSlot) says the program's main
// thread is inside this blocking MPI call since `enter`, for the coordinator's stall check. Does
// nothing on other threads or without a control page. A few relaxed stores each way.
class OpenCallScope {
 public:
  OpenCallScope(const CollectiveRecord& r, TimeNs enter);
  OpenCallScope(const P2PRecord& r, TimeNs enter);
  ~OpenCallScope();
  OpenCallScope(const OpenCallScope&) = delete;
  OpenCallScope& operator=(const OpenCallScope&) = delete;

 private:
  bool open_ = false;
};

// A polling loop on the program's main thread (MPI_Test* or MPI_Iprobe failing again and
// again) is a wait too: the control page says the thread polls for the message to or from `r`'s
// peer, or for the collective `r`, since `run_start` (the first poll of its run, PollRun), with
// `poll_exit` its latest poll. StillPolling notes a poll of the run the page already holds and
// says so (true as well where there is nothing to note: another thread, no control page); else
// the caller describes the poll with NotePolling, which keeps the page's start where the poll
// continues the loop on the page (the same request or source polled less than kPollStaleNs
// before, no MPI record between: a run cut by a preemption). EndPolling clears the page when a
// completion ends the loop; a blocking call replaces it by itself. A recorded call between two
// polls (MPI_Isend) leaves it set: the coordinator sees the rank's MPI exit pass its start, and
// the agent a latest poll going stale. Nothing on other threads.
bool StillPolling(TimeNs run_start, TimeNs poll_exit);
void NotePolling(const P2PRecord& r, TimeNs run_start, TimeNs poll_exit);
void NotePolling(const CollectiveRecord& r, TimeNs run_start, TimeNs poll_exit);
void EndPolling();

// Counts records lost before they reached a batch (a full table, an overflowing stack). The
// count rides in the next batch header.
void CountDropped(uint32_t n);

// Sends `text` to the agent as a notice, at most once per `said` flag (a static the caller
// owns), for problems that lose data but do not warrant switching capture off.
void NoticeOnce(std::atomic<bool>& said, std::string_view text);

// Switches capture off for the rest of the process. Prints "rankscope-inject: <why>" on stderr
// the first time only, and sends it to the agent as a notice when the channel still works.
// Safe from any thread, including from inside the sink.
void Disable(std::string_view why);

// Sends every live thread's pending batch now. Called from MPI_Finalize and at process exit;
// safe from any thread at any time (a buffer its owner is writing is skipped after a short wait).
// Runs the pre-flush hooks first.
void FlushAll();

// While one of these lives, the calling thread's sends wait for room on the agent socket (until
// `deadline` on CLOCK_MONOTONIC) instead of dropping the batch when the socket is full. For
// producers off the program's hot path that emit in bursts: one completed CUPTI buffer becomes
// dozens of batches at once, far more than the socket holds. Such sends go on a connection of
// their own, so a burst waiting for room never fills the socket the program's threads send on.
// Not nestable; one thread only.
class SendWaitScope {
 public:
  explicit SendWaitScope(TimeNs deadline);
  ~SendWaitScope();
  SendWaitScope(const SendWaitScope&) = delete;
  SendWaitScope& operator=(const SendWaitScope&) = delete;
};

// Sends the calling thread's pending batch now (a producer that just emitted a burst, like
// CUPTI's buffer-completed callback, so the agent need not wait for the next record).
void FlushThisThread();

// Registers `hook` to run at the start of every FlushAll, so a source that holds records
// outside the sink (CUPTI's activity buffers) can hand them over first. The hook must not call
// FlushAll. At most 4 hooks; returns false when full. Safe from any thread.
bool AddPreFlushHook(void (*hook)());

}  // namespace rankscope::inject
