#include "launchers/capture_cmd.h"

#include <dirent.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include "core/format.h"
#include "proto/protocol.h"
#include "proto/rpc_calls.h"
#include "rankscope/v1/rankscope.grpc.pb.h"

namespace rankscope {
namespace {

constexpr char kSuffix[] = ".endpoint";

struct Endpoint {
  std::string session;
  std::string address;
  std::string token;
};

Result<Endpoint> ReadEndpoint(const std::string& session) {
  const std::string dir = EndpointDir();
  std::string name = session;
  if (name.empty()) {
    std::vector<std::string> found;
    if (DIR* d = opendir(dir.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string n = e->d_name;
        if (n.size() > sizeof(kSuffix) - 1 &&
            n.compare(n.size() - (sizeof(kSuffix) - 1), std::string::npos, kSuffix) == 0) {
          found.push_back(n.substr(0, n.size() - (sizeof(kSuffix) - 1)));
        }
      }
      closedir(d);
    }
    if (found.empty()) {
      return Result<Endpoint>::Error("no running rankscope session of yours (nothing in " + dir +
                                     "); start one with `rankscope run --dormant -- ...`");
    }
    if (found.size() > 1) {
      std::string list;
      for (const std::string& f : found) list += " " + f;
      return Result<Endpoint>::Error("several running sessions, name one:" + list);
    }
    name = found.front();
  }
  std::ifstream in(dir + "/" + name + kSuffix);
  Endpoint e;
  e.session = name;
  if (!in || !std::getline(in, e.address) || !std::getline(in, e.token) || e.address.empty() ||
      e.token.empty()) {
    return Result<Endpoint>::Error("no running session " + name + " (no readable " + dir + "/" +
                                   name + kSuffix + ")");
  }
  return e;
}

Result<int> Trigger(const Endpoint& e, TriggerKind kind) {
  Result<int> agents = TriggerCapture(e.address, e.token, kind);
  if (!agents.ok())
    return Result<int>::Error("session " + e.session + ": " + agents.status().message());
  return agents;
}

// Polls the coordinator until `want` agents have registered; an error after `wait_s` seconds.
Status WaitForAgents(const Endpoint& e, int want, double wait_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  for (;;) {
    Result<int> have = Trigger(e, TriggerKind::kCount);
    if (!have.ok()) return have.status();
    if (have.value() >= want) return Status::Ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Error("session " + e.session + ": " + std::to_string(have.value()) + " of " +
                           std::to_string(want) + " agents registered after " +
                           FormatDouble("%.0f", wait_s) + " s; nothing started");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

Result<int> TriggerCapture(const std::string& address, const std::string& token, TriggerKind kind) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = v1::Coordinator::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.AddMetadata(kTokenMetadataKey, token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::TriggerRequest req;
  // A count carries no kind, so a coordinator that predates count_only refuses it rather than
  // starting a capture.
  req.set_kind(kind == TriggerKind::kStop    ? v1::ControlCommand::STOP_CAPTURE
               : kind == TriggerKind::kStart ? v1::ControlCommand::START_CAPTURE
                                             : v1::ControlCommand::KIND_UNSPECIFIED);
  req.set_count_only(kind == TriggerKind::kCount);
  v1::TriggerResponse resp;
  grpc::Status s = CallWithOneRequest(
      [&](grpc::ClientContext* c, v1::TriggerResponse* r) { return stub->Trigger(c, r); }, &ctx,
      req, &resp);
  if (!s.ok()) return Result<int>::Error("coordinator " + address + ": " + s.error_message());
  return resp.agents();
}

std::string EndpointDir() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] != '\0') return std::string(runtime) + "/rankscope";
  return "/tmp/rankscope-" + std::to_string(getuid());
}

Result<std::string> WriteEndpoint(const std::string& session_id, const std::string& address,
                                  const std::string& token) {
  const std::string dir = EndpointDir();
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Result<std::string>::Error("cannot create " + dir);
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
      (st.st_mode & 077) != 0) {
    return Result<std::string>::Error(dir + " is not a private directory of yours");
  }
  const std::string path = dir + "/" + session_id + kSuffix;
  const std::string temp = path + ".tmp";
  const mode_t old_mask = umask(077);
  {
    std::ofstream out(temp, std::ios::trunc);
    out << address << "\n" << token << "\n";
    if (!out) {
      umask(old_mask);
      return Result<std::string>::Error("cannot write " + temp);
    }
  }
  umask(old_mask);
  if (rename(temp.c_str(), path.c_str()) != 0) {
    return Result<std::string>::Error("cannot write " + path);
  }
  return path;
}

int RunCapture(const CaptureOptions& options) {
  Result<Endpoint> e = ReadEndpoint(options.session);
  if (!e.ok()) {
    std::fprintf(stderr, "rankscope capture: %s\n", e.status().message().c_str());
    return 2;
  }
  if (options.agents > 0 && !options.stop) {
    if (Status s = WaitForAgents(e.value(), options.agents, options.wait_s); !s.ok()) {
      std::fprintf(stderr, "rankscope capture: %s\n", s.message().c_str());
      return 1;
    }
  }
  Result<int> agents = Trigger(e.value(), options.stop ? TriggerKind::kStop : TriggerKind::kStart);
  if (!agents.ok()) {
    std::fprintf(stderr, "rankscope capture: %s\n", agents.status().message().c_str());
    return 1;
  }
  std::fprintf(stderr, "rankscope capture: %s session %s (%d agents)\n",
               options.stop ? "stopped" : "started", e.value().session.c_str(), agents.value());
  if (options.stop || options.for_s <= 0) return 0;
  std::this_thread::sleep_for(std::chrono::duration<double>(options.for_s));
  agents = Trigger(e.value(), TriggerKind::kStop);
  if (!agents.ok()) {
    std::fprintf(stderr, "rankscope capture: %s\n", agents.status().message().c_str());
    return 1;
  }
  std::fprintf(stderr, "rankscope capture: stopped session %s after %.1f s\n",
               e.value().session.c_str(), options.for_s);
  return 0;
}

}  // namespace rankscope
