#include "coordinator/service.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "coordinator/ingest.h"
#include "coordinator/report/record_facts.h"
#include "core/time.h"
#include "proto/convert.h"
#include "proto/protocol.h"
#include "proto/rpc_calls.h"
#include "proto/upload_chunk.h"

namespace rankscope {
namespace {

// Constant-time comparison, so the token cannot be guessed byte by byte from timing.
bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

CoordinatorService::CoordinatorService(CoordinatorConfig config) : config_(std::move(config)) {
  session_.session_id = config_.session_id;
  session_.job_id = config_.session_id;
  session_.start = MonotonicNow();
}

void CoordinatorService::NoteProblemLocked(std::string text) {
  // Bounded: a flood of bad RPCs must not grow memory; the count keeps the total.
  if (problems_.size() < 50) problems_.push_back(std::move(text));
}

grpc::Status CoordinatorService::Authenticate(const grpc::ServerContext* ctx, const char* rpc) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(kTokenMetadataKey);
  if (it != md.end() &&
      SameSecret(std::string_view(it->second.data(), it->second.size()), config_.token)) {
    return grpc::Status::OK;
  }
  std::lock_guard<std::mutex> lock(mu_);
  NoteRefusedLocked(ctx, std::string(rpc) + (it == md.end() ? " without a session token"
                                                            : " with a wrong session token"));
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "rankscope coordinator: missing or wrong session token (is this agent "
                      "from another rankscope session?)");
}

grpc::Status CoordinatorService::Register(grpc::ServerContext* ctx,
                                          grpc::ServerReader<v1::RegisterRequest>* reader,
                                          v1::RegisterResponse* resp) {
  if (grpc::Status s = Authenticate(ctx, "Register"); !s.ok()) return s;
  v1::RegisterRequest req;
  if (grpc::Status s = ReadRequest(reader, &req, "Register"); !s.ok()) return s;
  return RegisterAgent(ctx, req, resp);
}

namespace {

// What an agent hears once the report was made from what had arrived: its records stay in its
// spool (`rankscope report` reads a spool with the session).
grpc::Status SessionWritten() {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      "rankscope coordinator: the session was already written; what this agent "
                      "still has stays in its spool");
}

}  // namespace

