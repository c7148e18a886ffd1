#include "agent/uplink.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "model/nccl/kernel_name.h"
#include "proto/convert.h"
#include "proto/rpc_calls.h"
#include "proto/upload_chunk.h"

namespace rankscope {
namespace {

std::chrono::system_clock::time_point DeadlineIn(DurationNs timeout) {
  return std::chrono::system_clock::now() + std::chrono::nanoseconds(timeout);
}

bool IsRefusal(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
         s.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
         s.error_code() == grpc::StatusCode::PERMISSION_DENIED;
}

}  // namespace

Uplink::Uplink(UplinkOptions options, v1::Identity identity)
    : options_(std::move(options)),
      identity_(std::move(identity)),
      capture_enabled_(options_.capturing) {
  if (options_.gpu_stats_window > 0) {
    gpu_stats_.emplace(options_.gpu_stats_window);
    launch_latency_.emplace(options_.gpu_stats_window, options_.launch_join_horizon);
    kernel_pieces_.emplace();
    nccl_compute_.emplace();
  }
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetMaxSendMessageSize(static_cast<int>(kMaxUploadMessageBytes));
  channel_ = grpc::CreateCustomChannel(options_.address, grpc::InsecureChannelCredentials(), args);
  stub_ = v1::Coordinator::NewStub(channel_);
}

Uplink::~Uplink() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishing_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    control_stopping_ = true;
    if (control_context_) control_context_->TryCancel();
  }
  if (control_thread_.joinable()) control_thread_.join();
}

void Uplink::Start() {
  if (!options_.spool_path.empty()) {
    Result<std::unique_ptr<SpoolWriter>> spool =
        SpoolWriter::Create(options_.spool_path, identity_, options_.spool_bytes);
    if (spool.ok()) {
      spool_ = std::move(spool).value();
    } else {
      AddNotice(spool.status().message() + "; this rank keeps no local copy of its records");
    }
  }
  thread_ = std::thread([this] { Loop(); });
}

std::unique_ptr<grpc::ClientContext> Uplink::NewContext(DurationNs timeout) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->AddMetadata(kTokenMetadataKey, options_.token);
  ctx->set_deadline(DeadlineIn(timeout));
  return ctx;
}

size_t Uplink::PendingRecordsLocked() const { return RecordCount(pending_) + unacked_records_; }

