// The coordinator's gRPC service and session registry. Agents register, sync clocks, upload
// batches and listen for control commands; every RPC must carry the session token. The
// service keeps the raw (unaligned) session, its MPI records in a RecordSpill when given one;
// TakeSession() moves it out for analysis.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordinator/live_check.h"
#include "coordinator/live_progress.h"
#include "coordinator/report/session_store.h"
#include "coordinator/session.h"
#include "core/status.h"
#include "proto/protocol.h"
#include "rankscope/v1/rankscope.grpc.pb.h"

namespace rankscope {

struct CoordinatorConfig {
  std::string session_id;
  std::string token;
  std::string bind_address = "127.0.0.1";
  int port = 0;                      // 0 = pick a free port
  bool hold_point_to_point = false;  // agents keep p2p records until SEND_FULL_TRACE
  // Records of compute kernels and kernel launch calls the agents send raw, all ranks together
  // (each its share); after that they send them summed (RegisterResponse.raw_compute_records).
  // 0: no limit.
  uint64_t raw_compute_records = kDefaultRawComputeRecords;
};

class CoordinatorService final : public v1::Coordinator::Service {
 public:
  explicit CoordinatorService(CoordinatorConfig config);

  // Each checks the session token before it reads a request (the proto says why).
  grpc::Status Register(grpc::ServerContext* ctx, grpc::ServerReader<v1::RegisterRequest>* reader,
                        v1::RegisterResponse* resp) override;
  grpc::Status SyncClock(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::ClockResponse, v1::ClockRequest>* stream) override;
  grpc::Status Upload(grpc::ServerContext* ctx, grpc::ServerReader<v1::UploadBatch>* reader,
                      v1::UploadAck* resp) override;
  grpc::Status Trigger(grpc::ServerContext* ctx, grpc::ServerReader<v1::TriggerRequest>* reader,
                       v1::TriggerResponse* resp) override;
  grpc::Status Control(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::ControlCommand, v1::ControlRequest>* stream) override;

  // A copy of the session as received so far (records in each rank's local clock).
  Session Snapshot() const;
  // The session as received, moved out (ranks sorted): what the report reads once nothing more
  // is to come, without a second copy of every record (Snapshot doubled the coordinator's peak
  // memory at the end of a run). It also ends open Control streams (Close). Register and Upload
  // are refused after it, so a late agent keeps its records in its spool; Snapshot returns a
  // session without ranks.
  Session TakeSession();
  // From the first agent that registers after this on, each batch's MPI records and ranges go
  // into a RecordSpill at `path` (in each rank's clock) as they arrive, instead of the session:
  // what the coordinator holds no longer grows with the run. The file is made then, so a run
  // that ends before any agent came leaves none; when it cannot be made (said on stderr) the
  // records are held in memory. Agents registered before are held in memory too, and a batch
  // the file cannot take stays in memory with everything after it from that agent (said on
  // stderr); LoadSpilledRecords puts them in order.
  void KeepRecordsIn(std::string path);
  // The spill, once the session was taken (TakeSession), closed for its readers; null when the
  // records were held in memory.
  std::unique_ptr<RecordSpill> TakeRecordSpill();
  // The job id the agents gave (else the session id), and how many agents registered: what a
  // launcher reads while the job runs, without a Snapshot.
  std::string JobId() const;
  int RankCount() const;
  // What the status line shows while the job runs.
  LiveProgress Progress() const;
  // Every rank's live tally (coordinator/live_check.h) as it stands: one per rank number, its
  // latest attempt's (a torchrun restart registers the rank again).
  std::vector<LiveTally> LiveTallies() const;
  // The session as far as who runs where: job id, launcher, and every registration's identity
  // (node, host, program pid), without records: what a live line's next step names.
  Session Identities() const;
  // Waits until `ranks` agents have registered and all registered agents sent their final
  // batch or are gone (their control stream broke first: killed, or their node), or until
  // `timeout` passes. Returns true if nothing more is to come.
  bool WaitForFinal(int ranks, DurationNs timeout) const;
  // Waits until an agent has registered, or until `timeout` passes. False if none has.
  bool WaitForAnyAgent(DurationNs timeout) const;
  // The job's world size as the agents gave it (0 before any registered), without a Snapshot.
  int WorldSize() const;
  // Queues a command for every registered agent.
  void Broadcast(v1::ControlCommand::Kind kind);
  // Asks the agents of these ranks (each rank's latest registration) to send their flight
  // recorder's raw records and those of the moments after them whole (CAPTURE_AROUND_NOW).
  // Ranks without an agent are skipped; returns how many agents were asked.
  int CaptureAround(const std::vector<int>& ranks);
  // Ends open Control streams (call before shutting the server down).
  void Close();