grpc::Status CoordinatorService::RegisterAgent(grpc::ServerContext* ctx,
                                               const v1::RegisterRequest& req,
                                               v1::RegisterResponse* resp) {
  if (req.protocol_version() != kProtocolVersion) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "rankscope coordinator speaks protocol v" +
                            std::to_string(kProtocolVersion) + ", this agent (" +
                            ToText(req.agent_version()) + ") speaks v" +
                            std::to_string(req.protocol_version()) +
                            ": use the agent and coordinator of one rankscope release");
  }
  const v1::Identity& id = req.identity();
  if (id.session_id() != config_.session_id) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string session = ToText(id.session_id());
    NoteRefusedLocked(ctx, "Register of an agent of session '" + session + "'");
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "agent belongs to session '" + session +
                            "', this coordinator runs session '" + config_.session_id + "'");
  }
  if (id.world_size() < 0 || id.world_size() > kMaxWorldSize || id.rank() < 0 ||
      id.rank() >= kMaxWorldSize) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string why = "rank " + std::to_string(id.rank()) + " of world size " +
                            std::to_string(id.world_size()) + " (agent pid " +
                            std::to_string(id.agent_pid()) + " on " + ToText(id.host()) +
                            "): not a rank of a job of at most " + std::to_string(kMaxWorldSize) +
                            " ranks; its agent was refused";
    NoteProblemLocked(why);
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "rankscope coordinator: " + why);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (taken_) return SessionWritten();
  std::string agent_id = "rank" + std::to_string(id.rank()) + "-pid" +
                         std::to_string(id.agent_pid()) + "-r" + std::to_string(id.restart_count());
  auto existing = agent_index_.find(agent_id);
  if (existing == agent_index_.end()) {
    RankData rank;
    rank.id = FromProto(id);
    session_.ranks.push_back(std::move(rank));
    agent_index_[agent_id] = session_.ranks.size() - 1;
    OpenSpillLocked();
    if (spill_ != nullptr) {
      if (Status s = spill_->AddRank(session_.ranks.size() - 1, session_.ranks.back().id);
          !s.ok()) {
        std::fprintf(stderr, "rankscope: rank %d's records are held in memory: %s\n", id.rank(),
                     s.message().c_str());
        unspilled_.insert(session_.ranks.size() - 1);
      }
    }
    // An agent that comes after a capture was started or stopped gets that state first.
    if (capture_state_) commands_[agent_id].push_back(*capture_state_);
    next_seq_[agent_id] = 0;
  }
  if (session_.launcher.empty() || session_.launcher == "none") session_.launcher = id.launcher();
  if (!id.job_id().empty()) session_.job_id = id.job_id();
  session_.world_size = std::max(session_.world_size, id.world_size());
  resp->set_agent_id(agent_id);
  resp->set_protocol_version(kProtocolVersion);
  resp->set_hold_point_to_point(config_.hold_point_to_point);
  if (config_.raw_compute_records > 0) {
    resp->set_raw_compute_records(std::max<uint64_t>(
        1, config_.raw_compute_records / static_cast<uint64_t>(std::max(1, id.world_size()))));
  }
  cv_.notify_all();
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::SyncClock(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::ClockResponse, v1::ClockRequest>* stream) {
  if (grpc::Status s = Authenticate(ctx, "SyncClock"); !s.ok()) return s;
  v1::ClockRequest req;
  while (stream->Read(&req)) {
    v1::ClockResponse resp;
    resp.set_t2(MonotonicNow());
    resp.set_t3(MonotonicNow());
    if (!stream->Write(resp)) break;
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::Upload(grpc::ServerContext* ctx,
                                        grpc::ServerReader<v1::UploadBatch>* reader,
                                        v1::UploadAck* resp) {
  if (grpc::Status s = Authenticate(ctx, "Upload"); !s.ok()) return s;
  v1::UploadBatch batch;
  if (grpc::Status s = ReadRequest(reader, &batch, "Upload"); !s.ok()) return s;
  do {
    if (grpc::Status s = StoreBatch(batch, resp); !s.ok()) return s;
  } while (reader->Read(&batch));
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::StoreBatch(const v1::UploadBatch& req, v1::UploadAck* resp) {
  std::lock_guard<std::mutex> lock(mu_);
  if (taken_) return SessionWritten();
  auto it = agent_index_.find(req.agent_id());
  if (it == agent_index_.end()) {
    NoteProblemLocked("upload from unregistered agent '" + ToText(req.agent_id()) + "'");
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "unknown agent id '" + ToText(req.agent_id()) + "': register first");
  }
  uint64_t& expected = next_seq_[req.agent_id()];
  if (req.batch_seq() < expected) {  // a resend whose ack was lost: already stored
    resp->set_acked_through(expected - 1);
    return grpc::Status::OK;
  }
  RankData& rank = session_.ranks[it->second];
  if (req.batch_seq() > expected) {
    rank.notices.push_back("upload batches " + std::to_string(expected) + ".." +
                           std::to_string(req.batch_seq() - 1) + " never arrived");
  }
  expected = req.batch_seq() + 1;

  records_received_ += RecordCount(req);
  if (live_.size() <= it->second) live_.resize(it->second + 1);
  live_[it->second].rank = rank.id.rank;
  AddBatchToTally(req, MonotonicNow(), &live_[it->second]);
  const size_t ranges_before = rank.ranges.size();
  AddBatchToRank(req, &rank);
  // Steps for the status line, from the ranges just decoded (before the spill takes them).
  if (steps_of_.size() <= it->second) steps_of_.resize(it->second + 1);
  steps_of_[it->second] += static_cast<uint64_t>(
      std::count_if(rank.ranges.begin() + static_cast<std::ptrdiff_t>(ranges_before),
                    rank.ranges.end(), IsStepRange));
  if (spill_ != nullptr && !unspilled_.count(it->second)) {
    if (Status s = spill_->Append(it->second, &rank); !s.ok()) {
      // Kept in memory from here on, in order after what the file holds (not a loss: no
      // problem for the report, only a warning now).
      unspilled_.insert(it->second);
      std::fprintf(stderr, "rankscope: rank %d's records are held in memory from now on: %s\n",
                   rank.id.rank, s.message().c_str());
    }
  }
  resp->set_acked_through(req.batch_seq());
  cv_.notify_all();
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::Control(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::ControlCommand, v1::ControlRequest>* stream) {
  if (grpc::Status s = Authenticate(ctx, "Control"); !s.ok()) return s;
  v1::ControlRequest req;
  if (grpc::Status s = ReadRequest(stream, &req, "Control"); !s.ok()) return s;
  std::unique_lock<std::mutex> lock(mu_);
  if (!agent_index_.count(req.agent_id())) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "unknown agent id '" + ToText(req.agent_id()) + "': register first");
  }
  gone_.erase(agent_index_.at(req.agent_id()));  // back (its stream had broken)
  while (!closed_ && !ctx->IsCancelled()) {
    auto& queue = commands_[req.agent_id()];
    while (!queue.empty()) {
      v1::ControlCommand cmd;
      cmd.set_kind(queue.front());
      queue.erase(queue.begin());
      lock.unlock();
      bool ok = stream->Write(cmd);
      lock.lock();
      if (!ok) return grpc::Status::OK;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(200));
  }
  // An agent ends this stream only after its final batch was acknowledged: a rank still
  // unfinished here lost its agent, and WaitForFinal need not wait for it.
  if (!closed_) {
    const size_t index = agent_index_.at(req.agent_id());
    if (!session_.ranks[index].finished) {
      gone_.insert(index);
      cv_.notify_all();
    }
  }
  return grpc::Status::OK;
}

namespace {

Session SortedByRank(Session s) {
  std::sort(s.ranks.begin(), s.ranks.end(),
            [](const RankData& a, const RankData& b) { return a.id.rank < b.id.rank; });
  return s;
}

}  // namespace

Session CoordinatorService::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return SortedByRank(session_);
}