void Uplink::AddBatch(wire::Batch&& batch) {
  dropped_ += batch.dropped;
  // Notices are always kept (they explain losses), so they are not what may be dropped.
  const size_t n = batch.record_count() - batch.notices.size();
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& notice : batch.notices) {
    v1::Notice* out = pending_.add_notices();
    out->set_time(batch.flush_time);
    out->set_text("pid " + std::to_string(batch.pid) + ": " + notice);
  }
  if (!capture_enabled_.load()) return;
  // Time inside MPI for the live check: a nonblocking collective's record spans from its post to
  // the completion its Wait/Test saw, with the rank's work between, so it is left out.
  for (const auto& r : batch.collectives) {
    if (!r.nonblocking) in_mpi_.Add(r.enter, r.exit);
  }
  for (const auto& r : batch.p2p) in_mpi_.Add(r.enter, r.exit);
  for (const auto& r : batch.mpi_calls) in_mpi_.Add(r.enter, r.exit);
  // The GPU records that go out now (all but the held ones, once the raw budget is spent).
  std::vector<const GpuActivityRecord*> raw_gpu;
  if (gpu_stats_ && !batch.gpu.empty()) {
    for (const GpuActivityRecord& r : batch.gpu) {
      gpu_stats_->Add(r);
      launch_latency_->Add(r);
      AddToKernelFoldsLocked(r);
      latest_gpu_start_ = std::max(latest_gpu_start_, r.start);
      if (SendRawLocked(r)) raw_gpu.push_back(&r);
    }
    const DurationNs lag = 2 * std::min<DurationNs>(gpu_stats_->window(), INT64_MAX / 4);
    if (latest_gpu_start_ > INT64_MIN + lag) TakeGpuStatsLocked(latest_gpu_start_ - lag);
  } else {
    for (const GpuActivityRecord& r : batch.gpu) raw_gpu.push_back(&r);
  }
  if (gpu_stats_) {
    for (const RangeRecord& r : batch.ranges) {
      thinning_.AddRange(r);
      latest_range_end_ = std::max(latest_range_end_, r.end);
    }
  }
  if (kernel_pieces_ && !batch.collectives.empty()) {
    for (const CollectiveRecord& c : batch.collectives) {
      kernel_pieces_->AddBoundary(c.enter);
      kernel_pieces_->AddBoundary(c.exit);
      latest_collective_exit_ = std::max(latest_collective_exit_, c.exit);
    }
  }
  const DurationNs lag = std::min<DurationNs>(
      2 * options_.gpu_stats_window + options_.collective_enter_horizon, INT64_MAX / 4);
  if (kernel_pieces_ && (!batch.gpu.empty() || !batch.collectives.empty())) {
    const TimeNs latest = std::max(latest_gpu_start_, latest_collective_exit_);
    if (latest > INT64_MIN + lag) {
      for (const KernelPiece& p : kernel_pieces_->TakeDecided(latest - lag)) {
        ToProto(p, pending_.add_kernel_pieces());
      }
      for (const auto& span : nccl_compute_->TakeDecided(latest - lag)) {
        ToProto(span, pending_.add_nccl_compute());
      }
    }
  }
  // The step reading's launches and kernels: decided as far behind as a range may close late.
  if (gpu_stats_ && (!batch.gpu.empty() || !batch.ranges.empty())) {
    const TimeNs latest = std::max(latest_gpu_start_, latest_range_end_);
    if (latest > INT64_MIN + lag) DecideHeldGpuLocked(latest - lag);
  }
  const size_t held_back = batch.gpu.size() - raw_gpu.size();
  if (PendingRecordsLocked() + n - held_back > options_.max_buffered_records) {
    dropped_ += n - held_back;
    return;
  }
  for (const auto& r : batch.collectives) ToProto(r, pending_.add_collectives());
  if (hold_p2p_) {
    for (const auto& r : batch.p2p) {
      if (held_p2p_.size() >= options_.max_held_p2p_records) {
        held_p2p_.pop_front();  // the oldest detail matters least for a later look
        ++dropped_;
      }
      held_p2p_.push_back(r);
    }
  } else {
    for (const auto& r : batch.p2p) ToProto(r, pending_.add_p2p());
  }
  for (const auto& r : batch.ranges) ToProto(r, pending_.add_ranges());
  for (const GpuActivityRecord* r : raw_gpu) ToProto(*r, pending_.add_gpu());
  for (const auto& r : batch.marks) ToProto(r, pending_.add_marks());
  for (const auto& r : batch.mpi_calls) ToProto(r, pending_.add_mpi_calls());
}

bool Uplink::SendRawLocked(const GpuActivityRecord& r) {
  const bool was_thinning = thinning_.thinning();
  const bool now = thinning_.Add(r);
  if (!was_thinning && thinning_.thinning()) {
    AddNoticeLocked(
        "after " + std::to_string(thinning_.raw_sent()) +
        " records of compute kernels and launch calls (this rank's share of the session's "
        "--raw-gpu-records), the later ones are sent summed: per-kernel statistics, kernel "
        "time between collectives, compute beside NCCL kernels; whole only the first launch and "
        "kernel after each NVTX range boundary and NCCL's launches. trace.json shows every "
        "kernel up to " +
        std::to_string(r.start) + " ns on this rank's clock, and the last " +
        std::to_string(thinning_.tail_budget()) + " of the run");
  }
  return now;
}

bool Uplink::DecideHeldGpuLocked(TimeNs until) {
  std::vector<GpuActivityRecord> out = thinning_.TakeDecided(until);
  if (out.empty()) return true;
  if (PendingRecordsLocked() + out.size() > options_.max_buffered_records) {
    dropped_ += out.size();
    return false;
  }
  for (const GpuActivityRecord& r : out) ToProto(r, pending_.add_gpu());
  return true;
}