  // Problems that cost the session data (an upload from an agent that never registered, a
  // batch that never arrived): the report's partial reasons.
  std::vector<std::string> Problems() const;
  // RPCs refused because they came from outside the session (no or a wrong token, another
  // session's agent): one note with their count, or none. They cost the session nothing, so
  // they never make it partial (garbage on the port once filled a complete report's summary
  // with 46 rejection reasons and marked it PARTIAL).
  std::vector<std::string> RefusedNotes() const;

 private:
  grpc::Status Authenticate(const grpc::ServerContext* ctx, const char* rpc);
  // The calls once authenticated and their request read.
  grpc::Status RegisterAgent(grpc::ServerContext* ctx, const v1::RegisterRequest& req,
                             v1::RegisterResponse* resp);
  grpc::Status StoreBatch(const v1::UploadBatch& req, v1::UploadAck* resp);
  void NoteProblemLocked(std::string text);
  // Makes the spill at spill_path_ once (a registration calls it).
  void OpenSpillLocked();
  void NoteRefusedLocked(const grpc::ServerContext* ctx, std::string why);

  const CoordinatorConfig config_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  Session session_;                            // guarded by mu_
  std::map<std::string, size_t> agent_index_;  // agent id -> index in session_.ranks
  std::map<std::string, uint64_t> next_seq_;   // agent id -> next expected batch seq
  std::map<std::string, std::vector<v1::ControlCommand::Kind>> commands_;
  // The last capture start/stop broadcast, for agents that register later.
  std::optional<v1::ControlCommand::Kind> capture_state_;
  std::vector<std::string> problems_;
  // Ranks (indices in session_.ranks) whose agent's control stream broke before their final
  // batch: the agent is gone (killed, or its node), so nothing more will come from it.
  std::set<size_t> gone_;
  std::map<std::string, int> refused_;  // why -> RPCs refused for it
  std::string first_refused_peer_;
  bool closed_ = false;
  bool taken_ = false;                  // TakeSession moved session_ out
  std::string spill_path_;              // empty: records held in session_
  std::unique_ptr<RecordSpill> spill_;  // made when the first agent registers
  bool spill_failed_ = false;           // it could not be made
  std::set<size_t> unspilled_;          // ranks whose records are held in session_
  uint64_t records_received_ = 0;       // guarded by mu_: for Progress
  std::vector<uint64_t> steps_of_;      // guarded by mu_: step ranges per rank index
  std::vector<LiveTally> live_;         // guarded by mu_: per rank index
};

// Owns the gRPC server around a CoordinatorService.
class CoordinatorServer {
 public:
  explicit CoordinatorServer(CoordinatorConfig config);
  ~CoordinatorServer();

  CoordinatorServer(const CoordinatorServer&) = delete;
  CoordinatorServer& operator=(const CoordinatorServer&) = delete;

  // Binds bind_address:port (one port, nothing else) and starts serving.
  Status Start();
  // "host:port" agents should dial.
  std::string address() const;
  int port() const { return port_; }
  CoordinatorService& service() { return service_; }
  void Shutdown();

 private:
  CoordinatorConfig config_;
  CoordinatorService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// A fresh random secret (hex), read from /dev/urandom.
Result<std::string> NewSessionToken();

}  // namespace rankscope