void CoordinatorService::KeepRecordsIn(std::string path) {
  std::lock_guard<std::mutex> lock(mu_);
  spill_path_ = std::move(path);
}

void CoordinatorService::OpenSpillLocked() {
  if (spill_path_.empty() || spill_ != nullptr || spill_failed_) return;
  Result<std::unique_ptr<RecordSpill>> made = RecordSpill::Create(spill_path_);
  if (!made.ok()) {
    std::fprintf(stderr, "rankscope: %s; the records are held in memory instead\n",
                 made.status().message().c_str());
    spill_failed_ = true;
    return;
  }
  spill_ = std::move(made).value();
  // Agents registered before the path was given (all but the one registering now).
  for (size_t i = 0; i + 1 < session_.ranks.size(); ++i) unspilled_.insert(i);
}

std::unique_ptr<RecordSpill> CoordinatorService::TakeRecordSpill() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!taken_ || spill_ == nullptr) return nullptr;
  if (Status s = spill_->Close(); !s.ok()) {
    std::fprintf(stderr, "rankscope: %s: %s\n", spill_->path().c_str(), s.message().c_str());
  }
  return std::move(spill_);
}

Session CoordinatorService::TakeSession() {
  std::lock_guard<std::mutex> lock(mu_);
  Session taken = std::move(session_);
  session_ = Session{};
  session_.session_id = taken.session_id;
  session_.job_id = taken.job_id;
  session_.launcher = taken.launcher;
  session_.world_size = taken.world_size;
  session_.start = taken.start;
  taken_ = true;
  closed_ = true;
  cv_.notify_all();
  return SortedByRank(std::move(taken));
}

std::string CoordinatorService::JobId() const {
  std::lock_guard<std::mutex> lock(mu_);
  return session_.job_id;
}

int CoordinatorService::RankCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(session_.ranks.size());
}

LiveProgress CoordinatorService::Progress() const {
  std::lock_guard<std::mutex> lock(mu_);
  LiveProgress p;
  p.ranks = static_cast<int>(session_.ranks.size());
  for (const RankData& r : session_.ranks) {
    p.finished += r.finished;
    p.summed += r.compute_kernels_summed;
    p.dropped += r.dropped_records;
  }
  p.records = records_received_;
  for (uint64_t steps : steps_of_) p.steps = std::max(p.steps, steps);
  if (capture_state_) p.capture = *capture_state_ == v1::ControlCommand::START_CAPTURE ? 1 : -1;
  return p;
}

std::vector<LiveTally> CoordinatorService::LiveTallies() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<int, size_t> latest;  // rank number -> index of its latest registration
  for (size_t i = 0; i < live_.size(); ++i) {
    if (live_[i].rank >= 0) latest[live_[i].rank] = i;
  }
  std::vector<LiveTally> out;
  out.reserve(latest.size());
  for (const auto& [rank, index] : latest) out.push_back(live_[index]);
  return out;
}

Session CoordinatorService::Identities() const {
  std::lock_guard<std::mutex> lock(mu_);
  Session s;
  s.job_id = session_.job_id;
  s.launcher = session_.launcher;
  s.world_size = session_.world_size;
  s.ranks.reserve(session_.ranks.size());
  for (const RankData& r : session_.ranks) {
    RankData id;
    id.id = r.id;
    s.ranks.push_back(std::move(id));
  }
  return s;
}

bool CoordinatorService::WaitForFinal(int ranks, DurationNs timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::nanoseconds(timeout), [&] {
    if (static_cast<int>(session_.ranks.size()) < ranks) return false;
    for (size_t i = 0; i < session_.ranks.size(); ++i) {
      if (!session_.ranks[i].finished && !gone_.count(i)) return false;
    }
    return true;
  });
}

bool CoordinatorService::WaitForAnyAgent(DurationNs timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::nanoseconds(timeout),
                      [&] { return !session_.ranks.empty(); });
}

int CoordinatorService::WorldSize() const {
  std::lock_guard<std::mutex> lock(mu_);
  return session_.world_size;
}