void Uplink::AddToKernelFoldsLocked(const GpuActivityRecord& r) {
  if (r.kind != GpuActivityKind::kKernel) return;
  // A NCCL kernel is a collective: its start and end are boundaries, its time is not compute.
  if (IsNcclKernel(r)) {
    kernel_pieces_->AddBoundary(r.start);
    kernel_pieces_->AddBoundary(r.end);
    nccl_compute_->AddNcclKernel(r.start, r.end);
  } else {
    kernel_pieces_->AddKernel(r.start, r.end, r.name);
    nccl_compute_->AddComputeKernel(r.start, r.end);
  }
}

void Uplink::TakeGpuStatsLocked(TimeNs until) {
  if (!gpu_stats_) return;
  for (const GpuStats& row : gpu_stats_->TakeClosed(until)) ToProto(row, pending_.add_gpu_stats());
  for (const LaunchLatency& row : launch_latency_->TakeClosed(until)) {
    ToProto(row, pending_.add_launch_latency());
  }
}

void Uplink::SetCumulativeLocked(v1::UploadBatch* batch) const {
  batch->set_compute_kernels_summed(thinning_.thinning());
  batch->set_in_mpi_ns(in_mpi_.covered());
  batch->set_in_mpi_through(in_mpi_.latest_end());
  if (kernel_pieces_) {
    batch->set_kernel_pieces_late(static_cast<uint64_t>(kernel_pieces_->late()));
    batch->set_nccl_compute_late(static_cast<uint64_t>(nccl_compute_->late()));
  }
}

void Uplink::AddNotice(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  AddNoticeLocked(text);
}

void Uplink::AddNoticeLocked(const std::string& text) {
  v1::Notice* out = pending_.add_notices();
  out->set_time(MonotonicNow());
  out->set_text(text);
}

void Uplink::SetNccl(v1::NcclSummary summary) {
  std::lock_guard<std::mutex> lock(mu_);
  *pending_.mutable_nccl() = std::move(summary);
}

void Uplink::SetTopology(v1::TopologyDump dump) {
  std::lock_guard<std::mutex> lock(mu_);
  *pending_.mutable_topology() = std::move(dump);
}

void Uplink::SetNvml(v1::NvmlReport report) {
  std::lock_guard<std::mutex> lock(mu_);
  *pending_.mutable_nvml() = std::move(report);
}

void Uplink::SetToolReport(v1::ToolReport report) {
  std::lock_guard<std::mutex> lock(mu_);
  *pending_.mutable_tool_report() = std::move(report);
}

void Uplink::SetProcessStats(v1::ProcessStats stats) {
  std::lock_guard<std::mutex> lock(mu_);
  *pending_.mutable_proc() = std::move(stats);
  progress_.reset();  // older than these
}

void Uplink::SetProcessProgress(v1::ProcessStats so_far) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finishing_ || pending_.has_proc()) return;
  progress_ = std::move(so_far);
}

void Uplink::AddSweepCheck(v1::SweepCheck check) {
  std::lock_guard<std::mutex> lock(mu_);
  *pending_.add_sweep() = std::move(check);
}

bool Uplink::TryRegister() {
  if (refused_.load()) return false;
  v1::RegisterRequest req;
  req.set_protocol_version(kProtocolVersion);
  req.set_agent_version(kRankscopeVersion);
  *req.mutable_identity() = identity_;
  v1::RegisterResponse resp;
  auto ctx = NewContext(options_.rpc_timeout);
  grpc::Status s = CallWithOneRequest(
      [&](grpc::ClientContext* c, v1::RegisterResponse* r) { return stub_->Register(c, r); },
      ctx.get(), req, &resp);
  if (!s.ok()) {
    if (IsRefusal(s)) {
      refused_.store(true);
      std::fprintf(stderr,
                   "rankscope agent (rank %d): the coordinator at %s refused this agent: %s. "
                   "The program runs on, unprofiled.\n",
                   identity_.rank(), options_.address.c_str(), s.error_message().c_str());
    }
    return false;
  }
  agent_id_ = resp.agent_id();
  {
    std::lock_guard<std::mutex> lock(mu_);
    hold_p2p_ = resp.hold_point_to_point();
    // Half at the start, half the flight recorder's: the run's last records, sent at its end.
    const uint64_t raw = resp.raw_compute_records();
    thinning_.SetBudget(raw - raw / 2, raw / 2);
  }
  registered_.store(true);
  control_thread_ = std::thread([this] { ControlLoop(); });
  return true;
}

