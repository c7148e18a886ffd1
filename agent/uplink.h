// The agent's connection to the coordinator: registration, clock sync, the ordered stream of
// upload batches, and the control channel. Everything runs on background threads with
// deadlines, so a slow, dead or refusing coordinator never blocks or kills the rank: records
// are buffered (bounded; what does not fit is counted as dropped) and sent after a reconnect.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "core/intervals.h"
#include "core/time.h"
#include "core/wire.h"
#include "model/gpu/compute_thinning.h"
#include "model/gpu/gpu_stats.h"
#include "model/gpu/kernel_pieces.h"
#include "model/gpu/launch_latency.h"
#include "model/gpu/nccl_compute.h"
#include "proto/protocol.h"
#include "proto/spool.h"
#include "rankscope/v1/rankscope.grpc.pb.h"

namespace rankscope {

struct UplinkOptions {
  std::string address;  // host:port of the coordinator
  std::string token;    // the session secret
  int initial_clock_samples = 64;
  int periodic_clock_samples = 8;
  int final_clock_samples = 16;
  DurationNs clock_period = 2 * kNsPerSec;
  DurationNs upload_period = 200 * kNsPerMs;
  // A batch goes at least this often while the rank's /proc figures so far are new, even with
  // no records: a rank stalled inside MPI or hung in its own code sends nothing else, and the
  // coordinator's stall check (coordinator/stall_check.h) reads what it is doing from them.
  DurationNs heartbeat_period = kNsPerSec;
  DurationNs rpc_timeout = 2 * kNsPerSec;
  DurationNs final_timeout = 5 * kNsPerSec;  // the most Finish() waits for a coordinator
  size_t max_buffered_records = 1'000'000;
  size_t max_held_p2p_records = 1'000'000;  // when the coordinator asks to hold p2p back
  // GPU records are also summed per window of this length and kind of work
  // (model/gpu/gpu_stats.h), rows sent once a window is over: a record more than two windows
  // later than the latest start seen comes as a row of its own. Rows count toward
  // max_buffered_records like records. 0: no sums.
  DurationNs gpu_stats_window = kNsPerSec;
  // Launch latencies too, per window of the same length (model/gpu/launch_latency.h): a launch
  // call and its kernel are joined when both came within this long of each other.
  DurationNs launch_join_horizon = 10 * kNsPerSec;
  // And the compute-kernel time per name between collective boundaries
  // (model/gpu/kernel_pieces.h), decided this long (plus two windows) behind the latest GPU start
  // or collective exit seen: an MPI collective's record comes at its exit, so a collective longer
  // than this splits its pieces late (counted, and said in a notice). The compute spans beside
  // NCCL kernels (model/gpu/nccl_compute.h) are decided with them.
  DurationNs collective_enter_horizon = 2 * kNsPerSec;
  // Capturing from the start (false: dormant until the coordinator sends START_CAPTURE).
  bool capturing = true;
  // Called on the control thread when the coordinator starts or stops the capture.
  std::function<void(bool capturing)> on_capture;
  // A copy of every batch goes here as it is made (proto/spool.h), so the session survives its
  // coordinator; empty: no spool.
  std::string spool_path;
  size_t spool_bytes = kDefaultSpoolBytes;
};

class Uplink {
 public:
  Uplink(UplinkOptions options, v1::Identity identity);
  ~Uplink();  // stops the threads without sending anything more

  Uplink(const Uplink&) = delete;
  Uplink& operator=(const Uplink&) = delete;

  // Names the program's pid in the identity; call before Start().
  void SetProgramPid(int pid) { identity_.set_program_pid(pid); }
  // Starts registering and streaming in the background.
  void Start();

  // Queues a decoded inject batch (thread-safe). Records over the buffer bound are dropped
  // and counted; the GPU sums count them all the same. Ignored while capture is stopped by the
  // coordinator.
  void AddBatch(wire::Batch&& batch);
  // Queues a message for the report (errors seen by the agent).
  void AddNotice(const std::string& text);
  // Attaches what the agent read from NCCL's log and topology dump; sent with the next batch
  // (call before Finish, so it rides in the final one).
  void SetNccl(v1::NcclSummary summary);
  void SetTopology(v1::TopologyDump dump);
  void SetNvml(v1::NvmlReport report);
  // The report of the tool the rank ran under (agent/tool_wrap.h), before Finish.
  void SetToolReport(v1::ToolReport report);
  // The rank's /proc figures (agent/proc_sampler.h), before Finish.
  void SetProcessStats(v1::ProcessStats stats);
  // The rank's /proc figures so far (and the MPI call it is inside), for the coordinator's live
  // checks: they ride with the next batch, and one goes for them alone when no batch went for
  // heartbeat_period (the spool does not keep such a batch: nothing reads them back); the
  // newest replaces one not yet sent. Dropped once the final figures are set or Finish began.
  // Thread-safe.
  void SetProcessProgress(v1::ProcessStats so_far);
  // A sweep node's check results (agent/sweep/sweep_node.h), before Finish.
  void AddSweepCheck(v1::SweepCheck check);