grpc::Status CoordinatorService::Trigger(grpc::ServerContext* ctx,
                                         grpc::ServerReader<v1::TriggerRequest>* reader,
                                         v1::TriggerResponse* resp) {
  if (grpc::Status s = Authenticate(ctx, "Trigger"); !s.ok()) return s;
  v1::TriggerRequest req;
  if (grpc::Status s = ReadRequest(reader, &req, "Trigger"); !s.ok()) return s;
  if (req.count_only()) {
    std::lock_guard<std::mutex> lock(mu_);
    resp->set_agents(static_cast<int32_t>(agent_index_.size()));
    return grpc::Status::OK;
  }
  if (req.kind() != v1::ControlCommand::START_CAPTURE &&
      req.kind() != v1::ControlCommand::STOP_CAPTURE) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "rankscope coordinator: a trigger starts or stops a capture");
  }
  Broadcast(req.kind());
  std::lock_guard<std::mutex> lock(mu_);
  resp->set_agents(static_cast<int32_t>(agent_index_.size()));
  return grpc::Status::OK;
}

void CoordinatorService::Broadcast(v1::ControlCommand::Kind kind) {
  std::lock_guard<std::mutex> lock(mu_);
  if (kind == v1::ControlCommand::START_CAPTURE || kind == v1::ControlCommand::STOP_CAPTURE) {
    capture_state_ = kind;
  }
  for (const auto& [agent, index] : agent_index_) commands_[agent].push_back(kind);
  cv_.notify_all();
}

int CoordinatorService::CaptureAround(const std::vector<int>& ranks) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<int, std::pair<size_t, const std::string*>> latest;  // rank -> (index, agent)
  for (const auto& [agent, index] : agent_index_) {
    const int rank = session_.ranks[index].id.rank;
    if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) continue;
    auto [it, added] = latest.try_emplace(rank, index, &agent);
    if (!added && it->second.first < index) it->second = {index, &agent};
  }
  for (const auto& [rank, at] : latest) {
    commands_[*at.second].push_back(v1::ControlCommand::CAPTURE_AROUND_NOW);
  }
  cv_.notify_all();
  return static_cast<int>(latest.size());
}

void CoordinatorService::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

std::vector<std::string> CoordinatorService::Problems() const {
  std::lock_guard<std::mutex> lock(mu_);
  return problems_;
}

void CoordinatorService::NoteRefusedLocked(const grpc::ServerContext* ctx, std::string why) {
  if (refused_.empty()) first_refused_peer_ = ctx->peer();
  // Bounded: a flood with a new session id each time must not grow memory.
  if (refused_.size() >= 8 && refused_.count(why) == 0) why = "other";
  ++refused_[why];
}

std::vector<std::string> CoordinatorService::RefusedNotes() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (refused_.empty()) return {};
  int total = 0;
  std::string reasons;
  for (const auto& [why, n] : refused_) {
    total += n;
    reasons += (reasons.empty() ? "" : ", ") + why + ": " + std::to_string(n);
  }
  return {"refused " + std::to_string(total) + " RPC" + (total == 1 ? "" : "s") +
          " from outside the session (" + reasons + "; the first from " + first_refused_peer_ +
          "); the session's data does not depend on them"};
}

CoordinatorServer::CoordinatorServer(CoordinatorConfig config)
    : config_(config), service_(std::move(config)) {}

CoordinatorServer::~CoordinatorServer() { Shutdown(); }

Status CoordinatorServer::Start() {
  grpc::ServerBuilder builder;
  std::string listen = config_.bind_address + ":" + std::to_string(config_.port);
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(&service_);
  // Agents send at most kUploadChunkBytes a batch (proto/upload_chunk.h).
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxUploadMessageBytes));
  // gRPC sets SO_REUSEPORT by default: with port 0 the kernel may then hand out a port that
  // another gRPC server (another rankscope session) already holds, and connections get split
  // between the two (seen: an agent refused for a "wrong token" by a neighbour's coordinator).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) {
    server_.reset();
    return Status::Error("coordinator: cannot listen on " + listen +
                         " (address not on this host, or port in use?)");
  }
  return Status::Ok();
}

std::string CoordinatorServer::address() const {
  std::string host = config_.bind_address;
  if (host == "0.0.0.0" || host == "::" || host == "[::]") host = "127.0.0.1";
  return host + ":" + std::to_string(port_);
}

void CoordinatorServer::Shutdown() {
  if (!server_) return;
  service_.Close();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_->Wait();
  server_.reset();
}

Result<std::string> NewSessionToken() {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  unsigned char bytes[24];
  if (!urandom.read(reinterpret_cast<char*>(bytes), sizeof(bytes))) {
    return Result<std::string>::Error("cannot read /dev/urandom for a session token");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token.push_back(kHex[b >> 4]);
    token.push_back(kHex[b & 15]);
  }
  return token;
}

}  // namespace rankscope