void Uplink::SyncClock(int samples) {
  // One call, a request and its reply per sample (t1 sent, t2/t3 the coordinator's, t4 back).
  std::vector<ClockSample> got;
  auto ctx = NewContext(options_.rpc_timeout);
  std::unique_ptr<grpc::ClientReaderWriter<v1::ClockRequest, v1::ClockResponse>> stream =
      stub_->SyncClock(ctx.get());
  for (int i = 0; i < samples; ++i) {
    v1::ClockRequest req;
    req.set_agent_id(agent_id_);
    v1::ClockResponse resp;
    ClockSample sample;
    sample.t1 = MonotonicNow();
    req.set_t1(sample.t1);
    if (!stream->Write(req) || !stream->Read(&resp)) break;
    sample.t4 = MonotonicNow();
    sample.t2 = resp.t2();
    sample.t3 = resp.t3();
    got.push_back(sample);
  }
  stream->WritesDone();
  (void)stream->Finish();
  std::lock_guard<std::mutex> lock(mu_);
  for (const ClockSample& s : got) ToProto(s, pending_.add_clock_samples());
}

bool Uplink::SendPending(bool final_batch) {
  bool formed = false;
  bool heartbeat = false;  // a batch for the /proc figures so far alone
  if (!unacked_) {
    std::lock_guard<std::mutex> lock(mu_);
    const TimeNs now = MonotonicNow();
    heartbeat = NothingToSend(pending_) && progress_.has_value() &&
                now - last_formed_ >= options_.heartbeat_period;
    if (!final_batch && NothingToSend(pending_) && !heartbeat) return true;
    last_formed_ = now;
    // At most kUploadChunkBytes a batch (proto/upload_chunk.h): the rest waits for the next.
    unacked_.emplace();
    const ChunkTaken taken = TakeChunk(&pending_, &*unacked_);
    if (taken.dropped > 0) {
      // Said in this batch: the exit status may be in it, and nothing is to come after it.
      dropped_ += taken.dropped;
      v1::Notice* notice = unacked_->add_notices();
      notice->set_time(MonotonicNow());
      notice->set_text(std::to_string(taken.dropped) + " value(s) larger than an upload (" +
                       std::to_string(kUploadChunkBytes >> 20) + " MiB) were not sent");
    }
    unacked_->set_agent_id(agent_id_);
    SetCumulativeLocked(&*unacked_);
    unacked_->set_batch_seq(next_seq_++);
    unacked_records_ = RecordCount(*unacked_);
    formed = true;
  }
  unacked_->set_dropped_records(dropped_.load());
  if (final_batch) {
    // Final only on the batch after which nothing is left: the coordinator stops waiting there.
    std::lock_guard<std::mutex> lock(mu_);
    unacked_->set_final(NothingToSend(pending_));
  }
  if (formed) {
    if (!heartbeat) Spool(*unacked_);  // outside mu_: a spool that fills up adds a notice
    std::lock_guard<std::mutex> lock(mu_);
    if (progress_ && !unacked_->has_proc()) *unacked_->mutable_proc_so_far() = *progress_;
    progress_.reset();
  }
  v1::UploadAck ack;
  auto ctx = NewContext(options_.rpc_timeout);
  grpc::Status s = CallWithOneRequest(
      [&](grpc::ClientContext* c, v1::UploadAck* a) { return stub_->Upload(c, a); }, ctx.get(),
      *unacked_, &ack);
  if (!s.ok()) {
    if (IsRefusal(s)) refused_.store(true);
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  unacked_.reset();
  unacked_records_ = 0;
  return true;
}

void Uplink::Loop() {
  // Work first, then wait: the agent registers and syncs its clock as soon as it starts.
  for (bool first = true;; first = false) {
    if (!first) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::nanoseconds(options_.upload_period),
                   [this] { return finishing_; });
      if (finishing_) return;
    }
    if (refused_.load()) continue;
    TimeNs now = MonotonicNow();
    if (!registered_.load()) {
      if (now < next_register_try_) continue;
      if (!TryRegister()) {
        next_register_try_ = now + register_backoff_;
        register_backoff_ = std::min<DurationNs>(register_backoff_ * 2, 2 * kNsPerSec);
        continue;
      }
      SyncClock(options_.initial_clock_samples);
      next_clock_sync_ = MonotonicNow() + options_.clock_period;
    } else if (now >= next_clock_sync_) {
      SyncClock(options_.periodic_clock_samples);
      next_clock_sync_ = now + options_.clock_period;
    }
    // Send until the queue is empty or the coordinator stops answering.
    while (SendPending(false)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (NothingToSend(pending_)) break;
    }
  }
}