  // Sends the exit status with everything still queued and a final clock sync; returns when
  // the coordinator acknowledged it or options.final_timeout passed. Call once.
  void Finish(int exit_code, int term_signal);
  // The same without an exit status: for a program that goes on running (rankscope attach
  // sampled it from outside), or one whose status the agent beside it could not see.
  void FinishWithoutStatus();
  // The program ended, but how was not seen (ProcessExit.status_unseen).
  void FinishStatusUnseen();

  bool registered() const { return registered_.load(); }
  bool capture_enabled() const { return capture_enabled_.load(); }
  // Point-to-point records kept on the agent until the coordinator asks for the full trace.
  size_t held_p2p() const {
    std::lock_guard<std::mutex> lock(mu_);
    return held_p2p_.size();
  }
  uint64_t dropped() const { return dropped_.load(); }

 private:
  std::unique_ptr<grpc::ClientContext> NewContext(DurationNs timeout) const;
  bool TryRegister();
  void SyncClock(int samples);
  bool SendPending(bool final_batch);
  void Loop();
  void ControlLoop();
  size_t PendingRecordsLocked() const;
  void FinishWith(std::optional<std::pair<int, int>> exit, bool unseen = false);
  void Spool(const v1::UploadBatch& batch);
  // A notice in the next batch, stamped now.
  void AddNoticeLocked(const std::string& text);
  // The figures every batch carries as they stand (cumulative counts, whether kernels are summed).
  void SetCumulativeLocked(v1::UploadBatch* batch) const;
  // Queues the GPU sums and launch latencies of the windows that end at or before `until`.
  void TakeGpuStatsLocked(TimeNs until);
  // Feeds a GPU record to the kernel pieces and the compute beside NCCL kernels: a NCCL kernel as
  // boundaries, others as compute.
  void AddToKernelFoldsLocked(const GpuActivityRecord& r);
  // Whether the record goes out now: every record until the raw budget is spent, then all but
  // compute kernels and launch calls, which thinning_ holds until DecideHeldGpuLocked.
  bool SendRawLocked(const GpuActivityRecord& r);
  // Of the held records starting at or before `until`, queues the first launches and kernels
  // after range boundaries and NCCL kernels' launches (and what a capture released); forgets the
  // rest (they are summed). False when they did not fit the buffer and were dropped.
  bool DecideHeldGpuLocked(TimeNs until);

  const UplinkOptions options_;
  v1::Identity identity_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  v1::UploadBatch pending_;                          // guarded by mu_
  std::optional<v1::ProcessStats> progress_;         // guarded by mu_: SetProcessProgress
  std::deque<P2PRecord> held_p2p_;                   // guarded by mu_
  bool hold_p2p_ = false;                            // guarded by mu_; set by Register's answer
  std::optional<GpuStatsFold> gpu_stats_;            // guarded by mu_; none when the window is 0
  std::optional<LaunchLatencyFold> launch_latency_;  // guarded by mu_; as gpu_stats_
  std::optional<KernelPieceFold> kernel_pieces_;     // guarded by mu_; as gpu_stats_
  std::optional<NcclComputeFold> nccl_compute_;      // guarded by mu_; as gpu_stats_
  // Which GPU records go out whole (guarded by mu_): every one until the coordinator's raw budget
  // for compute kernels and launches is spent, then those an analysis reads whole.
  ComputeRecordThinning thinning_{0, options_.launch_join_horizon};
  TimeNs latest_collective_exit_ = INT64_MIN;  // guarded by mu_
  TimeNs latest_gpu_start_ = INT64_MIN;        // guarded by mu_
  TimeNs latest_range_end_ = INT64_MIN;        // guarded by mu_
  CoverageFold in_mpi_{5 * kNsPerSec};         // guarded by mu_: for the live check
  // The batch sent and not yet acknowledged: formed and reset under mu_ by the sending thread,
  // which alone reads and changes its contents.
  std::optional<v1::UploadBatch> unacked_;
  size_t unacked_records_ = 0;          // guarded by mu_: its records, for the buffer bound
  std::unique_ptr<SpoolWriter> spool_;  // owned by the sending thread; null: no spool
  uint64_t next_seq_ = 0;
  TimeNs last_formed_ = 0;  // guarded by mu_: when the latest batch was formed (MonotonicNow)
  bool finishing_ = false;  // guarded by mu_
  std::string agent_id_;    // set once registered

  std::atomic<bool> registered_{false};
  std::atomic<bool> refused_{false};  // the coordinator said no: stop trying
  std::atomic<bool> capture_enabled_;
  std::atomic<uint64_t> dropped_{0};
  TimeNs next_clock_sync_ = 0;
  TimeNs next_register_try_ = 0;
  DurationNs register_backoff_ = 100 * kNsPerMs;

  std::thread thread_;
  std::thread control_thread_;
  std::mutex control_mu_;
  std::unique_ptr<grpc::ClientContext> control_context_;  // guarded by control_mu_
  bool control_stopping_ = false;                         // guarded by control_mu_
};

}  // namespace rankscope