void Uplink::ControlLoop() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->AddMetadata(kTokenMetadataKey, options_.token);
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    if (control_stopping_) return;
    control_context_ = std::move(ctx);
  }
  v1::ControlRequest req;
  req.set_agent_id(agent_id_);
  auto reader = stub_->Control(control_context_.get());
  if (reader->Write(req)) reader->WritesDone();
  v1::ControlCommand cmd;
  while (reader->Read(&cmd)) {
    switch (cmd.kind()) {
      case v1::ControlCommand::START_CAPTURE:
      case v1::ControlCommand::STOP_CAPTURE: {
        const bool on = cmd.kind() == v1::ControlCommand::START_CAPTURE;
        // Said once per change: a late agent is told the current state, which may be its own.
        if (capture_enabled_.exchange(on) != on) {
          AddNotice(std::string("capture ") + (on ? "started" : "stopped") + " by the coordinator");
        }
        if (options_.on_capture) options_.on_capture(on);
        break;
      }
      case v1::ControlCommand::SEND_FULL_TRACE: {
        std::lock_guard<std::mutex> lock(mu_);
        for (const P2PRecord& r : held_p2p_) ToProto(r, pending_.add_p2p());
        held_p2p_.clear();
        break;
      }
      case v1::ControlCommand::CAPTURE_AROUND_NOW: {
        // The flight recorder's records now; those after it as they are decided.
        std::lock_guard<std::mutex> lock(mu_);
        const size_t before = thinning_.CaptureAround();
        // Decides nothing new: takes what the capture released.
        const bool queued = DecideHeldGpuLocked(INT64_MIN);
        if (before > 0) {
          AddNoticeLocked("a live finding asked for this rank's raw GPU records around it: the " +
                          std::to_string(before) + " the flight recorder held " +
                          (queued ? "and up to " + std::to_string(thinning_.tail_budget()) +
                                        " after them go out whole"
                                  : "were dropped (the agent's buffer was full)"));
        }
        break;
      }
      default:
        break;
    }
  }
  (void)reader->Finish();
}

void Uplink::Finish(int exit_code, int term_signal) {
  FinishWith(std::make_pair(exit_code, term_signal));
}

void Uplink::FinishWithoutStatus() { FinishWith(std::nullopt); }

void Uplink::FinishStatusUnseen() { FinishWith(std::make_pair(0, 0), /*unseen=*/true); }

void Uplink::FinishWith(std::optional<std::pair<int, int>> exit_status, bool unseen) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishing_ = true;
    TakeGpuStatsLocked(INT64_MAX);  // the windows still open: the run is over
    if (gpu_stats_) DecideHeldGpuLocked(INT64_MAX);
    if (thinning_.thinning()) {
      AddNoticeLocked(std::to_string(thinning_.summed_only()) +
                      " records of compute kernels and launch calls were sent only summed");
    }
    if (thinning_.thinning() && thinning_.late_boundaries() > 0) {
      AddNoticeLocked(
          std::to_string(thinning_.late_boundaries()) +
          " NVTX range boundaries came after the launches and kernels around them "
          "were summed (a range open longer than " +
          std::to_string((2 * options_.gpu_stats_window + options_.collective_enter_horizon) /
                         kNsPerMs) +
          " ms): a step beginning there may read a later first launch than it had");
    }
    if (kernel_pieces_) {
      for (const KernelPiece& p : kernel_pieces_->TakeAll()) {
        ToProto(p, pending_.add_kernel_pieces());
      }
      for (const auto& span : nccl_compute_->TakeAll()) ToProto(span, pending_.add_nccl_compute());
      if (kernel_pieces_->late() > 0) {
        AddNoticeLocked(std::to_string(kernel_pieces_->late()) +
                        " collective boundaries or kernels came after the agent had summed "
                        "their time (a collective longer than " +
                        std::to_string(options_.collective_enter_horizon / kNsPerMs) +
                        " ms): the kernel time per name before those collectives is read from "
                        "the kernel records" +
                        std::string(thinning_.thinning()
                                        ? ", which after this rank's raw budget hold only the "
                                          "first kernels after range boundaries: short there"
                                        : ""));
      }
    }
    if (exit_status) {
      v1::ProcessExit* exit = pending_.mutable_exit();
      exit->set_exit_code(exit_status->first);
      exit->set_term_signal(exit_status->second);
      exit->set_status_unseen(unseen);
      exit->set_time(MonotonicNow());
    }
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();

  const TimeNs deadline = MonotonicNow() + options_.final_timeout;
  bool sent = false;
  bool synced = false;  // once, then the queue goes in as many batches as it takes
  while (!refused_.load() && MonotonicNow() < deadline) {
    if (!registered_.load() && !TryRegister()) {
      // A coordinator that is not there at all fails fast; do not spin on it.
      if (channel_->GetState(false) == GRPC_CHANNEL_TRANSIENT_FAILURE) break;
      continue;
    }
    if (!synced) {
      SyncClock(options_.final_clock_samples);
      synced = true;
    }
    if (SendPending(true)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (NothingToSend(pending_)) {
        sent = true;
        break;
      }
    } else if (channel_->GetState(false) == GRPC_CHANNEL_TRANSIENT_FAILURE) {
      break;
    }
  }
  if (sent && spool_) {
    // The coordinator has all of it; a spool left on a node nobody cleans is clutter.
    unlink(spool_->path().c_str());
    spool_.reset();
  }
  if (!sent && !refused_.load()) {
    // What never went out is kept with the rest, so that the spool holds the whole rank.
    if (spool_ && !spool_->full()) {
      v1::UploadBatch last;
      {
        std::lock_guard<std::mutex> lock(mu_);
        last.Swap(&pending_);
        SetCumulativeLocked(&last);
      }
      last.set_agent_id(agent_id_);
      last.set_batch_seq(next_seq_++);
      last.set_dropped_records(dropped_.load());
      last.set_final(true);
      Spool(last);
    }
    if (spool_ && !spool_->full()) {
      std::fprintf(stderr,
                   "rankscope agent (rank %d): could not deliver the final report to the "
                   "coordinator at %s; this rank's records are kept in %s (rankscope report "
                   "--spools FILES... rebuilds the session).\n",
                   identity_.rank(), options_.address.c_str(), spool_->path().c_str());
    } else {
      std::fprintf(stderr,
                   "rankscope agent (rank %d): could not deliver the final report to the "
                   "coordinator at %s; this rank's last records are lost.\n",
                   identity_.rank(), options_.address.c_str());
    }
  }
}

void Uplink::Spool(const v1::UploadBatch& batch) {
  if (!spool_ || spool_->full()) return;
  if (!spool_->Append(batch)) {
    // Said once, in the next batch: the coordinator still gets everything.
    AddNotice("the local spool " + spool_->path() + " is full or cannot be written; later " +
              "batches are not kept there (the coordinator still receives them)");
  }
}

}  // namespace rankscope
